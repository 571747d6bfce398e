//go:build !unit

package kernel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/test/stack"
)

// k8s talks to a real API server; nil without the test stack (make unit),
// when only the pure tests run.
var k8s client.Client

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "kernel"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer kube.Stop()
	root, err := stack.RepoRoot()
	if err == nil {
		err = kube.InstallCRDs(ctx, filepath.Join(root, "manifests", "crd"))
	}
	scheme := runtime.NewScheme()
	if err == nil {
		err = clientgoscheme.AddToScheme(scheme)
	}
	if err == nil {
		err = v1.AddToScheme(scheme)
	}
	if err == nil {
		k8s, err = client.New(kube.Config, client.Options{Scheme: scheme})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Reconciles that start from a cache behind our own status writes: a health
// that went Healthy -> Degraded (written) -> Healthy is written back, though
// the cached object still says Healthy.
func TestStatusFromACacheBehindOurWrites(t *testing.T) {
	if k8s == nil {
		t.Skip("needs the real API server (make test-stack)")
	}
	ctx := context.Background()
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: stack.Tenant(t, k8s).Name, Name: "app"},
		Spec:       v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://example.test/r.git", Path: "p"}, Type: v1.GitOpsDeploymentSpecTypeAutomated},
	}
	require.NoError(t, k8s.Create(ctx, gd))
	written := kernel.NewStatusWrites(k8s)
	pass := func(from *v1.GitOpsDeployment, health v1.HealthStatusCode) {
		t.Helper()
		obj := from.DeepCopy()
		p := kernel.NewStatusPatcher(k8s, obj).Remembering(written)
		obj.Status.Health.Status = health
		var err error
		p.Patch(ctx, obj, &err)
		require.NoError(t, err)
	}
	server := func() *v1.GitOpsDeployment {
		t.Helper()
		got := &v1.GitOpsDeployment{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(gd), got))
		return got
	}

	pass(gd, "Healthy")
	cached := server() // the cache shows this version from here on
	require.Equal(t, v1.HealthStatusCode("Healthy"), cached.Status.Health.Status)
	pass(cached, "Degraded")
	require.Equal(t, v1.HealthStatusCode("Degraded"), server().Status.Health.Status)
	pass(cached, "Healthy")
	assert.Equal(t, v1.HealthStatusCode("Healthy"), server().Status.Health.Status, "the write of Degraded was not undone")

	// Once the cache shows the server's version, it is the base again.
	caughtUp := server()
	pass(caughtUp, "Progressing")
	assert.Equal(t, v1.HealthStatusCode("Progressing"), server().Status.Health.Status)
}

// WithUpdate writes the status as a PUT: only when it changed, locked by the
// version read (a stale pass gets a conflict and writes nothing), and an
// object deleted meanwhile is no error (as with a patch).
func TestStatusWithUpdate(t *testing.T) {
	if k8s == nil {
		t.Skip("needs the real API server (make test-stack)")
	}
	ctx := context.Background()
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: stack.Tenant(t, k8s).Name, Name: "app"},
		Spec:       v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://example.test/r.git", Path: "p"}, Type: v1.GitOpsDeploymentSpecTypeAutomated},
	}
	require.NoError(t, k8s.Create(ctx, gd))
	pass := func(from *v1.GitOpsDeployment, health v1.HealthStatusCode) (*v1.GitOpsDeployment, error) {
		t.Helper()
		obj := from.DeepCopy()
		p := kernel.NewStatusPatcher(k8s, obj).WithUpdate()
		obj.Status.Health.Status = health
		var err error
		p.Patch(ctx, obj, &err)
		return obj, err
	}

	read := gd.DeepCopy()
	healthy, err := pass(read, "Healthy")
	require.NoError(t, err)
	assert.NotEqual(t, read.ResourceVersion, healthy.ResourceVersion, "not written")
	assert.Equal(t, gd.UID, healthy.UID)
	got := &v1.GitOpsDeployment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(gd), got))
	assert.Equal(t, v1.HealthStatusCode("Healthy"), got.Status.Health.Status)

	same, err := pass(healthy, "Healthy")
	require.NoError(t, err)
	assert.Equal(t, healthy.ResourceVersion, same.ResourceVersion, "an unchanged status was written")

	stale, err := pass(read, "Degraded")
	assert.True(t, apierrors.IsConflict(err), "a pass from a stale read wrote: %v", err)
	assert.Equal(t, gd.UID, stale.UID, "the UID was not put back after a failed write")
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(gd), got))
	assert.Equal(t, v1.HealthStatusCode("Healthy"), got.Status.Health.Status)

	require.NoError(t, k8s.Delete(ctx, got))
	_, err = pass(healthy, "Degraded")
	assert.NoError(t, err, "the write to a deleted object")
}

// Issue 38: deferring to the cache, a reconcile that starts from a cache
// behind our status write writes nothing and reads nothing around the cache;
// the watch event of our write then reconciles again (Wrote says false), and
// that reconcile writes from the cached object. A second reconcile from the
// stale cache before that event reads the server as without.
func TestStatusDefersToTheCache(t *testing.T) {
	if k8s == nil {
		t.Skip("needs the real API server (make test-stack)")
	}
	ctx := context.Background()
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: stack.Tenant(t, k8s).Name, Name: "app"},
		Spec:       v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://example.test/r.git", Path: "p"}, Type: v1.GitOpsDeploymentSpecTypeAutomated},
	}
	require.NoError(t, k8s.Create(ctx, gd))
	reads := &countingReader{Reader: k8s}
	written := kernel.NewStatusWrites(reads).Deferring()
	server := func() *v1.GitOpsDeployment {
		t.Helper()
		got := &v1.GitOpsDeployment{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(gd), got))
		return got
	}
	// The patcher's client plays the cache: it shows the server's object once
	// Wrote has seen our write's event.
	pass := func(from *v1.GitOpsDeployment, health v1.HealthStatusCode) {
		t.Helper()
		obj := from.DeepCopy()
		p := kernel.NewStatusPatcher(k8s, obj).Remembering(written)
		obj.Status.Health.Status = health
		var err error
		p.Patch(ctx, obj, &err)
		require.NoError(t, err)
	}

	stale := server()
	pass(stale, "Degraded")
	degraded := server()
	require.Equal(t, v1.HealthStatusCode("Degraded"), degraded.Status.Health.Status)
	pass(stale, "Healthy")
	assert.Equal(t, degraded.ResourceVersion, server().ResourceVersion, "a status written from the stale cache")
	assert.Zero(t, reads.n, "reads around the cache")
	assert.False(t, written.Wrote(degraded), "the event of our write is dropped though a reconcile waits for it")
	// The reconcile that event brings starts from the cache, which has our write.
	pass(degraded, "Healthy")
	assert.Equal(t, v1.HealthStatusCode("Healthy"), server().Status.Health.Status, "the write of Degraded was not undone")
	assert.Zero(t, reads.n, "reads around the cache")

	// Without that event (a relist skipped it): the first reconcile from the
	// stale cache defers, the second reads the server.
	stale = server()
	pass(stale, "Progressing")
	pass(stale, "Healthy")
	assert.Equal(t, v1.HealthStatusCode("Progressing"), server().Status.Health.Status, "deferred")
	pass(stale, "Healthy")
	assert.Equal(t, 1, reads.n, "reads around the cache")
	assert.Equal(t, v1.HealthStatusCode("Healthy"), server().Status.Health.Status, "the write of Progressing was not undone")
}
