package isolation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// installApprovalPolicy installs the approval admission policy as shipped.
func installApprovalPolicy(t *testing.T) {
	t.Helper()
	installPolicy(t, "promotion-approvals.yaml")
}

// installPolicy installs the admission policy of manifests/install/<file>
// with its parameter (the sidecar's ServiceAccount).
func installPolicy(t *testing.T, file string) {
	t.Helper()
	_, err := stack.InstallPolicy(context.Background(), k8s, file)
	require.NoError(t, err)
}

// gateTenant is a tenant namespace whose user may create approvals and
// patch Environments there (and nowhere else), with Application app,
// Snapshot snap and Environment prod asking for one approval.
func gateTenant(t *testing.T, user string) string {
	t.Helper()
	ctx := context.Background()
	ns := "gates-" + rand.String(5)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{as.GroupVersion.Group}, Resources: []string{"promotionapprovals", "environments", "promotionruns"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: as.ApplicationSpec{DisplayName: "app"}}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec: as.SnapshotSpec{Application: "app", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/x/fe:v1"}}}}))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"},
		Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1}}}}))
	return ns
}

func impersonating(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := *kube.Config
	cfg.Impersonate.UserName = user
	cfg.Impersonate.Groups = []string{"system:authenticated"}
	c, err := client.New(&cfg, client.Options{Scheme: k8s.Scheme()})
	require.NoError(t, err)
	return c
}

// TestTenantsCannotApproveOrFreezeAnothersEnvironment: with the shipped
// admission policy on the real API server and the sidecar running, a tenant
// cannot approve for, or freeze, another tenant's Environment, cannot approve
// as someone else, and its approvals never open another tenant's gate (even
// for the same names).
func TestTenantsCannotApproveOrFreezeAnothersEnvironment(t *testing.T) {
	ctx := context.Background()
	installApprovalPolicy(t)
	alice, bob := "alice-"+rand.String(4), "bob-"+rand.String(4)
	nsA, nsB := gateTenant(t, alice), gateTenant(t, bob)
	asAlice := impersonating(t, alice)

	// Bob's promotion waits for an approval.
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "to-prod"},
		Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	require.NoError(t, k8s.Create(ctx, run))
	waiting := func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return r.Status.State == as.PromotionRunStateWaiting && c != nil && c.Reason == as.WaitingReasonAwaitingApproval
	}
	stack.WaitFor(t, k8s, run, wait, "awaiting approval", waiting)

	// Alice's own approval (once her RBAC is in the API server's cache).
	mine := func(name, user, env string) *as.PromotionApproval {
		return &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: name},
			Spec: as.PromotionApprovalSpec{Snapshot: "snap", Environment: env, Approver: as.Approver{User: user}}}
	}
	require.Eventually(t, func() bool { return asAlice.Create(ctx, mine("own", alice, "prod")) == nil }, wait, tick, "alice cannot approve in her own namespace")

	// In bob's namespace: RBAC refuses, whatever the approver.
	for _, user := range []string{alice, bob} {
		a := mine("theirs", user, "prod")
		a.Namespace = nsB
		err := asAlice.Create(ctx, a)
		assert.True(t, apierrors.IsForbidden(err), "alice approving in %s as %s: %v", nsB, user, err)
	}
	// As bob, in her own namespace: the admission policy refuses (once it has
	// reached the API server's policy cache, a moment after its creation: an
	// approval made before then is not what this test is about).
	var err error
	require.Eventually(t, func() bool {
		err = asAlice.Create(ctx, mine("as-bob-"+rand.String(4), bob, "prod"))
		return err != nil
	}, wait, tick, "the admission policy never refused alice approving as %s", bob)
	assert.Contains(t, err.Error(), "spec.approver.user must be "+alice)
	// Bob's Environment by a path: the CRD refuses it.
	err = asAlice.Create(ctx, mine("path", alice, nsB+"/prod"))
	assert.True(t, apierrors.IsInvalid(err), "an Environment of another namespace by path: %v", err)
	// Freezing bob's Environment: RBAC refuses.
	err = asAlice.Patch(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "prod"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"gates":{"freeze":{"frozen":true}}}}`)))
	assert.True(t, apierrors.IsForbidden(err), "alice freezing %s/prod: %v", nsB, err)

	// Alice's approval of the same names in her namespace does not let bob's run in.
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && !waiting(got)
	}, 3*time.Second, tick, "another tenant's approval opened the gate")
	env := &as.Environment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: nsB, Name: "prod"}, env))
	assert.Nil(t, env.Spec.Gates.Freeze, "bob's Environment was frozen")
}
