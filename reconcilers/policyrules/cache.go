package policyrules

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Compiled is a policy with its rules compiled, or why they or its
// selectors are not usable (Err): the promotions it binds then wait.
type Compiled struct {
	Policy *as.PromotionPolicy
	Rules  []*Rule
	Err    error
}

// Cache keeps the compiled rules of each policy (by UID and generation):
// a pass does not compile what did not change.
type Cache struct {
	mu sync.Mutex
	m  map[types.UID]Compiled
}

// CompileAll compiles the policies (from the cache where their generation
// did not change) and forgets those no longer there.
func (c *Cache) CompileAll(policies []as.PromotionPolicy) []Compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[types.UID]Compiled, len(policies))
	out := make([]Compiled, 0, len(policies))
	for i := range policies {
		p := &policies[i]
		got, ok := c.m[p.UID]
		if !ok || got.Policy.Generation != p.Generation {
			got = CompilePolicy(p)
		}
		got.Policy = p
		next[p.UID] = got
		out = append(out, got)
	}
	c.m = next
	// Denials name the first policy that denies: in name order, not the cache's.
	slices.SortFunc(out, func(a, b Compiled) int { return strings.Compare(a.Policy.Name, b.Policy.Name) })
	return out
}

// CompilePolicy compiles the rules of p and checks its selectors.
func CompilePolicy(p *as.PromotionPolicy) Compiled {
	if err := CheckSelectors(&p.Spec); err != nil {
		return Compiled{Policy: p, Err: err}
	}
	rules, err := Compile(p.Spec.Rules)
	return Compiled{Policy: p, Rules: rules, Err: err}
}
