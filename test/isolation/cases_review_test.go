package isolation

import (
	"context"
	"fmt"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Second adversarial review of issue 21: look-alike Applications where
// labels were still trusted. A deployment's Application name is
// gitopsdepl-<its UID>, and the UID is no secret (it is in every label of
// ours): a look-alike of that name, with the deployment's labels in another
// project, taken before ours is made.
func TestReviewLookAlikes(t *testing.T) {
	ctx := context.Background()

	t.Run("SyncRun on a look-alike of its deployment's Application", func(t *testing.T) {
		t.Parallel()
		e := freshTenant(t, "review-syncrun")
		// Refused (no such environment), so the sidecar makes no Application
		// and the name is free for the look-alike.
		gd := deployment(e, "manual", func(gd *v1.GitOpsDeployment) {
			gd.Spec.Type = v1.GitOpsDeploymentSpecTypeManual
			gd.Spec.Destination.Environment = "missing"
		})
		create(t, gd)
		waitFor(t, gd, errorOccurred("", ""))
		name := argocd.ApplicationName(string(gd.UID))
		err := k8s.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: name}, &argov1alpha1.Application{})
		require.True(t, apierrors.IsNotFound(err), "the refused deployment has an Application: %v", err)
		l, a := ownership.Meta(ownership.KindGitOpsDeployment, gd.Namespace, gd.Name, string(gd.UID))
		look := held(t, name, l, a)
		// Argo CD has compared it: a run would start at once.
		now := metav1.Now()
		look.Status = argov1alpha1.ApplicationStatus{ReconciledAt: &now, Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync}}
		require.NoError(t, k8s.Update(ctx, look))

		run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: om(e.NS, "run"), Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: gd.Name}}
		create(t, run)
		waitFor(t, run, errorOccurred("", "is not the one of GitOpsDeployment"))
		assert.Never(t, func() bool {
			got := &argov1alpha1.Application{}
			return k8s.Get(ctx, client.ObjectKeyFromObject(look), got) == nil && got.Operation != nil
		}, 3*time.Second, tick, "a tenant's SyncRun started a sync of a look-alike")
	})
}

// reviewCases: values valid at admission that mean something else to Argo
// CD. Argo CD expands $VAR and ${VAR} in kustomize images (its build
// environment: the tenant's own path and repository URL), so a Snapshot image
// could bring back the '=' or leading '-' that binding.Check refuses.
func reviewCases() []hostileCase {
	var out []hostileCase
	for _, img := range []string{"quay.io/x/web${ARGOCD_APP_SOURCE_PATH}", "$ARGOCD_APP_SOURCE_REPO_URL", "quay.io/x/web:$X"} {
		img := img
		out = append(out, hostileCase{Kind: "SnapshotEnvironmentBinding", Name: fmt.Sprintf("Snapshot image %q expanded by Argo CD", img),
			Setup: func(t *testing.T, e tenantEnv) {
				appStudioTenant(t, e, "shop", nil)
				create(t, &as.Snapshot{ObjectMeta: om(e.NS, "hostile"), Spec: as.SnapshotSpec{Application: "shop",
					Components: []as.SnapshotComponent{{Name: "shop-web", ContainerImage: img}}}})
			},
			Object: func(e tenantEnv) client.Object {
				return &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, "shop-binding"),
					Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "shop", Snapshot: "hostile"}}
			},
			Want: errorOccurred(as.BindingReasonErrorOccurred, "not an image reference")})
	}
	// Control characters the deployment's checks let through: in the
	// scp-like repository form (its regexp's \s misses VT, ESC, C1), C1 and
	// the Unicode separators in a path or revision. They reach git's
	// configuration and command lines, and the terminals of admins who list
	// the tenant's Applications (a terminal escape).
	gd := func(name, msg string, mut func(*v1.GitOpsDeployment)) {
		out = append(out, hostileCase{Kind: "GitOpsDeployment", Name: name, Want: errorOccurred("", msg),
			Object: func(e tenantEnv) client.Object { return deployment(e, "app", mut) }})
	}
	for name, ch := range map[string]string{"ESC": "\x1b]0;pwned\x07", "VT": "\v", "NEL": "\u0085", "CSI": "\u009b2J", "LS": "\u2028"} {
		ch := ch
		gd("scp-like repoURL with "+name, "spec.source.repoURL", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = "git@git.example.com:jane/apps" + ch + ".git" })
		gd("path with "+name, "spec.source.path", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.Path = "apps" + ch })
		gd("targetRevision with "+name, "spec.source.targetRevision", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.TargetRevision = "main" + ch })
	}
	return out
}
