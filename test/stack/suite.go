package stack

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
)

// SuiteArgoNamespace is the Argo CD namespace of a reconciler suite.
const SuiteArgoNamespace = "argocd"

// ToolchainCRDs is the directory of the toolchain's SpaceRequest CRD, which
// tests install so that the devsandbox provisioner is enabled.
func ToolchainCRDs(root string) string {
	return filepath.Join(root, "test", "stack", "testdata", "toolchain")
}

// SuiteAdmissionChecks, when a TestMain sets it before RunSuite, installs our
// CRDs as shipped, with the CEL rules that repeat a reconciler's refusal at
// admission (test/isolation). Without it a suite tests the reconcilers' own
// checks: the CRDs are installed without those rules (see
// InstallCRDsWithoutAdmissionChecks).
var SuiteAdmissionChecks bool

// Suite is what a reconciler test package runs against: a real kube-apiserver
// (no kube-controller-manager, so no garbage collector: the tests see exactly
// what the reconcilers delete) with Argo CD's CRDs and ours, the Argo CD
// namespace, and the sidecar's manager running in this process. No Argo CD
// controller runs: tests play its part where they need to.
type Suite struct {
	Kube *Kube
	// Client talks to the API server directly (no cache).
	Client client.Client
	// Ctx lasts until the tests are done.
	Ctx context.Context

	cleanups []func(failed bool)
}

// Cleanup registers f to run after the tests (last registered first); failed
// says whether they failed, e.g. to print more logs.
func (s *Suite) Cleanup(f func(failed bool)) { s.cleanups = append(s.cleanups, f) }

// clusterRanges are the sidecar's default --probe-cluster-cidrs.
var clusterRanges = func() []netip.Prefix {
	r, err := egress.ParsePrefixes(egress.DefaultClusterRanges)
	if err != nil {
		panic(err)
	}
	return r
}()

// RunSuite starts a Suite named name, calls setup with it, runs the tests and
// stops everything; it returns TestMain's exit code. Without the test stack the
// tests are skipped, unless the stack is required (make test). The sidecar logs
// at debug level with TEST_VERBOSE_SIDECAR=1.
func RunSuite(m *testing.M, name string, setup func(*Suite) error, options ...func(*sidecar.Options)) int {
	if _, err := KubeBinaries(); err != nil {
		if Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "SKIP: reconciler tests need the real API server:", err)
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, name+" suite:", err); return 1 }
	kube, err := StartKube(ctx, KubeOptions{Name: name})
	if err != nil {
		return fail(err)
	}
	defer kube.Stop()
	code := 1
	defer func() {
		if code != 0 {
			kube.WriteLogs(os.Stderr)
		}
	}()
	root, err := RepoRoot()
	if err != nil {
		return fail(err)
	}
	argoMod, err := ArgoCDModuleDir()
	if err != nil {
		return fail(err)
	}
	install := kube.InstallCRDsWithoutAdmissionChecks
	if SuiteAdmissionChecks {
		install = kube.InstallCRDs
	}
	if err := install(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd"), ToolchainCRDs(root)); err != nil {
		return fail(err)
	}
	level := zapcore.ErrorLevel
	if os.Getenv("TEST_VERBOSE_SIDECAR") == "1" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(level)))
	opts := sidecar.Options{
		ArgoNamespace: SuiteArgoNamespace, MetricsAddr: "0", ProbeAddr: "0", QPS: 200, Burst: 400, Concurrency: 4, SyncPeriod: time.Hour,
		// The stack's repositories are file:// URLs.
		AllowFileRepositories: true,
		// Its git servers and API servers listen on 127.0.0.1.
		// Only 127.0.0.1: tests serve what must stay unreached on 127.0.0.2.
		Egress: egress.Policy{AllowRanges: []netip.Prefix{netip.MustParsePrefix(StackLoopback)}, ClusterRanges: clusterRanges},
		// The admission policies' parameter as InstallPolicy makes it.
		ServiceAccount: SuiteArgoNamespace + "/gitops-service",
	}
	for _, o := range options {
		o(&opts)
	}
	mgr, err := sidecar.New(ctx, kube.Config, opts)
	if err != nil {
		return fail(err)
	}
	c, err := client.New(kube.Config, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fail(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SuiteArgoNamespace}}); err != nil {
		return fail(err)
	}
	suite := &Suite{Kube: kube, Client: c, Ctx: ctx}
	defer func() {
		for i := len(suite.cleanups) - 1; i >= 0; i-- {
			suite.cleanups[i](code != 0)
		}
	}()
	if err := setup(suite); err != nil {
		return fail(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(mgrCtx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	code = m.Run()
	// The manager stops before the API server does, or it logs errors about it.
	stopMgr()
	<-stopped
	return code
}
