//go:build !unit

package tenant_test

import (
	"context"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// slowFinalizer holds the old tenant's Application as a slow finalizer of
// another controller would (Argo CD's resources finalizer, whose deletion
// may take minutes).
const slowFinalizer = "test.gitops-service/slow"

// TestDeletedNamespaceFencesItsProject (issue 33, item 5): the moment a tenant
// namespace is being deleted its AppProject allows no destination, repository
// or role (Argo CD syncs none of its Applications), and stays so while the old
// Applications outlive the namespace, also after a namespace of the same name
// is created: that tenant gets a project of its own UID, which lists nothing
// of the old one. This suite runs no namespace controller: the namespace stays
// Terminating until the test finalizes it, as a slow deletion would.
func TestDeletedNamespaceFencesItsProject(t *testing.T) {
	ctx := context.Background()
	name := "reuse-" + rand.String(6)
	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, k8s.Create(ctx, old))
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://git.example.com/old/apps.git", Path: "web"},
			Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	require.NoError(t, k8s.Create(ctx, gd))
	oldKey := types.NamespacedName{Namespace: argoNS, Name: argocd.ProjectName(string(old.UID))}
	p := &argov1alpha1.AppProject{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, oldKey, p) == nil && len(p.Spec.Destinations) > 0 && len(p.Spec.SourceRepos) > 0
	}, wait, tick, "the tenant's project")
	require.Equal(t, name, p.Spec.Destinations[0].Namespace)
	app := oldApplication(t, name, string(old.UID))
	// The old Application outlives the namespace for as long as the test says.
	patch := client.MergeFrom(app.DeepCopy())
	controllerutil.AddFinalizer(app, slowFinalizer)
	require.NoError(t, k8s.Patch(ctx, app, patch))
	t.Cleanup(func() { releaseApplication(t, client.ObjectKeyFromObject(app)) })

	// Deleting: fenced at once.
	require.NoError(t, k8s.Delete(ctx, old))
	fenced := func() bool {
		return k8s.Get(ctx, oldKey, p) == nil && len(p.Spec.Destinations) == 0 && len(p.Spec.SourceRepos) == 0 &&
			len(p.Spec.Roles) == 0 && p.Annotations[tenantproject.AnnotationFenced] != ""
	}
	require.Eventually(t, fenced, wait, tick, "the deleting tenant's project still allows %+v", p.Spec)

	// The old tenant's GitOpsDeployment changes while the namespace goes: its
	// reconcile does not open the project again.
	gdPatch := client.MergeFrom(gd.DeepCopy())
	gd.Spec.Source.Path = "web2"
	require.NoError(t, k8s.Patch(ctx, gd, gdPatch))
	assertStaysFenced(t, fenced, 3*time.Second)

	// The namespace controller's part: the contents go, then the namespace.
	require.NoError(t, k8s.Delete(ctx, gd))
	require.Eventually(t, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(gd), gd)) }, wait, tick)
	ns := &corev1.Namespace{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Name: name}, ns))
	ns.Spec.Finalizers = nil
	require.NoError(t, k8s.SubResource("finalize").Update(ctx, ns))
	require.Eventually(t, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: name}, ns)) }, wait, tick)

	// A namespace of the same name, and a deployment in it.
	reused := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, k8s.Create(ctx, reused))
	require.NotEqual(t, old.UID, reused.UID)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(app), app), "the old Application is still there (held)")
	gd2 := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://git.example.com/new/apps.git", Path: "web"},
			Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	require.NoError(t, k8s.Create(ctx, gd2))
	newKey := types.NamespacedName{Namespace: argoNS, Name: argocd.ProjectName(string(reused.UID))}
	np := &argov1alpha1.AppProject{}
	require.Eventually(t, func() bool { return k8s.Get(ctx, newKey, np) == nil && len(np.Spec.SourceRepos) > 0 }, wait, tick, "the new tenant's project")
	assert.Equal(t, []string{"https://git.example.com/new/apps.git"}, np.Spec.SourceRepos, "the new tenant's project allows the old tenant's repository")
	assertStaysFenced(t, fenced, 3*time.Second)
	// The new tenant's Application is in its own project; the old one in the fenced one.
	newApp := oldApplication(t, name, string(reused.UID))
	assert.NotEqual(t, app.Name, newApp.Name)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(app), app))
	assert.Equal(t, oldKey.Name, app.Spec.Project, "the old Application moved to another project")
}

// oldApplication waits for the one Application of the tenant namespace name
// with UID uid (in that tenant's project).
func oldApplication(t *testing.T, name, uid string) *argov1alpha1.Application {
	t.Helper()
	var apps argov1alpha1.ApplicationList
	var got []argov1alpha1.Application
	require.Eventually(t, func() bool {
		if k8s.List(context.Background(), &apps, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: name}) != nil {
			return false
		}
		got = tenantproject.Made(apps.Items, name, uid)
		return len(got) == 1
	}, wait, tick, "the Application of tenant %s (%s)", name, uid)
	return &got[0]
}

func assertStaysFenced(t *testing.T, fenced func() bool, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(tick) {
		require.True(t, fenced(), "the old tenant's project was opened again")
	}
}

func releaseApplication(t *testing.T, key types.NamespacedName) {
	ctx := context.Background()
	app := &argov1alpha1.Application{}
	if err := k8s.Get(ctx, key, app); err != nil {
		return
	}
	patch := client.MergeFrom(app.DeepCopy())
	controllerutil.RemoveFinalizer(app, slowFinalizer)
	assert.NoError(t, client.IgnoreNotFound(k8s.Patch(ctx, app, patch)))
}
