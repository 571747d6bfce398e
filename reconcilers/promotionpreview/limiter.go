package promotionpreview

import (
	"sync"
	"time"
)

// Limiter bounds the previews running at once: at most PerTenant per tenant
// namespace and Total in all, so one tenant cannot take the repo-server from
// the others nor the sidecar's workers. A preview that finds no room waits
// (it is looked at again), it does not block a worker.
//
// The places are shared out fairly across namespaces (the namespace is the
// tenant in this product: its RBAC, its AppProject): a free place goes to the
// waiting namespace with the fewest previews running, the one waiting longest
// among equals. So a tenant with several namespaces, or one that keeps
// asking, cannot hold all Total places while another namespace waits with
// none running; it gets further places only when nobody with fewer waits.
// Namespaces are not grouped by who owns them: nothing the sidecar can trust
// says two namespaces are one tenant's.
type Limiter struct {
	PerTenant int
	Total     int
	// Now is the clock of the waiting queue; time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	running map[string]int
	total   int
	// waiting: namespaces refused a place, since when, and when last asked.
	waiting map[string]waiter
}

type waiter struct{ since, seen time.Time }

// staleWait is how long a waiting namespace keeps its turn without asking
// again: a few of the reconciler's polls (kernel.PollInterval), so a preview
// deleted while it waited does not hold the queue.
const staleWait = 10 * time.Second

// TryAcquire takes a place for a preview of tenant, or says there is none
// (for now: it keeps its turn while it asks again).
func (l *Limiter) TryAcquire(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running == nil {
		l.running, l.waiting = map[string]int{}, map[string]waiter{}
	}
	if l.running[tenant] >= max(l.PerTenant, 1) {
		// At its own limit it waits for its own previews, not in the queue.
		return false
	}
	now := l.now()
	w, ok := l.waiting[tenant]
	if !ok {
		w.since = now
	}
	w.seen = now
	if !room(l.running[tenant], l.total, l.PerTenant, l.Total) || !l.turn(tenant, w, now) {
		l.waiting[tenant] = w
		return false
	}
	delete(l.waiting, tenant)
	l.running[tenant]++
	l.total++
	return true
}

// turn says whether no other waiting namespace goes before tenant: none with
// fewer previews running, nor with as many that waited longer.
func (l *Limiter) turn(tenant string, mine waiter, now time.Time) bool {
	for ns, w := range l.waiting {
		if ns == tenant {
			continue
		}
		if now.Sub(w.seen) > staleWait {
			delete(l.waiting, ns)
			continue
		}
		if before(l.running[ns], w.since, l.running[tenant], mine.since) && l.running[ns] < max(l.PerTenant, 1) {
			return false
		}
	}
	return true
}

// before orders waiting namespaces: fewer running first, then longer waiting.
func before(running int, since time.Time, otherRunning int, otherSince time.Time) bool {
	if running != otherRunning {
		return running < otherRunning
	}
	return since.Before(otherSince)
}

// Release gives back a place TryAcquire took.
func (l *Limiter) Release(tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[tenant] > 0 {
		l.running[tenant]--
		l.total--
	}
	if l.running[tenant] == 0 {
		delete(l.running, tenant)
	}
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// room says whether one more preview may start; a limit <= 0 is 1.
func room(tenantRunning, totalRunning, perTenant, total int) bool {
	return tenantRunning < max(perTenant, 1) && totalRunning < max(total, 1)
}
