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

// TestApprovalsCountForTheSnapshotTheyApproved: an approval binds to the
// Snapshot object and content it names, or (naming none) to a Snapshot that
// existed before it; it counts only when written while the API server
// enforced who approves.
func TestApprovalsCountForTheSnapshotTheyApproved(t *testing.T) {
	one := &as.ApprovalGate{Required: 1}
	base := identified(gateInput{Application: "app", Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: one})})
	named := func(id as.SnapshotIdentity) as.PromotionApproval {
		a := approval("s1", "prod", "alice")
		a.Spec.SnapshotIdentity = id
		return a
	}
	at := func(a as.PromotionApproval, t time.Time) as.PromotionApproval {
		a.CreationTimestamp = metav1.NewTime(t)
		return a
	}
	for name, c := range map[string]struct {
		change func(*gateInput)
		a      as.PromotionApproval
		counts bool
	}{
		"by name, the Snapshot created before it":        {a: approval("s1", "prod", "alice"), counts: true},
		"by UID and digest, this Snapshot":               {a: named(snapID), counts: true},
		"by digest only, this content":                   {a: named(as.SnapshotIdentity{Digest: snapID.Digest}), counts: true},
		"by UID and digest, a Snapshot re-created since": {a: named(snapID), change: func(in *gateInput) { in.SnapshotID.UID = "u2" }},
		"by UID and digest, other content":               {a: named(snapID), change: func(in *gateInput) { in.SnapshotID.Digest = "sha256:d2" }},
		"by digest only, other content":                  {a: named(as.SnapshotIdentity{Digest: snapID.Digest}), change: func(in *gateInput) { in.SnapshotID.Digest = "sha256:d2" }},
		"by name, the Snapshot re-created after it":      {a: approval("s1", "prod", "alice"), change: func(in *gateInput) { in.SnapshotCreated = approvedAt.Add(time.Second) }},
		"by name, the Snapshot re-created in its second": {a: approval("s1", "prod", "alice"), change: func(in *gateInput) { in.SnapshotCreated = approvedAt }},
		"the Snapshot does not exist":                    {a: approval("s1", "prod", "alice"), change: func(in *gateInput) { in.SnapshotID = as.SnapshotIdentity{} }},
		"identity not enforced":                          {a: approval("s1", "prod", "alice"), change: func(in *gateInput) { in.Identity = install.Enforcement{Problem: "x"} }},
		"written before the policies were":               {a: at(approval("s1", "prod", "alice"), enforcedSince.Add(-time.Hour))},
		"written within the policies' grace":             {a: at(approval("s1", "prod", "alice"), enforcedSince.Add(policyGrace))},
		"a ServiceAccount, when the gate names nobody":   {a: approval("s1", "prod", "system:serviceaccount:t:bot")},
		"a ServiceAccount the gate names": {a: approval("s1", "prod", "system:serviceaccount:t:bot"), change: func(in *gateInput) {
			in.Env = gated("prod", &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1, Users: []string{"system:serviceaccount:t:bot"}}})
		}, counts: true},
		"another namespace's approval of a same-named one": {a: func() as.PromotionApproval { a := approval("s1", "prod", "alice"); a.Namespace = "other"; return a }()},
		"another namespace's approval naming this content": {a: func() as.PromotionApproval { a := named(snapID); a.Namespace = "other"; return a }()},
	} {
		t.Run(name, func(t *testing.T) {
			in := base
			in.Env = in.Env.DeepCopy()
			if c.change != nil {
				c.change(&in)
			}
			in.Env.Namespace = "t"
			assert.Equal(t, c.counts, approvalCounts(in, in.Env.Spec.Gates.Approvals, c.a))
		})
	}
}

// TestOnePersonCountsOnce: alice and argocd:alice are one person; duplicates
// and ServiceAccounts do not make up an anonymous gate's number.
func TestOnePersonCountsOnce(t *testing.T) {
	two := &as.ApprovalGate{Required: 2}
	in := identified(gateInput{Application: "app", Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: two}), Approvals: []as.PromotionApproval{
		approval("s1", "prod", "alice"), approval("s1", "prod", "argocd:alice"), approval("s1", "prod", "alice"),
		approval("s1", "prod", "system:serviceaccount:t:bot1"), approval("s1", "prod", "system:serviceaccount:t:bot2"),
	}})
	in.Env.Namespace = "t"
	assert.Equal(t, []string{"alice"}, countedApprovers(in, two))
	w := gate(in)
	require.NotNil(t, w)
	assert.Equal(t, "approvals of Snapshot s1 into Environment prod: 1 of 2, approved by alice; waiting for another approver", w.For)

	in.Approvals = append(in.Approvals, approval("s1", "prod", "argocd:bob"))
	assert.Equal(t, []string{"alice", "argocd:bob"}, countedApprovers(in, two))
	assert.Nil(t, gate(in))
	assert.Equal(t, []string{"alice", "argocd:bob"}, approvedBy(in), "the history lists whom the gate counted")

	// Named users: each counts as itself, still once per person.
	named := &as.ApprovalGate{Required: 2, Users: []string{"alice", "argocd:alice"}}
	in.Env = gated("prod", &as.PromotionGates{Approvals: named})
	in.Env.Namespace = "t"
	assert.Equal(t, []string{"alice"}, countedApprovers(in, named))
}

// TestApprovedByListsOnlyWhatTheGateCounted: the audit trail leaves out
// people the gate does not name, other Snapshots' approvals, and everything
// when no approval can count.
func TestApprovedByListsOnlyWhatTheGateCounted(t *testing.T) {
	g := &as.ApprovalGate{Required: 1, Users: []string{"alice"}}
	in := identified(gateInput{Application: "app", Snapshot: "s1", Env: gated("prod", &as.PromotionGates{Approvals: g}), Approvals: []as.PromotionApproval{
		approval("s1", "prod", "alice"), approval("s1", "prod", "mallory"), approval("s0", "prod", "bob"),
		func() as.PromotionApproval {
			a := approval("s1", "prod", "alice2")
			a.Spec.SnapshotIdentity = as.SnapshotIdentity{UID: "old", Digest: "sha256:old"}
			return a
		}(),
	}})
	in.Env.Namespace = "t"
	assert.Equal(t, []string{"alice"}, approvedBy(in))

	noGate := in
	noGate.Env = gated("prod", nil)
	assert.Empty(t, approvedBy(noGate), "an Environment that asks for no approval records none")

	rollback := in
	rollback.Rollback = true
	assert.Empty(t, approvedBy(rollback), "a rollback records none")

	unenforced := in
	unenforced.Identity = install.Enforcement{Problem: "binding deleted"}
	assert.Empty(t, approvedBy(unenforced), "nothing counted while identity was not enforced")
}

// TestApprovalsHoldWhenIdentityIsNotEnforced: the gate holds with its own
// reason, whatever approvals there are; gates without approvals are not held.
func TestApprovalsHoldWhenIdentityIsNotEnforced(t *testing.T) {
	off := install.Enforcement{Problem: "ValidatingAdmissionPolicy gitops-service-promotion-approvals and its binding are not installed (promotion-approvals.yaml)"}
	in := identified(gateInput{Application: "app", Snapshot: "s1", Identity: off, Env: gated("prod", &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1}}),
		Approvals: []as.PromotionApproval{approval("s1", "prod", "alice"), approval("s1", "prod", "argocd:release-manager")}})
	in.Env.Namespace = "t"
	w := gate(in)
	require.NotNil(t, w)
	assert.Equal(t, as.WaitingReasonApprovalIdentityNotEnforced, w.Reason)
	assert.Equal(t, kernel.WaitingRetry, w.After)
	assert.Contains(t, w.For, "approvals into Environment prod to be enforced: the API server does not check who approves ("+off.Problem+")")
	assert.Contains(t, w.For, "apply manifests/install's promotion-approvals.yaml and promotion-requesters.yaml as shipped")

	frozenOnly := in
	frozenOnly.Env = gated("prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{}})
	assert.Nil(t, gate(frozenOnly), "a gate without approvals needs no identity")
	rollback := in
	rollback.Rollback = true
	assert.Nil(t, gate(rollback), "a rollback passes approvals by default, so needs no identity")
}

// TestRejectionAndRollbackTargetsAreBoundToIdentity: a Snapshot re-created
// under a rejected name is not rejected, nor is a re-created one a rollback
// target; records without identity go by name.
func TestRejectionAndRollbackTargetsAreBoundToIdentity(t *testing.T) {
	ok := as.PromotionRunCompleteResultSuccess
	h := history("prod", nil)
	h.Status.Rejected = []as.RejectedSnapshot{{Snapshot: "s1", SnapshotIdentity: snapID, PromotionRun: "rb"}, {Snapshot: "s0", PromotionRun: "old"}}
	hs := []as.PromotionHistory{h}
	r, _ := rejection(hs, "s1", snapID)
	assert.NotNil(t, r, "the rejected Snapshot is rejected")
	r, _ = rejection(hs, "s1", as.SnapshotIdentity{UID: "u2", Digest: "sha256:d2"})
	assert.Nil(t, r, "one re-created under the name is not")
	r, _ = rejection(hs, "s1", as.SnapshotIdentity{})
	assert.NotNil(t, r, "unknown identity: by name (rejects more, never less)")
	r, _ = rejection(hs, "s0", snapID)
	assert.NotNil(t, r, "a rejection without identity rejects every Snapshot of the name")

	good := entry("r1", "s2", ok)
	good.SnapshotIdentity = as.SnapshotIdentity{UID: "u-s2", Digest: "sha256:s2"}
	snap := &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "s2", UID: "u-s2"}}
	snap.Spec.Components = []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/x/fe:v1"}}
	good.SnapshotIdentity.Digest = snap.ContentDigest()
	assert.True(t, rollbackTarget(good, snap), "the Snapshot verified there")
	recreated := snap.DeepCopy()
	recreated.UID = "u-s2-again"
	assert.False(t, rollbackTarget(good, recreated), "a re-created one was never verified there")
	legacy := entry("r0", "s2", ok)
	assert.True(t, rollbackTarget(legacy, recreated), "entries written before identities go by name")

	// A rollback rejects the identity it was given, and marks only that one's entries.
	st := as.PromotionHistoryStatus{Entries: []as.PromotionHistoryEntry{good, func() as.PromotionHistoryEntry {
		e := entry("r2", "s2", ok)
		e.SnapshotIdentity = as.SnapshotIdentity{UID: "u-other", Digest: "sha256:other"}
		return e
	}()}}
	require.True(t, applyRollback(&st, "rb", "s2", good.SnapshotIdentity, metav1.Now()))
	assert.Equal(t, good.SnapshotIdentity, st.Rejected[0].SnapshotIdentity)
	assert.Equal(t, "rb", st.Entries[0].RolledBackBy)
	assert.Empty(t, st.Entries[1].RolledBackBy, "another Snapshot of the name was not rolled back")
}

// TestSameSnapshot: a run keeps the identity it started with.
func TestSameSnapshot(t *testing.T) {
	snap := &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "s1", UID: "u1"}, Spec: as.SnapshotSpec{Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "a"}}}}
	run := &as.PromotionRun{}
	assert.Nil(t, sameSnapshot(run, snap), "a run without identity records it")
	assert.Equal(t, snap.Identity(), run.Status.SnapshotIdentity)
	assert.Nil(t, sameSnapshot(run, snap))
	again := snap.DeepCopy()
	again.UID = "u2"
	r := sameSnapshot(run, again)
	require.NotNil(t, r)
	assert.Equal(t, ReasonSnapshotReplaced, r.Reason)
}
