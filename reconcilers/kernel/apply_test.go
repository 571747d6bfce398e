//go:build !unit

package kernel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Issue 38: an object the cache does not show is created without a read
// first; whatever already has its name, ours or not, is never written.
func TestApplyCreatesOnlyWhatIsNotThere(t *testing.T) {
	if k8s == nil {
		t.Skip("needs the real API server (make test-stack)")
	}
	ctx := context.Background()
	ns := stack.Tenant(t, k8s).Name
	ours := func(o client.Object) bool { return o.GetLabels()["owner"] == "us" }
	reads := &countingReader{Reader: k8s}
	owned := kernel.Owned{Client: k8s, APIReader: reads, Ours: ours}
	desired := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"owner": "us"}},
			Data: map[string]string{"k": "ours"}}
	}

	// Not there: created, with nothing read.
	made := desired("new")
	require.NoError(t, owned.Apply(ctx, nil, made))
	assert.Zero(t, reads.n, "reads before creating")
	got := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(made), got))
	assert.Equal(t, "ours", got.Data["k"])
	assert.Equal(t, got.UID, made.UID, "desired is the object as stored")
	assert.Equal(t, got.ResourceVersion, made.ResourceVersion)

	// Ours, though the cache does not show it yet: a stale cache, untouched.
	again := desired("new")
	again.Data["k"] = "changed"
	err := owned.Apply(ctx, nil, again)
	assert.ErrorIs(t, err, kernel.ErrStaleCache)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(made), got))
	assert.Equal(t, "ours", got.Data["k"])
	assert.Equal(t, made.ResourceVersion, got.ResourceVersion, "written")

	// Someone else's under our name: refused, untouched.
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken", Labels: map[string]string{"owner": "them"}},
		Data: map[string]string{"k": "theirs"}}
	require.NoError(t, k8s.Create(ctx, foreign))
	err = owned.Apply(ctx, nil, desired("taken"))
	var notOurs *kernel.NotOursError
	require.True(t, errors.As(err, &notOurs), "got %v", err)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(foreign), got))
	assert.Equal(t, "theirs", got.Data["k"])
	assert.Equal(t, "them", got.Labels["owner"])
	assert.Equal(t, foreign.ResourceVersion, got.ResourceVersion, "written")
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	n int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.n++
	return r.Reader.Get(ctx, key, obj, opts...)
}
