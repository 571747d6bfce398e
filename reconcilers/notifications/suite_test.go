//go:build !unit

package notifications_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/notifications"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	// k8s talks to the real API server directly.
	k8s    client.Client
	kube   *stack.Kube
	scheme *runtime.Scheme
)

// TestMain starts a real API server with our CRDs and no sidecar: each test
// runs the notification controllers in managers of its own (so one can stop
// and another start, as a restart does) and plays the PromotionRun
// reconciler's part by writing the runs' status itself.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := stack.KubeBinaries(); err != nil {
		if stack.Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "SKIP: reconciler tests need the real API server:", err)
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "notifications suite:", err); return 1 }
	var err error
	kube, err = stack.StartKube(ctx, stack.KubeOptions{Name: "notifications"})
	if err != nil {
		return fail(err)
	}
	defer kube.Stop()
	root, err := stack.RepoRoot()
	if err != nil {
		return fail(err)
	}
	argoMod, err := stack.ArgoCDModuleDir()
	if err != nil {
		return fail(err)
	}
	// Argo CD's CRDs for the whole sidecar (TestWithTheWholeSidecar...).
	if err := kube.InstallCRDsWithoutAdmissionChecks(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd"), stack.ToolchainCRDs(root)); err != nil {
		return fail(err)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	scheme = sidecar.NewScheme()
	if k8s, err = client.New(kube.Config, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	code := m.Run()
	if code != 0 {
		kube.WriteLogs(os.Stderr)
	}
	return code
}

// sidecar is one run of the notification controllers, as one sidecar
// process runs them, for the platform configuration in argoNS.
type sidecarRun struct {
	stop    context.CancelFunc
	stopped chan struct{}
}

// startSidecar starts the two controllers in a manager of their own.
func startSidecar(t *testing.T, argoNS string) *sidecarRun {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(kube.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	platform := &notifications.Platform{APIReader: mgr.GetAPIReader(), ArgoNamespace: argoNS}
	ctx := context.Background()
	if err := (&notifications.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Platform: platform}).SetupWithManager(ctx, mgr, 2); err != nil {
		t.Fatal(err)
	}
	rec := mgr.GetEventRecorderFor("gitops-service")
	if err := (&notifications.SubscriptionReconciler{Client: mgr.GetClient(), Recorder: rec, Platform: platform}).SetupWithManager(ctx, mgr, 2); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	s := &sidecarRun{stop: stop, stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the controllers and waits until they have.
func (s *sidecarRun) Stop() {
	s.stop()
	<-s.stopped
}
