package stack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tick is how often the suites' waits look again.
const Tick = 100 * time.Millisecond

// Tenant creates a fresh tenant namespace, tenant-<random>.
func Tenant(t testing.TB, c client.Client) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + rand.String(6)}}
	require.NoError(t, c.Create(context.Background(), ns))
	return ns
}

// WaitGone waits up to within until obj is gone.
func WaitGone(t testing.TB, c client.Reader, obj client.Object, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	}, within, Tick, "%T %s was not deleted", obj, client.ObjectKeyFromObject(obj))
}

// WaitFor re-reads obj up to within until ok holds of what it read, and
// returns that (obj itself is not changed).
func WaitFor[T client.Object](t testing.TB, c client.Reader, obj T, within time.Duration, what string, ok func(T) bool) T {
	t.Helper()
	got := obj.DeepCopyObject().(T)
	require.Eventually(t, func() bool {
		return c.Get(context.Background(), client.ObjectKeyFromObject(obj), got) == nil && ok(got)
	}, within, Tick, "%T %s never %s; last seen: %+v", obj, client.ObjectKeyFromObject(obj), what, got)
	return got
}
