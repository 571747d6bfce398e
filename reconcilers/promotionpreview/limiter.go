package promotionpreview

import "sync"

// Limiter bounds the previews running at once: at most PerTenant per tenant
// namespace and Total in all, so one tenant cannot take the repo-server from
// the others nor the sidecar's workers. A preview that finds no room waits
// (it is looked at again), it does not block a worker.
type Limiter struct {
	PerTenant int
	Total     int

	mu      sync.Mutex
	running map[string]int
	total   int
}

// TryAcquire takes a place for a preview of tenant, or says there is none.
func (l *Limiter) TryAcquire(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running == nil {
		l.running = map[string]int{}
	}
	if !room(l.running[tenant], l.total, l.PerTenant, l.Total) {
		return false
	}
	l.running[tenant]++
	l.total++
	return true
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

// room says whether one more preview may start; a limit <= 0 is 1.
func room(tenantRunning, totalRunning, perTenant, total int) bool {
	return tenantRunning < max(perTenant, 1) && totalRunning < max(total, 1)
}
