//go:build !unit

package isolation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Hostile tenants against what a gate approved (issue 33): a developer
// replaces an approved Snapshot, or approves in another's name while the
// API server does not check who approves.

// installApprovalPolicies installs every shipped policy: approvals count
// only while all of them are live as shipped.
func installApprovalPolicies(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, stack.InstallPolicies(ctx, k8s))
	// Once the API server enforces them (its policy cache), and past the
	// grace within which the sidecar trusts no approval yet.
	forged := &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "forged-"},
		Spec: as.PromotionApprovalSpec{Snapshot: "s", Environment: "e", Approver: as.Approver{User: "someone-else"}}}
	require.Eventually(t, func() bool {
		a := forged.DeepCopy()
		if k8s.Create(ctx, a) == nil {
			_ = k8s.Delete(ctx, a)
			return false
		}
		return true
	}, wait, tick, "the approval policy never took effect")
	time.Sleep(3 * time.Second)
}

// mayWriteSnapshots lets user create and delete Snapshots in ns, as a
// developer of the tenant may.
func mayWriteSnapshots(t *testing.T, ns, user string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "developer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{as.GroupVersion.Group}, Resources: []string{"snapshots"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "developer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "developer"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))
}

func awaitingApproval(msg string) func(*as.PromotionRun) bool {
	return func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return r.Status.State == as.PromotionRunStateWaiting && c != nil && c.Reason == as.WaitingReasonAwaitingApproval && strings.Contains(c.Message, msg)
	}
}

// stillWaiting asserts the run stays Waiting for a while.
func stillWaiting(t *testing.T, run *as.PromotionRun, why string) {
	t.Helper()
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(run), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 3*time.Second, tick, why)
}

// TestAReplacedSnapshotInheritsNoApproval: the release manager approves
// Snapshot snap into prod (as the CLI does: its UID and content digest, and
// once more by name only); the developer deletes snap and creates it again
// with another image, then promotes it: the run waits for an approval of
// the new Snapshot and never goes Active on the old one's approvals.
func TestAReplacedSnapshotInheritsNoApproval(t *testing.T) {
	ctx := context.Background()
	installApprovalPolicies(t)
	rm, dev := "rm-"+rand.String(4), "dev-"+rand.String(4)
	ns := gateTenant(t, rm)
	mayWriteSnapshots(t, ns, dev)
	asRM, asDev := impersonating(t, rm), impersonating(t, dev)

	snap := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap"}, snap))
	approve := func(name string, id as.SnapshotIdentity) {
		a := &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: as.PromotionApprovalSpec{Snapshot: "snap", SnapshotIdentity: id, Environment: "prod", Approver: as.Approver{User: rm}}}
		require.Eventually(t, func() bool { return asRM.Create(ctx, a.DeepCopy()) == nil }, wait, tick, "the release manager cannot approve")
	}
	approve("by-identity", snap.Identity())
	time.Sleep(1100 * time.Millisecond)
	approve("by-name", as.SnapshotIdentity{})

	// The developer replaces it.
	require.Eventually(t, func() bool {
		err := asDev.Delete(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"}})
		return err == nil || apierrors.IsNotFound(err)
	}, wait, tick, "the developer cannot delete the Snapshot")
	require.Eventually(t, func() bool {
		return asDev.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
			Spec: as.SnapshotSpec{Application: "app", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/evil/fe:latest"}}}}) == nil
	}, wait, tick, "the developer cannot create the Snapshot again")

	// An edit of the content instead is refused by the CRD.
	replaced := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap"}, replaced))
	assert.NotEqual(t, snap.Identity(), replaced.Identity())
	edited := replaced.DeepCopy()
	edited.Spec.Components[0].ContainerImage = "quay.io/evil/fe:other"
	err := asDev.Update(ctx, edited)
	assert.True(t, apierrors.IsInvalid(err), "the Snapshot's components were edited: %v", err)

	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-prod"},
		Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	require.NoError(t, k8s.Create(ctx, run))
	stack.WaitFor(t, k8s, run, wait, "awaiting an approval of the new Snapshot", awaitingApproval("0 of 1"))
	stillWaiting(t, run, "the replaced Snapshot's approvals let the new one in")

	// The release manager approves what is there now: it goes in.
	approve("new", replaced.Identity())
	stack.WaitFor(t, k8s, run, wait, "let in", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive || r.Status.State == as.PromotionRunStateCompleted
	})
}

// TestAForgedApprovalCountsForNothingWithoutThePolicy: with the approval
// policy's binding switched to Warn (or deleted), a tenant approves in the
// release manager's name and the API server admits it: the gate holds with
// ApprovalIdentityNotEnforced, and once the binding is back the forged
// approval still counts for nothing.
func TestAForgedApprovalCountsForNothingWithoutThePolicy(t *testing.T) {
	ctx := context.Background()
	installApprovalPolicies(t)
	dev := "dev-" + rand.String(4)
	ns := gateTenant(t, dev)
	asDev := impersonating(t, dev)

	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: "gitops-service-promotion-approvals"}, binding))
	shipped := binding.DeepCopy()
	restore := func() {
		_ = k8s.Delete(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: shipped.Name}})
		require.Eventually(t, func() bool {
			return k8s.Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: shipped.Name, Labels: shipped.Labels}, Spec: shipped.Spec}) == nil
		}, wait, tick)
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			restore()
		}
	})
	binding.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
	require.NoError(t, k8s.Update(ctx, binding))

	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-prod"},
		Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	require.NoError(t, k8s.Create(ctx, run))
	stack.WaitFor(t, k8s, run, wait, "held: identity not enforced", func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return r.Status.State == as.PromotionRunStateWaiting && c != nil && c.Reason == as.WaitingReasonApprovalIdentityNotEnforced
	})
	forged := &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged"},
		Spec: as.PromotionApprovalSpec{Snapshot: "snap", Environment: "prod", Approver: as.Approver{User: "release-manager"}}}
	require.Eventually(t, func() bool { return asDev.Create(ctx, forged.DeepCopy()) == nil }, wait, tick, "the Warn binding still refused the forged approval")
	stillWaiting(t, run, "a forged approval let the run in while identity was not enforced")

	restore()
	restored = true
	stack.WaitFor(t, k8s, run, wait, "waiting for a real approval", awaitingApproval("0 of 1"))
	stillWaiting(t, run, "an approval forged while the policy was off counted once it was back")
}

// TestMintedServiceAccountsAndOnePersonDoNotMakeUpTheNumber: where prod asks
// for two approvals and names nobody, a namespace admin's ServiceAccounts
// approving as themselves, and one person approving as alice and (through
// the panel) as argocd:alice, make one approval, not four.
func TestMintedServiceAccountsAndOnePersonDoNotMakeUpTheNumber(t *testing.T) {
	ctx := context.Background()
	installApprovalPolicies(t)
	alice, bob := "alice-"+rand.String(4), "bob-"+rand.String(4)
	ns := gateTenant(t, alice)
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "others"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: bob},
			{Kind: rbacv1.ServiceAccountKind, Name: "bot1", Namespace: ns}, {Kind: rbacv1.ServiceAccountKind, Name: "bot2", Namespace: ns},
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:serviceaccount:argocd:gitops-service"}}}))
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		env := &as.Environment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, env); err != nil {
			return err
		}
		env.Spec.Gates.Approvals.Required = 2
		return k8s.Update(ctx, env)
	}))
	snap := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap"}, snap))

	approveAs := func(user, as_ string) {
		c := impersonating(t, user)
		a := &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "approval-"},
			Spec: as.PromotionApprovalSpec{Snapshot: "snap", SnapshotIdentity: snap.Identity(), Environment: "prod", Approver: as.Approver{User: as_}}}
		var err error
		require.Eventually(t, func() bool { err = c.Create(ctx, a.DeepCopy()); return err == nil }, wait, tick, "%s approving as %s: %v", user, as_, err)
	}
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-prod"},
		Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	require.NoError(t, k8s.Create(ctx, run))
	for _, bot := range []string{"bot1", "bot2"} {
		sa := "system:serviceaccount:" + ns + ":" + bot
		approveAs(sa, sa)
	}
	approveAs(alice, alice)
	approveAs("system:serviceaccount:argocd:gitops-service", "argocd:"+alice)
	stack.WaitFor(t, k8s, run, wait, "one approval counted", awaitingApproval("1 of 2, approved by "+alice+";"))
	stillWaiting(t, run, "ServiceAccounts or a second name of one person made up the number")

	approveAs(bob, bob)
	stack.WaitFor(t, k8s, run, wait, "let in by two people", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive || r.Status.State == as.PromotionRunStateCompleted
	})
}
