//go:build !unit

package promotionrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// recreateSnapshot deletes Snapshot name of appa and creates it again with image.
func recreateSnapshot(t *testing.T, ns, name, image string) *as.Snapshot {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8s.Delete(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &as.Snapshot{}))
	}, wait, tick)
	snapshot(t, ns, name, image)
	s := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s))
	return s
}

func getSnapshot(t *testing.T, ns, name string) *as.Snapshot {
	t.Helper()
	s := &as.Snapshot{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s))
	return s
}

// TestApprovalsDoNotCarryOverToAnotherSnapshotOfTheName: a release manager
// approves Snapshot snap-a; a developer deletes it and creates it again with
// another image: the run waits for an approval of the new one, whether the
// approval named the Snapshot's identity (the CLI, the panel) or only its
// name; an edit of the content (where the API server allows it) and a
// same-named Snapshot in another namespace inherit nothing either. The
// history's approvedBy names whom the gate counted, one per person.
func TestApprovalsDoNotCarryOverToAnotherSnapshotOfTheName(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	playArgo(t, ns)
	setGates(t, ns, "staging", &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1}})
	alice := actingAs(t, ns, "alice")
	approve := func(name string, id as.SnapshotIdentity) {
		createAs(t, alice, &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: as.PromotionApprovalSpec{Snapshot: "snap-a", SnapshotIdentity: id, Environment: "staging", Approver: as.Approver{User: "alice"}}})
	}
	approve("by-identity", getSnapshot(t, ns, "snap-a").Identity())
	time.Sleep(1100 * time.Millisecond) // the by-name approval in a later second than the Snapshot
	approve("by-name", as.SnapshotIdentity{})

	// Replaced with another image: neither approval counts.
	recreated := recreateSnapshot(t, ns, "snap-a", "quay.io/x/fe:evil")
	r := manual(ns, "to-staging", "appa", "snap-a", "staging")
	require.NoError(t, k8s.Create(ctx, r))
	waitRun(t, r, "awaiting an approval of the new Snapshot", waitingFor(as.WaitingReasonAwaitingApproval, "approvals of Snapshot snap-a into Environment staging: 0 of 1"))
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(r), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 2*time.Second, tick, "an approval of the replaced Snapshot let the run in")

	// The same content in another namespace, approved there by the same
	// person: nothing of it counts here.
	other := tenant(t)
	createAs(t, actingAs(t, other, "alice"), &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "there"},
		Spec: as.PromotionApprovalSpec{Snapshot: "snap-a", SnapshotIdentity: recreated.Identity(), Environment: "staging", Approver: as.Approver{User: "alice"}}})
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(r), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 2*time.Second, tick, "another namespace's approval let the run in")

	// Approved as it is now, also by argocd:alice (the same person, through
	// the panel): the run goes in, and the history names alice once.
	approve("new", recreated.Identity())
	createAs(t, actingAs(t, ns, sidecarSA), &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "panel"},
		Spec: as.PromotionApprovalSpec{Snapshot: "snap-a", SnapshotIdentity: recreated.Identity(), Environment: "staging", Approver: as.Approver{User: "argocd:alice"}}})
	got := waitRun(t, r, "promoted", succeeded)
	assert.Equal(t, recreated.Identity(), got.Status.SnapshotIdentity, "the run records what it deployed")
	h := getHistory(t, ns, "staging")
	require.Len(t, h.Status.Entries, 1)
	assert.Equal(t, []string{"alice"}, h.Status.Entries[0].ApprovedBy, "approvedBy: whom the gate counted, one per person")
	assert.Equal(t, recreated.Identity(), h.Status.Entries[0].SnapshotIdentity)

	// An edit of the content (refused by the shipped CRD; this suite's CRDs
	// go without admission checks): the approvals of the content before do
	// not count for it.
	r2 := manual(ns, "again", "appa", "snap-a", "staging")
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := getSnapshot(t, ns, "snap-a")
		s.Spec.Components[0].ContainerImage = "quay.io/x/fe:edited"
		return k8s.Update(ctx, s)
	})
	if apierrors.IsInvalid(err) {
		t.Logf("the API server refuses the edit: %v", err)
		return
	}
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, r2))
	waitRun(t, r2, "awaiting an approval of the edited content", waitingFor(as.WaitingReasonAwaitingApproval, "0 of 1"))
}

// TestSoakCountsFromTheVerificationOfThisSnapshot: a Snapshot re-created
// under the name of one verified in dev earlier soaks from its own
// verification, not the old one's.
func TestSoakCountsFromTheVerificationOfThisSnapshot(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	playArgo(t, ns)
	setGates(t, ns, "dev", &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Hour}})
	old := run(t, manual(ns, "old-to-dev", "appa", "snap-a", "dev"), "verified in dev", succeeded)
	oldVerified := old.Status.EnvironmentStatus[0].VerifiedTime

	recreateSnapshot(t, ns, "snap-a", "quay.io/x/fe:v9")
	// Never verified in dev: dev's soak does not hold it (as any Snapshot
	// never verified there), so nothing of the old verification counts.
	r := manual(ns, "to-staging", "appa", "snap-a", "staging")
	require.NoError(t, k8s.Create(ctx, r))
	waitRun(t, r, "not held by the old Snapshot's soak", func(r *as.PromotionRun) bool {
		return r.Status.State != as.PromotionRunStateWaiting && r.Status.State != ""
	})
	waitRun(t, r, "done", func(r *as.PromotionRun) bool { return r.Status.State == as.PromotionRunStateCompleted })

	// Verified in dev itself: its soak counts from its own verification.
	time.Sleep(1100 * time.Millisecond)
	mine := run(t, manual(ns, "new-to-dev", "appa", "snap-a", "dev"), "verified in dev", succeeded)
	verified := mine.Status.EnvironmentStatus[0].VerifiedTime
	require.True(t, verified.After(oldVerified.Time))
	r2 := manual(ns, "to-staging-2", "appa", "snap-a", "staging")
	require.NoError(t, k8s.Create(ctx, r2))
	waitRun(t, r2, "soaking from its own verification", waitingFor(as.WaitingReasonSoakTime, "verified there at "+verified.UTC().Format(time.RFC3339)))
}

// TestApprovalsHoldWhileIdentityIsNotEnforced: with the approval policy's
// binding deleted, or tampered with (Warn instead of Deny), a gate that
// needs approvals holds with ApprovalIdentityNotEnforced and a Warning,
// whatever approvals exist; once restored, approvals written meanwhile do not
// count, a new one does.
func TestApprovalsHoldWhileIdentityIsNotEnforced(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	setGates(t, ns, "dev", &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1}})
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: "gitops-service-promotion-approvals"}, binding))
	shipped := binding.DeepCopy()
	restore := func() {
		_ = k8s.Delete(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: shipped.Name}})
		require.Eventually(t, func() bool {
			b := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: shipped.Name, Labels: shipped.Labels}, Spec: shipped.Spec}
			return k8s.Create(ctx, b) == nil
		}, wait, tick)
	}
	t.Cleanup(func() {
		b := &admissionv1.ValidatingAdmissionPolicyBinding{}
		if k8s.Get(ctx, client.ObjectKeyFromObject(shipped), b) != nil || b.Spec.ValidationActions[0] != admissionv1.Deny {
			restore()
		}
		require.NoError(t, policiesEnforced(ctx))
	})

	// Tampered: Warn instead of Deny. A forged approval is admitted (with a
	// warning) and does not count.
	binding.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
	require.NoError(t, k8s.Update(ctx, binding))
	r := manual(ns, "to-dev", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, r))
	waitRun(t, r, "held: identity not enforced", waitingFor(as.WaitingReasonApprovalIdentityNotEnforced,
		"approvals into Environment dev to be enforced: the API server does not check who approves (ValidatingAdmissionPolicyBinding gitops-service-promotion-approvals is missing or differs"))
	stack.WaitForEvent(t, k8s, r, corev1.EventTypeWarning, as.WaitingReasonApprovalIdentityNotEnforced, "promotion-approvals.yaml", wait)
	forged := func(name string) *as.PromotionApproval {
		return &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: as.PromotionApprovalSpec{Snapshot: "snap-a", Environment: "dev", Approver: as.Approver{User: "release-manager"}}}
	}
	require.Eventually(t, func() bool { return k8s.Create(ctx, forged("forged-warn")) == nil }, wait, tick, "Warn still refuses")

	// Deleted binding: the same.
	require.NoError(t, k8s.Delete(ctx, binding))
	require.NoError(t, k8s.Create(ctx, forged("forged-deleted")))
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(r), got) == nil && !waitingFor(as.WaitingReasonApprovalIdentityNotEnforced, "")(got)
	}, 3*time.Second, tick, "a run went on while identity was not enforced")

	// Restored: the forged approvals were written before it and do not count.
	restore()
	require.NoError(t, policiesEnforced(ctx))
	waitRun(t, r, "waiting for an approval written while enforced", waitingFor(as.WaitingReasonAwaitingApproval, "0 of 1"))
	createAs(t, actingAs(t, ns, "alice"), &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "real"},
		Spec: as.PromotionApprovalSpec{Snapshot: "snap-a", SnapshotIdentity: getSnapshot(t, ns, "snap-a").Identity(), Environment: "dev", Approver: as.Approver{User: "alice"}}})
	waitRun(t, r, "started", func(r *as.PromotionRun) bool { return r.Status.State != as.PromotionRunStateWaiting })
}

// TestRejectionAndRollbackTargetAreOfTheSnapshotNotTheName: a Snapshot
// re-created under a rejected name is not rejected, and one re-created under
// the name of the last verified Snapshot is no rollback target.
func TestRejectionAndRollbackTargetAreOfTheSnapshotNotTheName(t *testing.T) {
	ns := tenant(t)
	playArgo(t, ns)
	snapshot(t, ns, "snap-a2", "quay.io/x/fe:v2")
	run(t, manual(ns, "p1", "appa", "snap-a", "staging"), "verified", succeeded)
	run(t, manual(ns, "p2", "appa", "snap-a2", "staging"), "verified", succeeded)
	run(t, rollback(ns, "rb", "snap-a2", "staging"), "rolled back", succeeded)
	h := getHistory(t, ns, "staging")
	require.Len(t, h.Status.Rejected, 1)
	assert.True(t, h.Status.Rejected[0].SnapshotIdentity.Known(), "the rejection records what it rejected")

	// snap-a2 again, other content: not rejected.
	recreateSnapshot(t, ns, "snap-a2", "quay.io/x/fe:v3")
	run(t, manual(ns, "p3", "appa", "snap-a2", "staging"), "the new snap-a2 promoted", succeeded)

	// snap-a again, other content: it was never verified in staging, so
	// rolling the new snap-a2 back finds nothing to go back to.
	recreateSnapshot(t, ns, "snap-a", "quay.io/x/fe:v9")
	run(t, rollback(ns, "rb2", "snap-a2", "staging"), "refused", failedWith("no Snapshot other than snap-a2 was verified in Environment staging"))
	assert.Equal(t, "snap-a2", bindingSnapshot(t, ns, "staging"))
}
