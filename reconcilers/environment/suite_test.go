package environment_test

import (
	"context"
	"fmt"
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
	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = "argocd"

var (
	// k8s is a client of the real API server the sidecar runs against.
	k8s client.Client
	// kube is that API server; Environments that must really connect point
	// at it (it is also the "remote" cluster).
	kube *stack.Kube
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
	var err error
	// No kube-controller-manager: no garbage collector, so the tests see what
	// the reconciler itself deletes.
	kube, err = stack.StartKube(ctx, stack.KubeOptions{Name: "environment"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer kube.Stop()
	code := 1
	defer func() {
		if code != 0 {
			kube.WriteLogs(os.Stderr)
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

func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE_SIDECAR") == "1" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}
