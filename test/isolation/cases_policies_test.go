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
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// TestTenantsCannotLeaveAPromotionPolicy: a namespace admin (Kubernetes'
// own admin role in its namespace) whose namespace a PromotionPolicy binds
// cannot write, change or delete the policy, cannot re-label its Namespace,
// and re-labelling its Environment does not let its run in; the policy does
// not hold another tenant's run.
func TestTenantsCannotLeaveAPromotionPolicy(t *testing.T) {
	ctx := context.Background()
	alice, bob := "alice-"+rand.String(4), "bob-"+rand.String(4)
	nsA, nsB := gateTenant(t, alice), gateTenant(t, bob)
	for _, ns := range []string{nsA, nsB} {
		updateEnvGates(t, ns, nil) // no approval gate: only the policy holds
	}
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: alice}}}))
	nsLabel := map[string]string{"isolation-policy": nsA}
	labelNamespace(t, nsA, nsLabel)
	policy := &as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "isolation-" + nsA}, Spec: as.PromotionPolicySpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: nsLabel},
		Rules:             []as.PolicyRule{{Name: "our-registry", Expression: "images.all(i, i.registry == 'registry.example.com')"}}}}
	require.NoError(t, k8s.Create(ctx, policy))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), policy) })

	denied := func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return r.Status.State == as.PromotionRunStateWaiting && c != nil && c.Reason == as.WaitingReasonPolicyDenied
	}
	run := func(ns string) *as.PromotionRun {
		r := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-prod"},
			Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
		require.NoError(t, k8s.Create(ctx, r))
		return r
	}
	runA := run(nsA)
	stack.WaitFor(t, k8s, runA, wait, "denied by the policy", denied)
	// Bob's namespace is not selected: his run is not held by it.
	stack.WaitFor(t, k8s, run(nsB), wait, "started", func(r *as.PromotionRun) bool { return r.Status.State == as.PromotionRunStateActive })

	asAlice := impersonating(t, alice)
	// Her RoleBindings reach the API server's cache first: she may get her Environment.
	require.Eventually(t, func() bool {
		return asAlice.Get(ctx, client.ObjectKey{Namespace: nsA, Name: "prod"}, &as.Environment{}) == nil
	}, wait, tick, "alice cannot read her own Environment")
	forbidden := map[string]error{
		"create a policy": asAlice.Create(ctx, &as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "mine-" + nsA},
			Spec: as.PromotionPolicySpec{Rules: []as.PolicyRule{{Name: "r", Expression: "true"}}}}),
		"loosen the policy": asAlice.Patch(ctx, &as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy.Name}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"namespaceSelector":{"matchLabels":{"nobody":"x"}}}}`))),
		"delete the policy": asAlice.Delete(ctx, &as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy.Name}}),
		"re-label her Namespace": asAlice.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsA}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"isolation-policy":null}}}`))),
	}
	for what, err := range forbidden {
		assert.True(t, apierrors.IsForbidden(err), "alice may %s: %v", what, err)
	}
	// What she may edit, her Environment's labels, does not free the run.
	require.NoError(t, asAlice.Patch(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "prod"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"policy-exempt":"true","tier":"dev"}}}`))))
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(runA), got) == nil && !denied(got)
	}, 3*time.Second, tick, "re-labelling the Environment let the run in")
}

func updateEnvGates(t *testing.T, ns string, g *as.PromotionGates) {
	t.Helper()
	// Retried: the Environment reconciler writes its status meanwhile.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		env := &as.Environment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "prod"}, env); err != nil {
			return err
		}
		env.Spec.Gates = g
		return k8s.Update(context.Background(), env)
	}))
}

func labelNamespace(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	n := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Name: ns}, n))
	n.Labels = labels
	require.NoError(t, k8s.Update(context.Background(), n))
}
