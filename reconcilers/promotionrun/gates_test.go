package promotionrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func gated(name string, g *as.PromotionGates) *as.Environment {
	return &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name}, Spec: as.EnvironmentSpec{Gates: g}}
}

// approval approves snapshot (by name) after the Snapshot's creation and
// the policies' (enforced).
func approval(snapshot, env, user string, groups ...string) as.PromotionApproval {
	return as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: user + "-" + snapshot, CreationTimestamp: metav1.NewTime(approvedAt)},
		Spec: as.PromotionApprovalSpec{Snapshot: snapshot, Environment: env, Approver: as.Approver{User: user, Groups: groups}}}
}

var (
	enforcedSince = utc("2026-01-01T00:00:00Z")
	snapCreatedAt = utc("2026-02-01T00:00:00Z")
	approvedAt    = utc("2026-03-01T00:00:00Z")
	snapID        = as.SnapshotIdentity{UID: "u1", Digest: "sha256:d1"}
)

// identified is in with the Snapshot existing (snapID, created at
// snapCreatedAt) and identity enforced since enforcedSince, unless in says.
func identified(in gateInput) gateInput {
	if !in.SnapshotID.Known() {
		in.SnapshotID, in.SnapshotCreated = snapID, snapCreatedAt
	}
	if in.Identity.Since.IsZero() && in.Identity.Problem == "" {
		in.Identity = install.Enforcement{Since: enforcedSince}
	}
	return in
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func windowAt(schedule string, length time.Duration, tz string) []as.FreezeWindow {
	return []as.FreezeWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: length}, TimeZone: tz, Reason: "freeze"}}
}

// TestGate decides the gates on an injected clock: what holds a promotion,
// the condition's reason and message, and when the run is looked at again.
func TestGate(t *testing.T) {
	now := utc("2026-03-04T10:00:00Z") // a Wednesday
	verified := now.Add(-30 * time.Minute)
	soaking := gated("dev", &as.PromotionGates{SoakTime: dur(time.Hour)})
	two := &as.ApprovalGate{Required: 2, Users: []string{"alice", "bob", "carol"}, Groups: []string{"ops"}}
	cases := map[string]struct {
		in     gateInput
		reason string // "" : nothing holds the promotion
		msg    string
		after  time.Duration
	}{
		"no gates": {in: gateInput{Env: gated("prod", nil)}},
		"frozen switch": {
			in:     gateInput{Env: gated("prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true, By: "alice", Reason: "INC-1", Since: &metav1.Time{Time: now.Add(-time.Hour)}}})},
			reason: as.WaitingReasonFrozen, after: kernel.WaitingRetry,
			msg: "Environment prod is frozen by alice since 2026-03-04T09:00:00Z (INC-1): until it is unfrozen",
		},
		"unfrozen switch": {in: gateInput{Env: gated("prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: false}})}},
		"freeze does not hold a rollback by default": {
			in: gateInput{Rollback: true, Env: gated("prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}, FreezeWindows: windowAt("0 9 * * *", 2*time.Hour, "")})},
		},
		"freeze holds a rollback when the Environment says so": {
			in:     gateInput{Rollback: true, Env: gated("prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}, Rollbacks: &as.RollbackGates{Freeze: true}})},
			reason: as.WaitingReasonFrozen, after: kernel.WaitingRetry, msg: "Environment prod is frozen: until it is unfrozen",
		},
		"inside a daily window": {
			in:     gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 9 * * *", 2*time.Hour, "")})},
			reason: as.WaitingReasonFreezeWindow, after: time.Hour,
			msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-04T11:00:00Z",
		},
		"the window closed exactly now": {in: gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 8 * * *", 2*time.Hour, "")})}},
		"the window opens exactly now":  {in: gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 10 * * *", time.Minute, "")})}, reason: as.WaitingReasonFreezeWindow, after: time.Minute, msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-04T10:01:00Z"},
		"before today's window":         {in: gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 11 * * *", 2*time.Hour, "")})}},
		"yesterday's long window still open": {
			in:     gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 18 * * *", 20*time.Hour, "")})},
			reason: as.WaitingReasonFreezeWindow, after: 4 * time.Hour, msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-04T14:00:00Z",
		},
		"a weekend window, weekday": {in: gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 0 * * SAT", 48*time.Hour, "")})}},
		"a weekend window, Sunday": {
			in:     gateInput{Now: utc("2026-03-08T12:00:00Z"), Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 0 * * SAT", 48*time.Hour, "")})},
			reason: as.WaitingReasonFreezeWindow, after: 12 * time.Hour, msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-09T00:00:00Z",
		},
		"back-to-back windows chain": {
			// Every hour for an hour: always frozen; followed to the chain's bound.
			in:     gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 * * * *", time.Hour, "")})},
			reason: as.WaitingReasonFreezeWindow, after: maxWindowChain * time.Hour,
			msg: "a freeze window of Environment prod (freeze) to close: until " + now.Add(maxWindowChain*time.Hour).Format(time.RFC3339),
		},
		"two overlapping windows: the later close": {
			in: gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: append(windowAt("0 9 * * *", 2*time.Hour, ""),
				as.FreezeWindow{Schedule: "30 10 * * *", Duration: metav1.Duration{Duration: time.Hour}})})},
			reason: as.WaitingReasonFreezeWindow, after: 90 * time.Minute, msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-04T11:30:00Z",
		},
		"a window in a time zone": {
			// 11:00 in Berlin (CET, UTC+1) is 10:00 UTC: the window opened now.
			in:     gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 11 * * *", 30*time.Minute, "Europe/Berlin")})},
			reason: as.WaitingReasonFreezeWindow, after: 30 * time.Minute, msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-04T10:30:00Z",
		},
		"the same window after the switch to summer time": {
			// 11:00 CEST is 09:00 UTC: closed at 09:30 UTC.
			in: gateInput{Now: utc("2026-04-01T10:00:00Z"), Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 11 * * *", 30*time.Minute, "Europe/Berlin")})},
		},
		"the night of the switch to summer time": {
			// 29 March 2026, 01:00 CET = 00:00 UTC; 02:00-03:00 does not exist in Berlin. A 3h window from
			// 01:00 local lasts 3 real hours: until 03:00 UTC (05:00 CEST).
			in:     gateInput{Now: utc("2026-03-29T02:30:00Z"), Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 1 * * *", 3*time.Hour, "Europe/Berlin")})},
			reason: as.WaitingReasonFreezeWindow, after: 30 * time.Minute, msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-29T03:00:00Z",
		},
		"the night of the switch back to winter time": {
			// 25 October 2026, 00:30 CEST = 22:30 UTC on the 24th; 2h later is 00:30 UTC on the 25th (01:30 CET).
			in:     gateInput{Now: utc("2026-10-25T00:00:00Z"), Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("30 0 * * *", 2*time.Hour, "Europe/Berlin")})},
			reason: as.WaitingReasonFreezeWindow, after: 30 * time.Minute, msg: "a freeze window of Environment prod (freeze) to close: until 2026-10-25T00:30:00Z",
		},
		"a descriptor": {
			in:     gateInput{Now: utc("2026-03-01T05:00:00Z"), Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("@monthly", 24*time.Hour, "")})},
			reason: as.WaitingReasonFreezeWindow, after: 19 * time.Hour, msg: "a freeze window of Environment prod (freeze) to close: until 2026-03-02T00:00:00Z",
		},
		"an unknown time zone holds the promotion": {
			in:     gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 9 * * *", time.Hour, "Mars/Olympus")})},
			reason: as.WaitingReasonFreezeWindow, after: kernel.WaitingRetry,
			msg: `a valid freeze window: Environment prod .spec.gates.freezeWindows[0]: unknown time zone "Mars/Olympus" (fix the Environment)`,
		},
		"a cron out of range holds the promotion": {
			in:     gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("0 25 * * *", time.Hour, "")})},
			reason: as.WaitingReasonFreezeWindow, after: kernel.WaitingRetry,
			msg: `a valid freeze window: Environment prod .spec.gates.freezeWindows[0]: schedule "0 25 * * *": end of range (25) above maximum (23): 25 (fix the Environment)`,
		},
		"@every is refused": {
			in:     gateInput{Now: now, Env: gated("prod", &as.PromotionGates{FreezeWindows: windowAt("@every 1h", time.Hour, "")})},
			reason: as.WaitingReasonFreezeWindow, after: kernel.WaitingRetry,
			msg: `a valid freeze window: Environment prod .spec.gates.freezeWindows[0]: schedule "@every 1h": @every and TZ= are not supported (use timeZone) (fix the Environment)`,
		},
		"soaking in the parent": {
			in:     gateInput{Now: now, Snapshot: "s1", Env: gated("staging", nil), Parent: soaking, VerifiedInParent: &verified},
			reason: as.WaitingReasonSoakTime, after: 30 * time.Minute,
			msg: "Snapshot s1 to soak in Environment dev for 1h0m0s (verified there at 2026-03-04T09:30:00Z): until 2026-03-04T10:30:00Z",
		},
		"soaked":                             {in: gateInput{Now: now.Add(30 * time.Minute), Snapshot: "s1", Env: gated("staging", nil), Parent: soaking, VerifiedInParent: &verified}},
		"never verified in the parent":       {in: gateInput{Now: now, Snapshot: "s1", Env: gated("staging", nil), Parent: soaking}},
		"the parent has no soak time":        {in: gateInput{Now: now, Snapshot: "s1", Env: gated("staging", nil), Parent: gated("dev", nil), VerifiedInParent: &verified}},
		"soak does not hold a rollback":      {in: gateInput{Now: now, Rollback: true, Env: gated("staging", nil), Parent: soaking, VerifiedInParent: &verified}},
		"the child's own soak is not a gate": {in: gateInput{Now: now, Env: gated("staging", &as.PromotionGates{SoakTime: dur(time.Hour)}), VerifiedInParent: &verified}},
		"no approval yet": {
			in:     gateInput{Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: two})},
			reason: as.WaitingReasonAwaitingApproval, after: kernel.WaitingRetry,
			msg: "approvals of Snapshot s1 into Environment prod: 0 of 2; waiting for user alice or bob or carol or a member of group ops",
		},
		"one of two; duplicates, strangers and other Snapshots, Environments, Applications and namespaces do not count": {
			in: gateInput{Application: "app", Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: two}), Approvals: []as.PromotionApproval{
				approval("s1", "prod", "alice"), approval("s1", "prod", "alice"), approval("s1", "prod", "mallory"),
				approval("s0", "prod", "bob"), approval("s1", "staging", "bob"),
				func() as.PromotionApproval {
					a := approval("s1", "prod", "bob")
					a.Spec.Application = "other"
					return a
				}(),
				func() as.PromotionApproval { a := approval("s1", "prod", "carol"); a.Namespace = "other"; return a }(),
			}},
			reason: as.WaitingReasonAwaitingApproval, after: kernel.WaitingRetry,
			msg: "approvals of Snapshot s1 into Environment prod: 1 of 2, approved by alice; waiting for user bob or carol or a member of group ops",
		},
		"two of two, one by group": {
			in: gateInput{Application: "app", Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: two}), Approvals: []as.PromotionApproval{
				approval("s1", "prod", "alice"), approval("s1", "prod", "dave", "ops")}},
		},
		"anyone counts when the gate names nobody": {
			in: gateInput{Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1}}), Approvals: []as.PromotionApproval{approval("s1", "prod", "zed")}},
		},
		"approvals do not hold a rollback by default": {
			in: gateInput{Rollback: true, Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: two})},
		},
		"a claim not bound yet": {
			in: gateInput{Env: gated("prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}}),
				Claim: &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}},
			reason: as.WaitingReasonClaimNotBound, after: kernel.WaitingRetry, msg: "DeploymentTargetClaim c of Environment prod to be bound (phase Pending)",
		},
		"a lost claim": {
			in:     gateInput{Env: gated("prod", nil), Claim: &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: as.DeploymentTargetClaimStatus{Phase: as.DeploymentTargetClaimPhaseLost}}},
			reason: as.WaitingReasonClaimNotBound, after: kernel.WaitingRetry, msg: "DeploymentTargetClaim c of Environment prod to be bound (phase Lost)",
		},
		"a bound claim": {
			in: gateInput{Env: gated("prod", nil), Claim: &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: as.DeploymentTargetClaimStatus{Phase: as.DeploymentTargetClaimPhaseBound}}},
		},
		"the freeze is reported before missing approvals": {
			in:     gateInput{Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: two, Freeze: &as.FreezeSwitch{Frozen: true}})},
			reason: as.WaitingReasonFrozen, after: kernel.WaitingRetry, msg: "Environment prod is frozen: until it is unfrozen",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			c.in.Env.Namespace = "t"
			w := gate(identified(c.in))
			if c.reason == "" {
				assert.Nil(t, w)
				return
			}
			require.NotNil(t, w)
			assert.Equal(t, c.reason, w.Reason)
			assert.Equal(t, c.msg, w.For)
			assert.Equal(t, c.after, w.After)
		})
	}
}

func TestVerifiedAt(t *testing.T) {
	t1, t2 := utc("2026-03-04T09:00:00Z"), utc("2026-03-04T10:00:00Z")
	run := func(app, snap string, steps ...as.PromotionRunEnvironmentStatus) as.PromotionRun {
		return as.PromotionRun{Spec: as.PromotionRunSpec{Application: app, Snapshot: snap},
			Status: as.PromotionRunStatus{EnvironmentStatus: steps, SnapshotIdentity: snapID}}
	}
	step := func(env string, s as.PromotionRunEnvironmentStatusField, at *time.Time) as.PromotionRunEnvironmentStatus {
		st := as.PromotionRunEnvironmentStatus{EnvironmentName: env, Status: s}
		if at != nil {
			st.VerifiedTime = &metav1.Time{Time: *at}
		}
		return st
	}
	runs := []as.PromotionRun{
		run("app", "s1", step("dev", as.PromotionRunEnvironmentStatusSuccess, &t1), step("staging", as.PromotionRunEnvironmentStatusInProgress, nil)),
		run("app", "s1", step("dev", as.PromotionRunEnvironmentStatusSuccess, &t2)),
		run("app", "s2", step("staging", as.PromotionRunEnvironmentStatusSuccess, &t1)),
		run("other", "s1", step("staging", as.PromotionRunEnvironmentStatusSuccess, &t1)),
	}
	assert.Equal(t, &t2, verifiedAt(runs, "app", "s1", snapID, "dev"), "the latest verification counts")
	assert.Nil(t, verifiedAt(runs, "app", "s1", snapID, "staging"), "in progress, other Snapshots and Applications do not count")
	assert.Nil(t, verifiedAt(runs, "app", "s3", snapID, "dev"))
	recreated := as.SnapshotIdentity{UID: "u2", Digest: snapID.Digest}
	assert.Nil(t, verifiedAt(runs, "app", "s1", recreated, "dev"), "a Snapshot re-created under the name was never verified")
	assert.Nil(t, verifiedAt(runs, "app", "s1", as.SnapshotIdentity{UID: snapID.UID, Digest: "sha256:other"}, "dev"), "other content was never verified")
	assert.Nil(t, verifiedAt(runs, "app", "s1", as.SnapshotIdentity{}, "dev"), "a missing Snapshot was never verified")
	legacy := runs[1]
	legacy.Status.SnapshotIdentity = as.SnapshotIdentity{}
	assert.Nil(t, verifiedAt([]as.PromotionRun{legacy}, "app", "s1", snapID, "dev"), "a run that recorded no identity verified nothing known")
}
