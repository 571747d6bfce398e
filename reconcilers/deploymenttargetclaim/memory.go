package deploymenttargetclaim

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// The binder decides from the cache, not from uncached reads (make bench:
// those reads and the conflicts they did not prevent were most of the API
// server's work per claim). The API server still decides every race: each
// binding write is conditional on the resourceVersion read. What follows
// only keeps this process from losing races against itself, as the
// PersistentVolume binder's assume cache does: a write of ours the cache
// does not show yet, and a reservation another worker is making.

// reservations are the targets this process is reserving or has reserved,
// until the cache shows them.
type reservations struct {
	mu sync.Mutex
	m  map[types.UID]*reservation
}

type reservation struct {
	claim string
	// from: the target's version the write was made on; written: the
	// target as our write left it, nil while the write is under way.
	from    string
	written *as.DeploymentTarget
}

// take marks dt as being reserved for claim; false when another claim's
// reservation of it is under way or not yet cached.
func (r *reservations) take(dt *as.DeploymentTarget, claim string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.m[dt.UID]; e != nil && e.claim != claim && (e.written == nil || e.from == dt.ResourceVersion) {
		return false
	}
	if r.m == nil {
		r.m = map[types.UID]*reservation{}
	}
	r.m[dt.UID] = &reservation{claim: claim, from: dt.ResourceVersion}
	return true
}

// done records the outcome of take's write: written, or nil when it failed.
func (r *reservations) done(dt *as.DeploymentTarget, written *as.DeploymentTarget) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if written == nil {
		delete(r.m, dt.UID)
		return
	}
	if e := r.m[dt.UID]; e != nil {
		e.written = written.DeepCopy()
	}
}

// view is dt as this process knows it: our write when the cache still
// shows the version it was made on. busy says another worker's write to
// it is under way (its outcome unknown).
func (r *reservations) view(dt *as.DeploymentTarget) (_ *as.DeploymentTarget, busy bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[dt.UID]
	switch {
	case e == nil:
		return dt, false
	case e.written == nil:
		return dt, true
	case e.from == dt.ResourceVersion:
		return e.written.DeepCopy(), false
	}
	// The cache shows our write or later ones: it knows better now.
	delete(r.m, dt.UID)
	return dt, false
}
