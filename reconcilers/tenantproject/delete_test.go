//go:build !unit

package tenantproject_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Issue 23: the tenant reconciler deletes an unused project through Delete,
// which takes the project's lock: an Ensure that landed after the project was
// listed (it changed the project, or its caller's Application may not exist
// yet) keeps the project.
func TestDeleteKeepsAProjectEnsuredSinceItWasListed(t *testing.T) {
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the real API server:", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "tenantproject-delete"})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	argoMod, err := stack.ArgoCDModuleDir()
	require.NoError(t, err)
	require.NoError(t, kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd")))
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1.AddToScheme(scheme))
	require.NoError(t, argov1alpha1.AddToScheme(scheme))
	c, err := client.New(kube.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stack.SuiteArgoNamespace}}))
	const grace = 2 * time.Second
	mgr, err := ctrl.NewManager(kube.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	require.NoError(t, err)
	require.NoError(t, tenantproject.IndexApplications(ctx, mgr.GetFieldIndexer()))
	go func() { _ = mgr.Start(ctx) }()
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx))
	projects := &tenantproject.Projects{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: stack.SuiteArgoNamespace, Grace: grace}
	ns := stack.Tenant(t, c)
	key := types.NamespacedName{Namespace: stack.SuiteArgoNamespace, Name: argocd.ProjectName(string(ns.UID))}
	listed := func() *argov1alpha1.AppProject {
		p := &argov1alpha1.AppProject{}
		require.NoError(t, c.Get(ctx, key, p))
		return p
	}

	_, err = projects.Ensure(ctx, ns.Name, "https://git.example.test/a.git")
	require.NoError(t, err)
	left, err := projects.Delete(ctx, listed())
	require.NoError(t, err)
	assert.Positive(t, left, "a caller's Ensure within the grace: not yet")
	assert.NoError(t, c.Get(ctx, key, &argov1alpha1.AppProject{}), "kept while its caller may be writing its Application")

	time.Sleep(grace)
	before := listed()
	// An Ensure lands between the listing and the delete: it changed the project.
	_, err = projects.Ensure(ctx, ns.Name, "https://git.example.test/b.git")
	require.NoError(t, err)
	time.Sleep(grace)
	left, err = projects.Delete(ctx, before)
	require.NoError(t, err)
	assert.Zero(t, left)
	assert.Contains(t, listed().Spec.SourceRepos, "https://git.example.test/b.git", "a project changed since it was listed is kept")

	// Listed again, unchanged, with no Ensure within the grace: it goes.
	left, err = projects.Delete(ctx, listed())
	require.NoError(t, err)
	assert.Zero(t, left)
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, key, &argov1alpha1.AppProject{})), "the unused project is deleted")
}
