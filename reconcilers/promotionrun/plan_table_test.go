package promotionrun

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestNextLevel(t *testing.T) {
	auto, manual := as.DeploymentStrategyAppStudioAutomated, as.DeploymentStrategyManual
	tree := []as.Environment{env("dev", "", auto), env("staging-b", "dev", auto), env("staging-a", "dev", auto), env("qa", "dev", manual),
		env("prod", "staging-a", manual), env("perf", "staging-b", auto), env("unrelated", "", auto)}
	cases := map[string]struct {
		envs              []as.Environment
		level, visited    []string
		automated, manual []string
	}{
		"children of the level by name, Manual apart": {tree, []string{"dev"}, []string{"dev"}, []string{"staging-a", "staging-b"}, []string{"qa"}},
		"a level of several parents":                  {tree, []string{"staging-a", "staging-b"}, []string{"dev", "staging-a", "staging-b"}, []string{"perf"}, []string{"prod"}},
		"leaves":                                      {tree, []string{"perf"}, []string{"dev", "staging-a", "staging-b", "perf"}, nil, nil},
		"no strategy is not automated":                {[]as.Environment{env("dev", "", auto), env("x", "dev", "")}, []string{"dev"}, []string{"dev"}, nil, []string{"x"}},
		"a cycle is not promoted to twice":            {[]as.Environment{env("a", "b", auto), env("b", "a", auto)}, []string{"b"}, []string{"a", "b"}, nil, nil},
		"a cycle's next member":                       {[]as.Environment{env("a", "b", auto), env("b", "a", auto)}, []string{"a"}, []string{"a"}, []string{"b"}, nil},
		"its own parent":                              {[]as.Environment{env("self", "self", auto)}, []string{"self"}, []string{"self"}, nil, nil},
		"a parent the cache does not show yet":        {[]as.Environment{env("staging", "dev", auto)}, []string{"dev"}, []string{"dev"}, []string{"staging"}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			automated, manual := nextLevel(tc.envs, tc.level, tc.visited)
			assert.Equal(t, tc.automated, automated)
			assert.Equal(t, tc.manual, manual)
		})
	}
}

func promotionRun(name string, created int64, app string, state as.PromotionRunState, mod ...func(*as.PromotionRun)) as.PromotionRun {
	r := as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.Unix(created, 0)},
		Spec: as.PromotionRunSpec{Application: app}, Status: as.PromotionRunStatus{State: state}}
	for _, m := range mod {
		m(&r)
	}
	return r
}

func TestBlocker(t *testing.T) {
	me := promotionRun("me", 100, "shop", "")
	deleted := func(r *as.PromotionRun) { now := metav1.Unix(200, 0); r.DeletionTimestamp = &now }
	otherNamespace := func(r *as.PromotionRun) { r.Namespace = "joe" }
	cases := map[string]struct {
		runs []as.PromotionRun
		want string
	}{
		"alone":                           {[]as.PromotionRun{me}, ""},
		"an older one waiting":            {[]as.PromotionRun{promotionRun("old", 50, "shop", as.PromotionRunStateWaiting), me}, "old"},
		"an older one not yet looked at":  {[]as.PromotionRun{me, promotionRun("old", 50, "shop", "")}, "old"},
		"a younger one Active":            {[]as.PromotionRun{me, promotionRun("young", 150, "shop", as.PromotionRunStateActive)}, "young"},
		"a younger one waiting":           {[]as.PromotionRun{me, promotionRun("young", 150, "shop", as.PromotionRunStateWaiting)}, ""},
		"same second: the name decides":   {[]as.PromotionRun{promotionRun("ma", 100, "shop", ""), me, promotionRun("mz", 100, "shop", "")}, "ma"},
		"an older one completed":          {[]as.PromotionRun{promotionRun("old", 50, "shop", as.PromotionRunStateCompleted), me}, ""},
		"an older one being deleted":      {[]as.PromotionRun{promotionRun("old", 50, "shop", as.PromotionRunStateActive, deleted), me}, ""},
		"another application's":           {[]as.PromotionRun{promotionRun("old", 50, "web", as.PromotionRunStateActive), me}, ""},
		"another tenant's, same app name": {[]as.PromotionRun{promotionRun("old", 50, "shop", as.PromotionRunStateActive, otherNamespace), me}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, blocker(&me, tc.runs))
		})
	}
}

// TestAheadCoversEveryEnvironmentThePlanMayGate: gather reads the claims,
// previews and approvals of the Environments ahead; the plan gates no other.
func TestAheadCoversEveryEnvironmentThePlanMayGate(t *testing.T) {
	auto, manual := as.DeploymentStrategyAppStudioAutomated, as.DeploymentStrategyManual
	tree := []as.Environment{env("dev", "", auto), env("staging", "dev", auto), env("qa", "dev", manual), env("prod", "staging", auto), env("perf", "prod", auto)}
	steps := func(r *as.PromotionRun, envs ...string) *as.PromotionRun {
		for _, e := range envs {
			r.Status.EnvironmentStatus = append(r.Status.EnvironmentStatus, as.PromotionRunEnvironmentStatus{EnvironmentName: e})
		}
		return r
	}
	auto1 := func() *as.PromotionRun { return automated("r", "s1", "dev") }
	assert.Equal(t, []string{"dev"}, ahead(auto1(), tree, true), "a run that starts: its first Environment")
	assert.Equal(t, []string{"staging", "prod", "perf"}, ahead(steps(auto1(), "dev"), tree, false), "every automated descendant, never a Manual one")
	assert.Equal(t, []string{"perf"}, ahead(steps(auto1(), "dev", "staging", "prod"), tree, false))
	assert.Empty(t, ahead(steps(manualRun("m", "s1", "staging", false), "staging"), tree, false), "a manual promotion enters no other")
}
