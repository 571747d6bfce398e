package deploymenttargetclaim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func claimOf(mutate ...func(*as.DeploymentTargetClaim)) *as.DeploymentTargetClaim {
	c := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "claim"},
		Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: "cls"}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// target is a target of class cls with complete credentials, made age minutes after t0.
func target(name string, age int, mutate ...func(*as.DeploymentTarget)) *as.DeploymentTarget {
	dt := &as.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Minute))},
		Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: "cls", KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
			APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "s", DefaultNamespace: "x"}},
	}
	for _, m := range mutate {
		m(dt)
	}
	return dt
}

func claimRef(name string) func(*as.DeploymentTarget) {
	return func(dt *as.DeploymentTarget) { dt.Spec.ClaimRef = name }
}

func phase(p as.DeploymentTargetPhase) func(*as.DeploymentTarget) {
	return func(dt *as.DeploymentTarget) { dt.Status.Phase = p }
}

func deleting(dt *as.DeploymentTarget) {
	now := metav1.NewTime(t0)
	dt.DeletionTimestamp = &now
}

func TestMismatch(t *testing.T) {
	provisioned := func(c *as.DeploymentTargetClaim) { c.Annotations = map[string]string{as.AnnTargetProvisioner: "p"} }
	for name, tc := range map[string]struct {
		claim *as.DeploymentTargetClaim
		dt    *as.DeploymentTarget
		want  string
	}{
		"free and complete":                 {claimOf(), target("dt", 0), ""},
		"Available":                         {claimOf(), target("dt", 0, phase(as.DeploymentTargetPhaseAvailable)), ""},
		"Bound to this claim":               {claimOf(), target("dt", 0, phase(as.DeploymentTargetPhaseBound), claimRef("claim")), ""},
		"pre-bound to a provisioned claim":  {claimOf(provisioned), target("dt", 0, claimRef("claim")), ""},
		"being deleted":                     {claimOf(), target("dt", 0, deleting), "it is being deleted"},
		"another class":                     {claimOf(), target("dt", 0, func(dt *as.DeploymentTarget) { dt.Spec.DeploymentTargetClassName = "other" }), `its class is "other", the claim's is "cls"`},
		"Released":                          {claimOf(), target("dt", 0, phase(as.DeploymentTargetPhaseReleased)), "its phase is Released"},
		"Bound to another claim":            {claimOf(), target("dt", 0, phase(as.DeploymentTargetPhaseBound), claimRef("other")), "its phase is Bound"},
		"no credentials secret":             {claimOf(), target("dt", 0, func(dt *as.DeploymentTarget) { dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "" }), "its kubernetesCredentials are incomplete (apiURL, clusterCredentialsSecret and defaultNamespace are required)"},
		"claimRef of another claim":         {claimOf(), target("dt", 0, claimRef("other")), `it is bound to claim "other"`},
		"a provisioned claim takes no free": {claimOf(provisioned), target("dt", 0), "the claim waits for a dynamically provisioned target"},
	} {
		assert.Equal(t, tc.want, mismatch(tc.claim, tc.dt), name)
	}
}

func TestCandidates(t *testing.T) {
	names := func(dts []*as.DeploymentTarget) []string {
		out := []string{}
		for _, dt := range dts {
			out = append(out, dt.Name)
		}
		return out
	}
	for name, tc := range map[string]struct {
		dts  []*as.DeploymentTarget
		want []string
	}{
		"none":                  {nil, []string{}},
		"oldest first":          {[]*as.DeploymentTarget{target("new", 3), target("old", 1), target("mid", 2)}, []string{"old", "mid", "new"}},
		"pre-bound to it first": {[]*as.DeploymentTarget{target("old", 1), target("mine", 5, claimRef("claim")), target("mid", 2)}, []string{"mine", "old", "mid"}},
		"unsuitable ones left out": {[]*as.DeploymentTarget{target("taken", 0, claimRef("other")), target("gone", 0, deleting), target("ok", 9),
			target("wrong", 0, func(dt *as.DeploymentTarget) { dt.Spec.DeploymentTargetClassName = "other" })}, []string{"ok"}},
		"same age keeps the listed order": {[]*as.DeploymentTarget{target("b", 1), target("a", 1)}, []string{"b", "a"}},
	} {
		assert.Equal(t, tc.want, names(candidates(claimOf(), tc.dts)), name)
	}
}

func TestNamed(t *testing.T) {
	naming := func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "dt" }
	wasBound := func(c *as.DeploymentTargetClaim) { c.Status.Phase = as.DeploymentTargetClaimPhaseBound }
	bindCompleted := func(c *as.DeploymentTargetClaim) {
		c.Annotations = map[string]string{as.AnnBindCompleted: as.AnnBinderValueTrue}
	}
	wasLost := func(c *as.DeploymentTargetClaim) { c.Status.Phase = as.DeploymentTargetClaimPhaseLost }
	for name, tc := range map[string]struct {
		claim   *as.DeploymentTargetClaim
		dt      *as.DeploymentTarget
		phase   as.DeploymentTargetClaimPhase
		refused string // the refusal's reason
		waiting string // the waiting's reason
	}{
		"bind a free target":                {claim: claimOf(naming), dt: target("dt", 0)},
		"keep a bound one":                  {claim: claimOf(naming, wasBound), dt: target("dt", 0, claimRef("claim"), phase(as.DeploymentTargetPhaseBound))},
		"bound, target deleted":             {claim: claimOf(naming, wasBound), phase: as.DeploymentTargetClaimPhaseLost, refused: as.DeploymentTargetReasonLost},
		"bind completed, target deleting":   {claim: claimOf(naming, bindCompleted), dt: target("dt", 0, deleting), phase: as.DeploymentTargetClaimPhaseLost, refused: as.DeploymentTargetReasonLost},
		"Lost stays Lost":                   {claim: claimOf(naming, wasLost), phase: as.DeploymentTargetClaimPhaseLost, refused: as.DeploymentTargetReasonLost},
		"bound, target now another claim's": {claim: claimOf(naming, wasBound), dt: target("dt", 0, claimRef("other")), phase: as.DeploymentTargetClaimPhaseLost, refused: as.DeploymentTargetReasonLost},
		"never bound, no target yet":        {claim: claimOf(naming), phase: as.DeploymentTargetClaimPhasePending, waiting: as.DeploymentTargetReasonWaitingForTarget},
		"never bound, another claim's":      {claim: claimOf(naming), dt: target("dt", 0, claimRef("other")), phase: as.DeploymentTargetClaimPhasePending, refused: as.DeploymentTargetReasonClaimedByAnother},
		"never bound, not what it asks for": {claim: claimOf(naming), dt: target("dt", 0, phase(as.DeploymentTargetPhaseFailed)), phase: as.DeploymentTargetClaimPhasePending, refused: as.DeploymentTargetReasonMismatch},
	} {
		p, err := named(tc.claim, tc.dt)
		assert.Equal(t, tc.phase, p, name)
		switch {
		case tc.refused != "":
			if r := kernel.AsRefusal(err); assert.NotNil(t, r, name) {
				assert.Equal(t, tc.refused, r.Reason, name)
				assert.Contains(t, r.Message, "DeploymentTarget dt", name)
			}
		case tc.waiting != "":
			if w := kernel.AsWaiting(err); assert.NotNil(t, w, name) {
				assert.Equal(t, tc.waiting, w.Reason, name)
				assert.Equal(t, kernel.WaitingRetry, w.After, name)
			}
		default:
			assert.NoError(t, err, name)
		}
	}
}

func TestConcerns(t *testing.T) {
	for name, tc := range map[string]struct {
		dt    *as.DeploymentTarget
		claim *as.DeploymentTargetClaim
		want  bool
	}{
		"the claim it names":                     {target("dt", 0, claimRef("claim")), claimOf(func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "elsewhere" }), true},
		"the claim naming it":                    {target("dt", 0, claimRef("other")), claimOf(func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "dt" }), true},
		"a free target, an unbound claim":        {target("dt", 0), claimOf(), true},
		"a free target of another class":         {target("dt", 0, func(dt *as.DeploymentTarget) { dt.Spec.DeploymentTargetClassName = "other" }), claimOf(), false},
		"a free target, a claim bound elsewhere": {target("dt", 0), claimOf(func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "elsewhere" }), false},
		"another claim's target":                 {target("dt", 0, claimRef("other")), claimOf(), false},
	} {
		assert.Equal(t, tc.want, concerns(tc.dt, tc.claim), name)
	}
}

func TestBindingWritten(t *testing.T) {
	bound := func(c *as.DeploymentTargetClaim) {
		c.Spec.TargetName = "dt"
		c.Annotations = map[string]string{as.AnnBindCompleted: as.AnnBinderValueTrue, as.AnnBoundByController: as.AnnBinderValueTrue}
		c.Finalizers = []string{as.FinalizerBinder}
	}
	for name, tc := range map[string]struct {
		claim  *as.DeploymentTargetClaim
		chosen bool
		want   bool
	}{
		"all written":                         {claimOf(bound), true, true},
		"nothing yet":                         {claimOf(), true, false},
		"another target":                      {claimOf(bound, func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "other" }), true, false},
		"no bind-complete":                    {claimOf(bound, func(c *as.DeploymentTargetClaim) { delete(c.Annotations, as.AnnBindCompleted) }), true, false},
		"no finalizer":                        {claimOf(bound, func(c *as.DeploymentTargetClaim) { c.Finalizers = nil }), true, false},
		"chosen, no bound-by-controller":      {claimOf(bound, func(c *as.DeploymentTargetClaim) { delete(c.Annotations, as.AnnBoundByController) }), true, false},
		"named by the user, none needed":      {claimOf(bound, func(c *as.DeploymentTargetClaim) { delete(c.Annotations, as.AnnBoundByController) }), false, true},
		"named by the user, no bind-complete": {claimOf(bound, func(c *as.DeploymentTargetClaim) { c.Annotations = nil }), false, false},
	} {
		assert.Equal(t, tc.want, bindingWritten(tc.claim, target("dt", 0), tc.chosen), name)
	}
}

// The process's own reservations: another worker skips a target being
// reserved, and a written reservation stands in for the cache's older
// version until the cache shows a newer one.
func TestReservations(t *testing.T) {
	var r reservations
	dt := target("dt", 0, func(dt *as.DeploymentTarget) { dt.UID, dt.ResourceVersion = "u1", "1" })

	got, busy := r.view(dt)
	assert.False(t, busy)
	assert.Same(t, dt, got, "nothing reserved: the cache's")

	assert.True(t, r.take(dt, "a"))
	_, busy = r.view(dt)
	assert.True(t, busy, "a's write is under way")
	assert.False(t, r.take(dt, "b"), "b must not race a")

	written := dt.DeepCopy()
	written.ResourceVersion, written.Spec.ClaimRef = "2", "a"
	r.done(dt, written)
	got, busy = r.view(dt)
	assert.False(t, busy)
	assert.Equal(t, "a", got.Spec.ClaimRef, "the cache still shows version 1: ours stands in")
	assert.False(t, r.take(dt, "b"), "b must not take what a holds")

	cached := written.DeepCopy()
	got, _ = r.view(cached)
	assert.Same(t, cached, got, "the cache caught up")
	got, _ = r.view(dt)
	assert.Same(t, dt, got, "and the reservation is forgotten")

	// A failed write leaves nothing behind.
	assert.True(t, r.take(dt, "c"))
	r.done(dt, nil)
	_, busy = r.view(dt)
	assert.False(t, busy)
	assert.True(t, r.take(dt, "d"))
}
