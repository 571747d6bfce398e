//go:build !unit

package deploymenttargetclaim_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

// 100 claims race for 50 targets on an API server of their own, and the
// sidecar is stopped half way and started again (a new process would start
// the same way: empty caches, nothing in memory): exactly 50 are bound, no
// target twice.
func TestConcurrentClaimsAcrossARestart(t *testing.T) {
	ctx := context.Background()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "restart"})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	argoMod, err := stack.ArgoCDModuleDir()
	require.NoError(t, err)
	require.NoError(t, kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd"), stack.ToolchainCRDs(root)))
	c, err := client.New(kube.Config, client.Options{Scheme: sidecar.NewScheme()})
	require.NoError(t, err)
	start := func() (stop func()) {
		mgr, err := sidecar.New(ctx, kube.Config, sidecar.Options{ArgoNamespace: stack.SuiteArgoNamespace,
			MetricsAddr: "0", ProbeAddr: "0", QPS: 200, Burst: 400, Concurrency: 4, SyncPeriod: time.Hour})
		require.NoError(t, err)
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = mgr.Start(mctx) }()
		return func() { cancel(); <-done }
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}
	require.NoError(t, c.Create(ctx, ns))
	cls := &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "cls"},
		Spec: as.DeploymentTargetClassSpec{Provisioner: external, ReclaimPolicy: as.ReclaimPolicyRetain}}
	require.NoError(t, c.Create(ctx, cls))
	parallel(50, func(i int) {
		assert.NoError(t, c.Create(ctx, &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprintf("dt-%02d", i)},
			Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: "cls", KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: "x", APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "s"}}}))
	})
	newClaim := func(i int) {
		assert.NoError(t, c.Create(ctx, &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprintf("claim-%03d", i)},
			Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: "cls"}}))
	}
	stop := start()
	parallel(60, newClaim)
	time.Sleep(300 * time.Millisecond) // stopped in the middle of binding
	stop()
	parallel(40, func(i int) { newClaim(60 + i) })
	stop = start()
	t.Cleanup(stop)
	checkOneToOneWith(t, c, "tenant", 50, 50)
}
