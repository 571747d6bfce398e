//go:build !unit

package isolation

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

// TestReusedNamespaceNameGetsNothingOfTheOldTenant (issue 33, item 5): a
// tenant's namespace is deleted while its Application is held by a slow
// finalizer; someone creates a namespace of the same name. From the deletion
// on, the old tenant's AppProject allows nothing (Argo CD syncs none of its
// Applications), and the new namespace's tenant gets its own project (its
// UID) that lists none of the old tenant's repositories, whose Applications
// are never in it. This suite runs no namespace controller: the test plays it.
func TestReusedNamespaceNameGetsNothingOfTheOldTenant(t *testing.T) {
	ctx := context.Background()
	name := "reuse-" + rand.String(5)
	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, k8s.Create(ctx, old))
	const oldRepo, newRepo = "https://git.example.com/old-tenant/apps.git", "https://git.example.com/new-tenant/apps.git"
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: oldRepo, Path: "web"}, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	require.NoError(t, k8s.Create(ctx, gd))
	oldProject := types.NamespacedName{Namespace: argoNS, Name: argocd.ProjectName(string(old.UID))}
	appKey := types.NamespacedName{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}
	app := &argov1alpha1.Application{}
	require.Eventually(t, func() bool { return k8s.Get(ctx, appKey, app) == nil }, wait, tick, "the old tenant's Application")
	patch := client.MergeFrom(app.DeepCopy())
	controllerutil.AddFinalizer(app, "test.gitops-service/slow")
	require.NoError(t, k8s.Patch(ctx, app, patch))
	t.Cleanup(func() {
		if k8s.Get(ctx, appKey, app) == nil {
			patch := client.MergeFrom(app.DeepCopy())
			controllerutil.RemoveFinalizer(app, "test.gitops-service/slow")
			assert.NoError(t, client.IgnoreNotFound(k8s.Patch(ctx, app, patch)))
		}
	})

	fenced := func() bool {
		p := &argov1alpha1.AppProject{}
		return k8s.Get(ctx, oldProject, p) == nil && p.Annotations[tenantproject.AnnotationFenced] != "" &&
			len(p.Spec.Destinations) == 0 && len(p.Spec.SourceRepos) == 0 && len(p.Spec.Roles) == 0
	}
	require.NoError(t, k8s.Delete(ctx, old))
	require.Eventually(t, fenced, wait, tick, "the deleting tenant's project is not fenced")
	// The namespace controller's part: the CRs, then the namespace.
	require.NoError(t, k8s.Delete(ctx, gd))
	require.Eventually(t, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(gd), gd)) }, wait, tick)
	ns := &corev1.Namespace{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Name: name}, ns))
	ns.Spec.Finalizers = nil
	require.NoError(t, k8s.SubResource("finalize").Update(ctx, ns))
	require.Eventually(t, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: name}, ns)) }, wait, tick)

	// The new namespace of that name, and a deployment of its own.
	reused := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, k8s.Create(ctx, reused))
	gd2 := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: newRepo, Path: "web"}, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	require.NoError(t, k8s.Create(ctx, gd2))
	newProject := types.NamespacedName{Namespace: argoNS, Name: argocd.ProjectName(string(reused.UID))}
	np := &argov1alpha1.AppProject{}
	require.Eventually(t, func() bool { return k8s.Get(ctx, newProject, np) == nil && len(np.Spec.SourceRepos) > 0 }, wait, tick)

	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(tick) {
		require.True(t, fenced(), "the old tenant's project was opened again")
		require.NoError(t, k8s.Get(ctx, newProject, np))
		assert.NotContains(t, np.Spec.SourceRepos, oldRepo, "the new tenant's project allows the old tenant's repository")
		var apps argov1alpha1.ApplicationList
		require.NoError(t, k8s.List(ctx, &apps, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: name}))
		for _, a := range apps.Items {
			if a.Spec.Source != nil && a.Spec.Source.RepoURL == oldRepo {
				require.Equal(t, oldProject.Name, a.Spec.Project, "the old tenant's Application %s moved to project %s", a.Name, a.Spec.Project)
			}
		}
		var secrets corev1.SecretList
		require.NoError(t, k8s.List(ctx, &secrets, client.InNamespace(argoNS), client.HasLabels{"argocd.argoproj.io/secret-type"}))
		for _, s := range secrets.Items {
			if string(s.Data["project"]) == newProject.Name {
				assert.NotContains(t, string(s.Data["url"]), "old-tenant", "Secret %s of the old tenant serves the new one", s.Name)
			}
		}
	}
}
