package tenantproject

import (
	"slices"
	"time"
)

// recompute says whether a pass lists the tenant's Applications to find the
// repositories its project allows: the tenant's own pass (no repositories
// requested) and the pass that makes the project do; a caller adding its
// repositories to an existing project does not (it would cost O(the tenant's
// Applications) on every reconcile, issue 13).
func recompute(exists bool, requested []string) bool {
	return !exists || len(requested) == 0
}

// sourceRepos decides the repositories the tenant's project allows after a
// pass. A caller's pass adds the repositories it requested to those the
// project allows (have); the tenant reconciler, which runs on every change of
// the tenant's Applications and ApplicationSets, drops those no longer used.
// A pass that recomputes allows what is used, what was added for a caller
// whose Application the cache does not show yet (pending), and what it was
// asked for.
func sourceRepos(have, requested []string, exists bool, used, pending []string) []string {
	if !recompute(exists, requested) {
		return union(have, requested)
	}
	return union(used, pending, requested)
}

// added are the requested repositories the project did not allow before the pass.
func added(have, requested []string, exists bool) []string {
	var out []string
	for _, r := range requested {
		if r != "" && (!exists || !slices.Contains(have, r)) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// pending are the repositories added to a project for a caller, by when,
// until the tenant's pass sees an Application or ApplicationSet use them or
// the grace ends: between a caller's Ensure and its Application reaching the
// cache, the tenant's pass would otherwise drop them.
type pending map[string]time.Time

func (p pending) add(repos []string, now time.Time) {
	for _, r := range repos {
		p[r] = now
	}
}

// settle forgets the repositories used, and those added longer than grace ago.
func (p pending) settle(used []string, now time.Time, grace time.Duration) {
	if len(p) == 0 {
		return
	}
	inUse := make(map[string]bool, len(used))
	for _, r := range used {
		inUse[r] = true
	}
	for r, at := range p {
		if inUse[r] || now.Sub(at) >= grace {
			delete(p, r)
		}
	}
}

func (p pending) list() []string {
	out := make([]string, 0, len(p))
	for r := range p {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// union is the repositories of all lists, each once, in order of appearance
// (argocd.AppProject sorts them).
func union(lists ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, r := range l {
			if r != "" && !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}
