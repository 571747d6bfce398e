package promotionrun

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
)

// The gates of an Environment (its .spec.gates) hold a promotion before it
// enters the Environment: the freeze switch, the freeze windows, the soak
// time of its parent Environment and the approvals; so does its
// .spec.preview (a clean PromotionPreview, preview_gate.go) and its
// .spec.gates.signatures (signature_gate.go). Whether one holds it is a
// pure function of what was read and of the clock (gate, below: an ordered
// list of policies); the plan asks it before a run starts (its first
// Environment) and before each next step of an automated promotion enters
// its Environments (gates, which reads their inputs from the world).
//
// Soak time is counted from the VerifiedTime of the latest successful step of
// any PromotionRun of the Application that promoted the Snapshot (this
// object with this content: its identity, identity.go) to the parent
// Environment. A manual PromotionRun into a child of a soaking
// Environment waits like an automated one. A Snapshot never verified in the
// parent does not leave it, so the parent's soak time does not hold it (soak
// time is not a "must pass through" rule; approvals are the gate for that).

// maxWindowChain bounds how many back-to-back freeze windows are followed to
// find when an Environment opens again; beyond it, the run looks again then.
const maxWindowChain = 64

// gateInput is what the gates of one Environment are decided on.
type gateInput struct {
	Application string
	Snapshot    string
	// SnapshotID is the Snapshot's identity now; unknown when it does not exist.
	SnapshotID as.SnapshotIdentity
	// SnapshotCreated is when the Snapshot was created.
	SnapshotCreated time.Time
	// Identity says whether the API server enforces who approves (identity.go).
	Identity install.Enforcement
	// Env is the Environment the promotion enters.
	Env *as.Environment
	// Parent is Env's parent Environment, nil if none (or not found).
	Parent *as.Environment
	// VerifiedInParent is when the Snapshot (this object with this content)
	// was last verified in Parent, nil if never.
	VerifiedInParent *time.Time
	// Claim is the DeploymentTargetClaim Env deploys through, nil when it
	// names none or it does not exist (the binding refuses a missing one).
	Claim *as.DeploymentTargetClaim
	// Approvals of the namespace (any Snapshot and Environment).
	Approvals []as.PromotionApproval
	// Previews of the namespace (any Snapshot and Environment); read only
	// when Env requires one.
	Previews []as.PromotionPreview
	// Rendered is what the promotion renders in Env now, to compare with
	// the preview; nil when nothing is rendered (no repo-server).
	Rendered *Rendered
	// Signatures are the results of checking the Snapshot's images against
	// Env's signature requirements (gathered before the plan; nil when Env
	// requires none). The signature gate holds on one not verified; the
	// promotion policies see them as facts.
	Signatures []as.ImageVerification
	// Components of the Snapshot (its images), none when it does not exist.
	Components []as.SnapshotComponent
	// Policies are the PromotionPolicies that bind Env, compiled.
	Policies []policyrules.Compiled
	// SourceHistory is the Application's PromotionHistory of Env's parent,
	// nil when none (or no policy binds Env).
	SourceHistory *as.PromotionHistory
	// SignatureProblem says why Env's signature requirement could not be
	// used (a key missing or not a key); the gate holds on it.
	SignatureProblem string
	// Rollback: the promotion is a rollback (gates apply as Env's rollbacks policy says).
	Rollback bool
	Now      time.Time
}

// gates is what holds the run back from one of the Environments names (the
// first one that does), or nil. snap is the Snapshot the gates decide on,
// nil when it does not exist. When the Snapshot was verified in a parent
// Environment (its soak time) is read from the steps of the namespace's
// runs, this run's as planned so far. A missing Environment has no gates
// here: the promotion refuses it.
func gates(w *world, run *as.PromotionRun, names []string, snap *as.Snapshot) *kernel.Waiting {
	runs := append(slices.DeleteFunc(slices.Clone(w.Runs), func(o as.PromotionRun) bool { return o.UID == run.UID }), *run)
	for _, name := range names {
		env := w.environment(name)
		if env == nil {
			continue
		}
		in := gateInput{Application: run.Spec.Application, Snapshot: run.Spec.Snapshot, Env: env, Approvals: w.Approvals, Previews: w.Previews,
			Identity: w.Identity, Now: w.Now.Time, Rollback: run.Spec.IsRollback()}
		if snap != nil {
			in.SnapshotID, in.SnapshotCreated, in.Components = snap.Identity(), snap.CreationTimestamp.Time, snap.Spec.Components
		}
		if in.Policies = boundPolicies(w.Policies, w.NamespaceLabels, env); len(in.Policies) > 0 {
			in.SourceHistory = byEnvironment(w.Histories)[env.Spec.ParentEnvironment]
		}
		if claim := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName; claim != "" {
			in.Claim = w.Claims[claim]
		}
		in.Signatures, in.SignatureProblem = w.Signatures[name], w.SignatureProblems[name]
		in.Rendered = w.Rendered[name]
		if p := env.Spec.ParentEnvironment; p != "" {
			in.Parent = w.environment(p)
			in.VerifiedInParent = verifiedAt(runs, run.Spec.Application, run.Spec.Snapshot, in.SnapshotID, p)
		}
		if wt := gate(in); wt != nil {
			return wt
		}
	}
	return nil
}

// gate returns what holds the promotion back from in.Env, or nil when it may
// enter: the first of the ladder's policies that holds it. The Waiting's
// message says what it waits for and until when; its After is when the gate
// opens (a window closing, a soak ending), or WaitingRetry when a change of
// an object (the Environment, an approval) opens it and wakes the run.
func gate(in gateInput) *kernel.Waiting {
	for _, p := range ladder {
		if w := p.holds(in); w != nil {
			return w
		}
	}
	return nil
}

// policy is one rung of the ladder: what holds a promotion back from
// in.Env, or nil. rollbacks says whether it holds a rollback too.
type policy struct {
	check     func(gateInput) *kernel.Waiting
	rollbacks func(*as.RollbackGates) bool
}

// The gates, in the order they are reported: the claim first (nothing
// deploys without it), the preview last (it counts only for requiredWithin,
// so it is asked for once nothing else holds the promotion), then the
// platform's promotion policies (policy_gate.go), which see the others' facts.
var ladder = []policy{
	{claimBound, always},
	{frozen, func(rb *as.RollbackGates) bool { return rb.Freeze }},
	{freezeWindow, func(rb *as.RollbackGates) bool { return rb.Freeze }},
	{soaked, never},
	{approved, func(rb *as.RollbackGates) bool { return rb.Approvals }},
	signaturesRung,
	previewRung,
	policyRung,
}

func always(*as.RollbackGates) bool { return true }
func never(*as.RollbackGates) bool  { return false }

// holds is the policy's verdict on in, with the rollback exemption: a
// rollback passes a gate unless the Environment's .spec.gates.rollbacks
// says that gate holds rollbacks too (the claim always does; soak time and
// previews never: a rollback returns to a Snapshot that ran there before).
func (p policy) holds(in gateInput) *kernel.Waiting {
	if in.Rollback && !p.rollbacks(rollbackGates(in.Env)) {
		return nil
	}
	return p.check(in)
}

// rollbackGates is what Env says of rollbacks (none hold them by default).
func rollbackGates(env *as.Environment) *as.RollbackGates {
	if g := env.Spec.Gates; g != nil && g.Rollbacks != nil {
		return g.Rollbacks
	}
	return &as.RollbackGates{}
}

// claimBound holds the promotion until the DeploymentTargetClaim Env deploys through is bound.
func claimBound(in gateInput) *kernel.Waiting {
	if c := in.Claim; c != nil && c.Status.Phase != as.DeploymentTargetClaimPhaseBound {
		return kernel.Wait(as.WaitingReasonClaimNotBound, kernel.WaitingRetry, "DeploymentTargetClaim %s of Environment %s to be bound (phase %s)",
			c.Name, in.Env.Name, orPending(c.Status.Phase))
	}
	return nil
}

// frozen holds the promotion while Env's freeze switch is on.
func frozen(in gateInput) *kernel.Waiting {
	if g := in.Env.Spec.Gates; g != nil && g.Freeze != nil && g.Freeze.Frozen {
		return kernel.Wait(as.WaitingReasonFrozen, kernel.WaitingRetry, "Environment %s is frozen%s: until it is unfrozen", in.Env.Name, freezeDetail(g.Freeze))
	}
	return nil
}

// freezeWindow holds the promotion while a freeze window of Env is open (windowGate).
func freezeWindow(in gateInput) *kernel.Waiting {
	if g := in.Env.Spec.Gates; g != nil {
		return windowGate(in.Env.Name, g.FreezeWindows, in.Now)
	}
	return nil
}

// approved holds the promotion until enough approvals count (approvalGate).
func approved(in gateInput) *kernel.Waiting {
	if g := in.Env.Spec.Gates; g != nil && g.Approvals != nil {
		return approvalGate(in, g.Approvals)
	}
	return nil
}

func orPending(p as.DeploymentTargetClaimPhase) string {
	if p == "" {
		return string(as.DeploymentTargetClaimPhasePending)
	}
	return string(p)
}

func freezeDetail(f *as.FreezeSwitch) string {
	var b strings.Builder
	if f.By != "" {
		fmt.Fprintf(&b, " by %s", f.By)
	}
	if f.Since != nil {
		fmt.Fprintf(&b, " since %s", f.Since.UTC().Format(time.RFC3339))
	}
	if f.Reason != "" {
		fmt.Fprintf(&b, " (%s)", f.Reason)
	}
	return b.String()
}

// soaked holds the Snapshot in the parent Environment until it has run
// there, verified, for the parent's soak time.
func soaked(in gateInput) *kernel.Waiting {
	if in.Parent == nil || in.Parent.Spec.Gates == nil || in.Parent.Spec.Gates.SoakTime == nil || in.VerifiedInParent == nil {
		return nil
	}
	soak := in.Parent.Spec.Gates.SoakTime.Duration
	until := in.VerifiedInParent.Add(soak)
	if !in.Now.Before(until) {
		return nil
	}
	return kernel.Wait(as.WaitingReasonSoakTime, until.Sub(in.Now), "Snapshot %s to soak in Environment %s for %s (verified there at %s): until %s",
		in.Snapshot, in.Parent.Name, soak, in.VerifiedInParent.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
}

// window is a parsed freeze window.
type window struct {
	sched  cron.Schedule
	loc    *time.Location
	length time.Duration
	reason string
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseWindow parses a window; the CRD checks the cron's shape, not its
// values, and cannot check the time zone.
func parseWindow(w as.FreezeWindow) (window, error) {
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return window{}, fmt.Errorf("unknown time zone %q", w.TimeZone)
	}
	if strings.HasPrefix(w.Schedule, "@every") || strings.Contains(w.Schedule, "TZ=") {
		return window{}, fmt.Errorf("schedule %q: @every and TZ= are not supported (use timeZone)", w.Schedule)
	}
	s, err := cronParser.Parse(w.Schedule)
	if err != nil {
		return window{}, fmt.Errorf("schedule %q: %v", w.Schedule, err)
	}
	return window{sched: s, loc: loc, length: w.Duration.Duration, reason: w.Reason}, nil
}

// openUntil is when the window open at t closes, or the zero time when it is
// not open at t. A window opens at each time the schedule gives (in its time
// zone, whose daylight saving shifts the schedule's wall-clock times) and is
// open for its length from then; the latest opening at or before t counts.
func (w window) openUntil(t time.Time) time.Time {
	// Look back from t over a doubling span (at most the window's length) for
	// the latest opening at or before t: a frequent schedule with a long
	// window is not walked opening by opening. Next gives the zero time when
	// the schedule never fires again.
	for span := time.Minute; ; span *= 2 {
		span = min(span, w.length)
		a := w.sched.Next(t.Add(-span).In(w.loc))
		if !a.IsZero() && !a.After(t) {
			for n := w.sched.Next(a); !n.IsZero() && !n.After(t); n = w.sched.Next(n) {
				a = n
			}
			return a.Add(w.length)
		}
		if span == w.length {
			return time.Time{}
		}
	}
}

// windowGate holds the promotion while a freeze window of the Environment is
// open, until the last of the open (and back-to-back) windows closes. A
// window that cannot be parsed holds it too: a gate is never skipped.
func windowGate(env string, specs []as.FreezeWindow, now time.Time) *kernel.Waiting {
	windows := make([]window, 0, len(specs))
	for i, s := range specs {
		w, err := parseWindow(s)
		if err != nil {
			return kernel.Wait(as.WaitingReasonFreezeWindow, kernel.WaitingRetry,
				"a valid freeze window: Environment %s .spec.gates.freezeWindows[%d]: %v (fix the Environment)", env, i, err)
		}
		windows = append(windows, w)
	}
	until, reason := now, ""
	for range maxWindowChain {
		later := until
		for _, w := range windows {
			if u := w.openUntil(until); u.After(later) {
				later = u
				if reason == "" {
					reason = w.reason
				}
			}
		}
		if !later.After(until) {
			break
		}
		until = later
	}
	if !until.After(now) {
		return nil
	}
	if reason != "" {
		reason = " (" + reason + ")"
	}
	return kernel.Wait(as.WaitingReasonFreezeWindow, until.Sub(now), "a freeze window of Environment %s%s to close: until %s",
		env, reason, until.UTC().Format(time.RFC3339))
}

// approvalGate counts the approvers of the Snapshot into the Environment
// whom the gate counts (countedApprovers: this Snapshot's content, named by
// user or group or anyone when it names nobody, one per person) and holds
// the promotion until there are enough. None count while the API server
// does not enforce who approves.
func approvalGate(in gateInput, g *as.ApprovalGate) *kernel.Waiting {
	if !in.Identity.Enforced() {
		return identityWait(in.Env.Name, in.Identity)
	}
	approvers := countedApprovers(in, g)
	if len(approvers) >= int(g.Required) {
		return nil
	}
	by := ""
	if len(approvers) > 0 {
		by = ", approved by " + strings.Join(approvers, ", ")
	}
	if !in.SnapshotID.Known() {
		by = " (Snapshot " + in.Snapshot + " does not exist)"
	}
	return kernel.Wait(as.WaitingReasonAwaitingApproval, kernel.WaitingRetry, "approvals of Snapshot %s into Environment %s: %d of %d%s; waiting for %s",
		in.Snapshot, in.Env.Name, len(approvers), g.Required, by, whoMayApprove(g, approvers))
}

func mayApprove(g *as.ApprovalGate, a as.Approver) bool {
	if len(g.Users) == 0 && len(g.Groups) == 0 {
		return true
	}
	return slices.Contains(g.Users, a.User) || slices.ContainsFunc(a.Groups, func(grp string) bool { return slices.Contains(g.Groups, grp) })
}

func whoMayApprove(g *as.ApprovalGate, done []string) string {
	var users []string
	for _, u := range g.Users {
		if !slices.Contains(done, u) {
			users = append(users, u)
		}
	}
	var parts []string
	if len(users) > 0 {
		parts = append(parts, "user "+strings.Join(users, " or "))
	}
	if len(g.Groups) > 0 {
		parts = append(parts, "a member of group "+strings.Join(g.Groups, " or "))
	}
	if len(parts) == 0 {
		return "another approver"
	}
	return strings.Join(parts, " or ")
}

// verifiedAt is when the Snapshot of the Application (id: this object with
// this content) was last verified in env by any of the runs (a successful
// step's VerifiedTime), nil if never. A run counts only when it recorded the
// identity it deployed and that is id: a Snapshot re-created under the name
// was never verified anywhere.
func verifiedAt(runs []as.PromotionRun, application, snapshot string, id as.SnapshotIdentity, env string) *time.Time {
	var last *time.Time
	for i := range runs {
		r := &runs[i]
		if r.Spec.Application != application || snapshotOf(r) != snapshot || !r.Status.SnapshotIdentity.Matches(id) {
			continue
		}
		for _, s := range r.Status.EnvironmentStatus {
			if s.EnvironmentName == env && s.Status == as.PromotionRunEnvironmentStatusSuccess && s.VerifiedTime != nil &&
				(last == nil || s.VerifiedTime.After(*last)) {
				t := s.VerifiedTime.Time
				last = &t
			}
		}
	}
	return last
}
