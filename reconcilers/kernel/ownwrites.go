package kernel

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnWrites remembers, per object, the versions this reconciler's own
// writes replaced. A pass that reads one of them from the cache would decide
// again on what we already changed (a write that is the same again, or a
// locked one that only conflicts): it returns ErrStaleCache instead, and the
// watch event of our write brings it back. Unlike StatusWrites, it never
// reads around the cache. Entries go once the cache shows another version.
type OwnWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]bool
}

// Replaced notes that our write replaced version rv of the object key.
func (w *OwnWrites) Replaced(key types.NamespacedName, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]map[string]bool{}
	}
	if w.m[key] == nil {
		w.m[key] = map[string]bool{}
	}
	w.m[key][rv] = true
}

// Behind says whether version rv of the object key is one our writes
// replaced; any other version means the cache caught up, and the entry goes.
func (w *OwnWrites) Behind(key types.NamespacedName, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[key][rv] {
		return true
	}
	delete(w.m, key)
	return false
}

// Forget drops what is known of an object that is gone.
func (w *OwnWrites) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// Get is a pass's fetch for a reconciler that notes its writes: it reads key
// into obj from c (the cache). found is false when the object is gone
// (forgotten; nothing to do) or when err is set: ErrStaleCache when the cache
// still shows a version our writes replaced (kernel.Outcome requeues it),
// else the read's error.
func (w *OwnWrites) Get(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object) (found bool, err error) {
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			w.Forget(key)
			return false, nil
		}
		return false, err
	}
	if w.Behind(key, obj.GetResourceVersion()) {
		return false, ErrStaleCache
	}
	return true, nil
}
