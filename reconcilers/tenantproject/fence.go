package tenantproject

import (
	"context"
	"errors"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Issue 33, item 5: a tenant is its namespace's UID. The project of a
// namespace that is being deleted or gone (or re-created, so of another UID)
// must not let Argo CD sync the old tenant's Applications, which outlive the
// namespace while their finalizers run: their destination is the namespace's
// name, which a new namespace of that name would be.

// AnnotationFenced marks a tenant project whose namespace is being deleted or
// gone (the value: since when): it allows no destination, no repository and
// no role, and Ensure never writes it again. It is deleted as any unused
// project, once the old tenant's Applications are gone.
const AnnotationFenced = "managed-gitops.redhat.com/tenant-gone"

// ErrTenantGone is returned by Ensure for a namespace that is being deleted,
// or whose project is fenced: nothing is deployed for it any more.
var ErrTenantGone = errors.New("tenant namespace is being deleted")

// Stale says whether project, one of ours for a tenant namespace of its
// name, belongs to a tenant that is no more: live is the namespace of that
// name now (nil: gone), being deleted, or another namespace (another UID).
func Stale(project *argov1alpha1.AppProject, live *corev1.Namespace) bool {
	uid := project.Labels[ownership.LabelOwnerUID]
	return live == nil || !live.DeletionTimestamp.IsZero() || uid == "" || string(live.UID) != uid
}

// Fenced says whether the project is fenced already.
func Fenced(project *argov1alpha1.AppProject) bool {
	return project.Annotations[AnnotationFenced] != ""
}

// Fence empties a stale project's destinations, repositories and roles, under
// the project's lock and conditional on the version the caller read (a
// conflict is returned: the caller reads again). Argo CD then refuses to sync
// any Application of the project ("destination is not permitted").
func (p *Projects) Fence(ctx context.Context, project *argov1alpha1.AppProject) error {
	if Fenced(project) && len(project.Spec.Destinations) == 0 && len(project.Spec.SourceRepos) == 0 {
		return nil
	}
	w := p.writer(project.Name)
	w.Lock()
	defer w.Unlock()
	fenced := project.DeepCopy()
	patch := client.MergeFromWithOptions(project, client.MergeFromWithOptimisticLock{})
	if fenced.Annotations == nil {
		fenced.Annotations = map[string]string{}
	}
	if !Fenced(fenced) {
		fenced.Annotations[AnnotationFenced] = time.Now().UTC().Format(time.RFC3339)
	}
	fenced.Spec.Destinations = nil
	fenced.Spec.SourceRepos = nil
	fenced.Spec.Roles = nil
	fenced.Spec.SourceNamespaces = nil
	switch err := p.Client.Patch(ctx, fenced, patch); {
	case err == nil:
		w.wrote(fenced)
	case apierrors.IsNotFound(err):
		w.forget()
	default:
		return fmt.Errorf("fencing AppProject %s of a deleted tenant: %w", project.Name, err)
	}
	w.pending = pending{}
	return nil
}
