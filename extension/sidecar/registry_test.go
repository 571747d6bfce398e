//go:build !unit

package sidecar_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Every kind a registered controller watches has its informer started with
// the cache, before any controller starts: the sidecar with every row of its
// table registered (a shard, previews, devsandbox's SpaceRequests) on a real
// API server, run until each controller has started its workers, asked the
// cache for no informer it had not started already. A kind asked for late is
// then reported: the check can fail.
func TestEveryWatchedKindStartsWithTheCache(t *testing.T) {
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the real API server:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "registry"})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	argoMod, err := stack.ArgoCDModuleDir()
	require.NoError(t, err)
	require.NoError(t, kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd"), stack.ToolchainCRDs(root)))

	starts := &controllerStarts{started: map[string]bool{}, working: map[string]bool{}}
	ctrl.SetLogger(funcr.NewJSON(starts.log, funcr.Options{}))
	mgr, err := sidecar.New(ctx, kube.Config, sidecar.Options{ArgoNamespace: stack.SuiteArgoNamespace,
		MetricsAddr: "0", ProbeAddr: "0", QPS: 200, Burst: 400, Concurrency: 2, SyncPeriod: time.Hour,
		ArgoCDInstance: "a", ServeUnlabelledNamespaces: true, ServiceAccount: "argocd/gitops-service",
		Preview: sidecar.PreviewOptions{RepoServerAddr: "127.0.0.1:1", PerTenant: 1, Total: 1}})
	require.NoError(t, err)
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { stop(); <-done })

	// Every controller starts at once, once the caches are synced; each logs
	// "Starting workers" after its watches' informers synced.
	require.Eventually(t, starts.allWorking, time.Minute, 200*time.Millisecond, "controllers did not start")
	assert.Greater(t, starts.count(), 10, "the controllers of every row")
	assert.Empty(t, sidecar.LateKinds(mgr), "kinds watched or read whose informers started after the cache: add them to their registration's kinds")

	_, err = mgr.GetCache().GetInformer(ctx, &corev1.LimitRange{})
	require.NoError(t, err)
	assert.Contains(t, sidecar.LateKinds(mgr), "/v1, Kind=LimitRange", "a kind no row names is reported")
}

// controllerStarts follows controller-runtime's log of controllers starting.
type controllerStarts struct {
	mu               sync.Mutex
	started, working map[string]bool
	stableSince      time.Time
}

func (s *controllerStarts) log(line string) {
	var entry struct {
		Msg        string `json:"msg"`
		Controller string `json:"controller"`
	}
	if json.Unmarshal([]byte(line), &entry) != nil || entry.Controller == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch entry.Msg {
	case "Starting Controller":
		s.started[entry.Controller] = true
	case "Starting workers":
		s.working[entry.Controller] = true
	default:
		return
	}
	s.stableSince = time.Now()
}

// allWorking: every controller that started has its workers running, and
// none started for a second.
func (s *controllerStarts) allWorking() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.started) > 0 && len(s.working) == len(s.started) && time.Since(s.stableSince) > time.Second
}

func (s *controllerStarts) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.working)
}
