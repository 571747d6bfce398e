package kernel

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
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
