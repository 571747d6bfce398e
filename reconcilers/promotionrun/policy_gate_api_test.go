//go:build !unit

package promotionrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// A PromotionPolicy bound by the tenant's namespace label holds a run with
// PolicyDenied; the tenant stripping its Environment's labels does not
// free it; the platform changing the rule does (the policy's watch).
func TestPromotionPolicyHoldsARunUntilItsRuleHolds(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Namespace{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return err
		}
		n.Labels = map[string]string{"policy-test": ns}
		return k8s.Update(ctx, n)
	}))
	updateEnv(t, ns, "dev", func(env *as.Environment) { env.Labels = map[string]string{"tier": "prod"} })
	policy := &as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "registries-" + ns}, Spec: as.PromotionPolicySpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"policy-test": ns}},
		Rules:             []as.PolicyRule{{Name: "our-registry", Expression: "images.all(i, i.registry == 'registry.example.com')", Message: "images from registry.example.com only"}},
	}}
	require.NoError(t, k8s.Create(ctx, policy))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), policy) })

	run := manual(ns, "to-dev", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "denied by the policy", waitingFor(as.WaitingReasonPolicyDenied,
		"PromotionPolicy registries-"+ns+" rule our-registry to allow the promotion (images from registry.example.com only); it saw images=[appa-fe: quay.io/x/fe:v1]"))

	updateEnv(t, ns, "dev", func(env *as.Environment) { env.Labels = nil })
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 2*time.Second, tick, "removing the Environment's labels let the run in")
	noBindingFor(t, ns, "dev")

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			return err
		}
		policy.Spec.Rules[0].Expression = "images.all(i, i.registry in ['registry.example.com', 'quay.io'])"
		return k8s.Update(ctx, policy)
	}))
	waitRun(t, run, "started once the rule holds", startedWithoutWaiting)
}
