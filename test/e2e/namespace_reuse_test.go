//go:build !unit

package e2e

import (
	"context"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// heldBy stands for a slow finalizer of another controller (Argo CD's own
// resources finalizer may take minutes): the test removes it at its end.
const heldBy = "test.gitops-service/held"

// TestReusedNamespaceGetsNothingOfTheOldTenant (issue 33, item 5): a tenant
// namespace is deleted while its Argo CD Application still exists (held by a
// finalizer), a namespace of the same name is created,
// and for 60 s nothing the old tenant deployed appears in it, although Argo
// CD is asked to sync the old Applications: the old tenant's AppProject
// allows no destination from the moment its namespace is deleted, and the new
// namespace's tenant has a project of its own (its UID) that lists nothing of
// the old one, nor do any repository or cluster Secrets serve it.
func TestReusedNamespaceGetsNothingOfTheOldTenant(t *testing.T) {
	ctx := context.Background()
	name := tenantNamespace(t)
	old := &corev1.Namespace{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Name: name}, old))

	// The old tenant: an automated GitOpsDeployment without the resources
	// finalizer, whose Application outlives it (a binding's ApplicationSet and
	// a GitOpsDeployment with the finalizer hold their namespace in
	// Terminating until their Applications are gone: no namespace of the name
	// can be created meanwhile).
	repo, sha := gitRepo(t, map[string]string{"app/cm.yaml": configMap("old-tenant", "old")})
	gd := deploy(t, name, "web", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "synced", syncedHealthyAt(sha))
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: name, Name: "old-tenant"}, &corev1.ConfigMap{}))

	// Its Application is held past the namespace.
	oldProject := argocd.ProjectName(string(old.UID))
	app := &argov1alpha1.Application{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: argo.Namespace, Name: argocd.ApplicationName(string(gd.UID))}, app))
	require.Equal(t, oldProject, app.Spec.Project)
	patch := client.MergeFrom(app.DeepCopy())
	controllerutil.AddFinalizer(app, heldBy)
	require.NoError(t, k8s.Patch(ctx, app, patch))
	t.Cleanup(func() { release(t, app) })
	apps := argov1alpha1.ApplicationList{Items: []argov1alpha1.Application{*app}}

	// The namespace goes (its CRs first, as the namespace controller does);
	// the Argo CD objects stay.
	require.NoError(t, k8s.Delete(ctx, old))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: name}, &corev1.Namespace{}))
	}, deployWait, poll, "namespace %s is not deleted", name)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(app), app), "the held Application went")
	require.Equal(t, name, app.Spec.Destination.Namespace)

	// A namespace of the same name: another tenant.
	reused := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, k8s.Create(ctx, reused))
	require.NotEqual(t, old.UID, reused.UID)
	newProject := argocd.ProjectName(string(reused.UID))

	// Argo CD is asked to sync each old Application (as the Sync button does);
	// self-heal would try too.
	for i := range apps.Items {
		app := &apps.Items[i]
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(app), app))
		patch := client.MergeFrom(app.DeepCopy())
		app.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"}, InitiatedBy: argov1alpha1.OperationInitiator{Username: "e2e"}}
		require.NoError(t, k8s.Patch(ctx, app, patch))
	}

	end := time.Now().Add(60 * time.Second)
	for time.Now().Before(end) {
		// Nothing deployed into the new namespace.
		var cms corev1.ConfigMapList
		require.NoError(t, k8s.List(ctx, &cms, client.InNamespace(name)))
		for _, cm := range cms.Items {
			require.Equal(t, "kube-root-ca.crt", cm.Name, "ConfigMap %s of the old tenant deployed into the new namespace", cm.Name)
		}
		var deps appsv1.DeploymentList
		require.NoError(t, k8s.List(ctx, &deps, client.InNamespace(name)))
		require.Empty(t, deps.Items, "a Deployment of the old tenant deployed into the new namespace")
		// No Application whose destination is the name is in a project that allows it.
		var all argov1alpha1.ApplicationList
		require.NoError(t, k8s.List(ctx, &all, client.InNamespace(argo.Namespace)))
		for _, a := range all.Items {
			if a.Spec.Destination.Namespace != name {
				continue
			}
			require.NotEqual(t, newProject, a.Spec.Project, "Application %s of the old tenant is in the new tenant's project", a.Name)
			p := &argov1alpha1.AppProject{}
			err := k8s.Get(ctx, types.NamespacedName{Namespace: argo.Namespace, Name: a.Spec.Project}, p)
			if apierrors.IsNotFound(err) {
				continue
			}
			require.NoError(t, err)
			require.Empty(t, p.Spec.Destinations, "project %s of Application %s allows %v", p.Name, a.Name, p.Spec.Destinations)
			require.Empty(t, p.Spec.SourceRepos, "project %s of Application %s allows %v", p.Name, a.Name, p.Spec.SourceRepos)
			require.NotEmpty(t, p.Annotations[tenantproject.AnnotationFenced], "project %s is not fenced", p.Name)
		}
		// No repository or cluster Secret serves the new tenant's project.
		var secrets corev1.SecretList
		require.NoError(t, k8s.List(ctx, &secrets, client.InNamespace(argo.Namespace), client.HasLabels{"argocd.argoproj.io/secret-type"}))
		for _, s := range secrets.Items {
			require.NotEqual(t, newProject, string(s.Data["project"]), "Secret %s serves the new tenant", s.Name)
		}
		time.Sleep(time.Second)
	}
	// Argo CD did try, and was refused: no old Application synced since.
	for i := range apps.Items {
		app := &apps.Items[i]
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(app), app))
		if st := app.Status.OperationState; st != nil && st.Operation.InitiatedBy.Username == "e2e" {
			assert.NotEqual(t, "Succeeded", string(st.Phase), "Application %s synced: %s", app.Name, st.Message)
		}
	}
}

// release removes the test's finalizer.
func release(t *testing.T, o client.Object) {
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		return
	}
	patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(o, heldBy)
	assert.NoError(t, client.IgnoreNotFound(k8s.Patch(ctx, o, patch)))
}
