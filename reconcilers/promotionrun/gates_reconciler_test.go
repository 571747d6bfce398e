//go:build !unit

package promotionrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// waitingFor says the run waits (state Waiting) with the one Waiting
// condition of reason, its message containing msg.
func waitingFor(reason, msg string) func(*as.PromotionRun) bool {
	return func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return r.Status.State == as.PromotionRunStateWaiting && c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason &&
			strings.Contains(c.Message, msg)
	}
}

// startedWithoutWaiting: Active, and the Waiting condition is gone.
func startedWithoutWaiting(r *as.PromotionRun) bool {
	return r.Status.State == as.PromotionRunStateActive && meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting) == nil
}

// updateEnv changes Environment name from a fresh read, retried on conflict:
// the environment reconciler writes it too.
func updateEnv(t *testing.T, ns, name string, change func(*as.Environment)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		env := &as.Environment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, env); err != nil {
			return err
		}
		change(env)
		return k8s.Update(context.Background(), env)
	}))
}

// setGates sets the gates of Environment name.
func setGates(t *testing.T, ns, name string, g *as.PromotionGates) {
	t.Helper()
	updateEnv(t, ns, name, func(env *as.Environment) { env.Spec.Gates = g })
}

// noBindingFor asserts nothing was bound to env while the run waited.
func noBindingFor(t *testing.T, ns, env string) {
	t.Helper()
	for _, b := range bindings(t, ns) {
		assert.NotEqual(t, env, b.Spec.Environment, "a gated run bound %s", env)
	}
}

func TestFrozenEnvironmentHoldsARunUntilUnfrozen(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	setGates(t, ns, "dev", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true, By: "alice", Reason: "INC-42"}})
	run := manual(ns, "to-dev", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "waiting for the freeze", waitingFor(as.WaitingReasonFrozen, "Environment dev is frozen by alice (INC-42): until it is unfrozen"))
	waitRun(t, run, "Ready=Unknown with the gate's reason", readyIs(metav1.ConditionUnknown, as.WaitingReasonFrozen))
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 2*time.Second, tick, "a run into a frozen Environment started")
	noBindingFor(t, ns, "dev")

	// Unfreezing wakes it (the Environment's watch), well before WaitingRetry.
	setGates(t, ns, "dev", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: false}})
	got := &as.PromotionRun{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && startedWithoutWaiting(got)
	}, 10*time.Second, tick, "the run did not start when the Environment was unfrozen")
}

func TestAFreezeWindowHoldsARunUntilItCloses(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	// A daily window that opened at the start of this minute and closes in 8 s:
	// nothing but the requeue at its close wakes the run.
	now := time.Now().UTC()
	opened := now.Truncate(time.Minute)
	closes := now.Add(8 * time.Second).Truncate(time.Second)
	setGates(t, ns, "dev", &as.PromotionGates{FreezeWindows: []as.FreezeWindow{{
		Schedule: opened.Format("4 15 * * *"), Duration: metav1.Duration{Duration: closes.Sub(opened)}, TimeZone: "UTC", Reason: "release freeze"}}})
	run := manual(ns, "to-dev", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "waiting for the window", waitingFor(as.WaitingReasonFreezeWindow,
		"a freeze window of Environment dev (release freeze) to close: until "+closes.Format(time.RFC3339)))
	noBindingFor(t, ns, "dev")
	got := waitRun(t, run, "started once the window closed", startedWithoutWaiting)
	assert.False(t, got.Status.PromotionStartTime.Time.Before(closes), "started at %s, before the window closed at %s", got.Status.PromotionStartTime, closes)
	assert.WithinDuration(t, closes, got.Status.PromotionStartTime.Time, 4*time.Second, "the run was not woken at the window's close")
}

func TestAnInvalidTimeZoneHoldsTheRunAndSaysSo(t *testing.T) {
	ns := tenant(t)
	setGates(t, ns, "dev", &as.PromotionGates{FreezeWindows: []as.FreezeWindow{{Schedule: "0 0 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}}})
	run := manual(ns, "to-dev", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(context.Background(), run))
	waitRun(t, run, "held by the window it cannot read", waitingFor(as.WaitingReasonFreezeWindow, `unknown time zone "Mars/Olympus" (fix the Environment)`))
}

func TestSoakTimeHoldsTheSnapshotInTheParent(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	setGates(t, ns, "dev", &as.PromotionGates{SoakTime: &metav1.Duration{Duration: 6 * time.Second}})
	// snap-a was verified in dev 1 s ago by an earlier run (written as the
	// reconciler would, since nothing deploys without Argo CD here).
	verified := metav1.NewTime(time.Now().Add(-time.Second).Truncate(time.Second))
	earlier := manual(ns, "earlier", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, earlier))
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(earlier), earlier); err != nil {
			return err
		}
		snap := &as.Snapshot{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap-a"}, snap); err != nil {
			return err
		}
		earlier.Status = as.PromotionRunStatus{State: as.PromotionRunStateCompleted, CompletionResult: as.PromotionRunCompleteResultSuccess,
			SnapshotIdentity: snap.Identity(), PromotionStartTime: verified, EnvironmentStatus: []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "dev",
				Status: as.PromotionRunEnvironmentStatusSuccess, DisplayStatus: "done", VerifiedTime: &verified}}}
		return k8s.Status().Update(ctx, earlier)
	}))
	until := verified.Add(6 * time.Second)

	run := manual(ns, "to-staging", "appa", "snap-a", "staging")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "soaking", waitingFor(as.WaitingReasonSoakTime, "Snapshot snap-a to soak in Environment dev for 6s (verified there at "+
		verified.UTC().Format(time.RFC3339)+"): until "+until.UTC().Format(time.RFC3339)))
	noBindingFor(t, ns, "staging")
	got := waitRun(t, run, "started once soaked", startedWithoutWaiting)
	assert.False(t, got.Status.PromotionStartTime.Time.Before(until), "started at %s, before the soak ended at %s", got.Status.PromotionStartTime, until)

	// Another Snapshot never verified in dev is not held by dev's soak time.
	other := manual(ns, "other", "appb", "snap-b", "staging")
	require.NoError(t, k8s.Create(ctx, other))
	waitRun(t, other, "started", startedWithoutWaiting)
}

func TestTwoApprovalsLetARunIn(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	setGates(t, ns, "dev", &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 2, Users: []string{"alice", "bob"}, Groups: []string{"release-managers"}}})
	run := manual(ns, "to-dev", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "awaiting approval", waitingFor(as.WaitingReasonAwaitingApproval,
		"approvals of Snapshot snap-a into Environment dev: 0 of 2; waiting for user alice or bob or a member of group release-managers"))
	// As the CLI and the panel do: the approval names the Snapshot's identity.
	snap := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap-a"}, snap))
	approve := func(name, user string, groups ...string) {
		createAs(t, actingAs(t, ns, user, groups...), &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: as.PromotionApprovalSpec{Snapshot: "snap-a", SnapshotIdentity: snap.Identity(), Environment: "dev", Approver: as.Approver{User: user, Groups: groups}}})
	}
	approve("alice", "alice")
	approve("alice-again", "alice")
	approve("mallory", "mallory")
	waitRun(t, run, "one of two", waitingFor(as.WaitingReasonAwaitingApproval, "1 of 2, approved by alice; waiting for user bob or a member of group release-managers"))
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 2*time.Second, tick, "one approval of two let the run in")
	approve("dave", "dave", "release-managers")
	got := &as.PromotionRun{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && startedWithoutWaiting(got)
	}, 10*time.Second, tick, "the second approval (the approval's watch) did not start the run")
}

func TestAnUnboundClaimHoldsTheRun(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	// A claim of a class nobody provisions stays Pending.
	require.NoError(t, k8s.Create(ctx, &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claim"},
		Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: "nobody-provisions-this"}}))
	updateEnv(t, ns, "dev", func(env *as.Environment) {
		env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "claim"
	})
	run := manual(ns, "to-dev", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "waiting for the claim", waitingFor(as.WaitingReasonClaimNotBound, "DeploymentTargetClaim claim of Environment dev to be bound (phase Pending)"))
	noBindingFor(t, ns, "dev")
	// The Environment no longer deploys through the claim: the run starts (the Environment's watch).
	updateEnv(t, ns, "dev", func(env *as.Environment) {
		env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = ""
	})
	got := &as.PromotionRun{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && startedWithoutWaiting(got)
	}, 10*time.Second, tick, "the run did not start when the claim was no longer needed")
}
