package managedenvironment_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = "argocd"

var (
	// k8s is a client of the real API server the sidecar runs against (the
	// "local" cluster, where the CRs and Argo CD's objects live).
	k8s      client.Client
	suiteCtx context.Context

	// The "remote" cluster environments point at: a second real API server,
	// with a kube-controller-manager so ServiceAccount tokens get issued. It is
	// started once, by the first test that needs it.
	remoteOnce sync.Once
	remoteKube *stack.Kube
	remoteK8s  client.Client
	remoteErr  error

	// Static tokens of the remote cluster besides its admin: one that
	// authenticates but may do nothing.
	powerlessToken = "powerless-" + rand.String(16)
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "SKIP: reconciler tests need the real API server:", err)
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	suiteCtx = ctx
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "managedenvironment"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer kube.Stop()
	defer func() {
		if remoteKube != nil {
			remoteKube.Stop()
		}
	}()
	code := 1
	defer func() {
		if code != 0 {
			kube.WriteLogs(os.Stderr)
			remoteKube.WriteLogs(os.Stderr)
		}
	}()
	root, _ := stack.RepoRoot()
	argoMod, err := stack.ArgoCDModuleDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	mgr, err := sidecar.New(ctx, kube.Config, sidecar.Options{
		ArgoNamespace: argoNS, MetricsAddr: "0", ProbeAddr: "0", QPS: 200, Burst: 400, Concurrency: 4, SyncPeriod: time.Hour,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8s, err = client.New(kube.Config, client.Options{Scheme: mgr.GetScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	code = m.Run()
	return code
}

// remote returns the remote cluster, starting it on first use.
func remote(t *testing.T) *stack.Kube {
	t.Helper()
	remoteOnce.Do(func() {
		start := time.Now()
		remoteKube, remoteErr = stack.StartKube(suiteCtx, stack.KubeOptions{
			Name:              "remote",
			ControllerManager: true,
			ExtraTokens:       map[string]stack.TokenUser{powerlessToken: {Name: "powerless"}},
		})
		if remoteErr == nil {
			remoteK8s, remoteErr = client.New(remoteKube.Config, client.Options{Scheme: sidecar.NewScheme()})
		}
		fmt.Fprintf(os.Stderr, "remote cluster up in %s\n", time.Since(start).Round(100*time.Millisecond))
	})
	require.NoError(t, remoteErr, "starting the remote cluster")
	return remoteKube
}

func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE_SIDECAR") == "1" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}
