//go:build !unit

package tenantproject_test

import (
	"context"
	"path/filepath"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
	"github.com/gitops-service/gitops-service/test/stack"
)

// startAPIServer starts a real API server with our CRDs and Argo CD's and
// the Argo CD namespace, and a manager whose cache (which lags the writes)
// and Applications index are the reconcilers' view. It returns a direct
// client and the manager; both stop with the test.
func startAPIServer(t *testing.T, name string) (context.Context, client.Client, ctrl.Manager) {
	t.Helper()
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the real API server:", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: name})
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
	mgr, err := ctrl.NewManager(kube.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	require.NoError(t, err)
	require.NoError(t, tenantproject.IndexApplications(ctx, mgr.GetFieldIndexer()))
	go func() { _ = mgr.Start(ctx) }()
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx))
	return ctx, c, mgr
}
