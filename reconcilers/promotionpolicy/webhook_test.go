//go:build !unit

package promotionpolicy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

func policy(rules ...string) *as.PromotionPolicy {
	p := &as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p-" + rand.String(6)}}
	for i, r := range rules {
		p.Spec.Rules = append(p.Spec.Rules, as.PolicyRule{Name: "rule-" + string(rune('a'+i)), Expression: r})
	}
	return p
}

// webhookLive waits until the API server calls the webhook with the
// sidecar's CA (it refuses a bad rule), and returns that CA.
func webhookLive(t *testing.T) []byte {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		err := k8s.Create(ctx, policy("not a bool"))
		return apierrors.IsInvalid(err)
	}, 60*time.Second, 200*time.Millisecond, "the webhook never refused a bad rule")
	cfg := &admissionv1.ValidatingWebhookConfiguration{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: webhookConfiguration}, cfg))
	return cfg.Webhooks[0].ClientConfig.CABundle
}

func TestBadRulesAreRefusedAtAdmission(t *testing.T) {
	ctx := context.Background()
	ca := webhookLive(t)
	require.NotEmpty(t, ca, "the sidecar wrote its CA into the caBundle")
	secret := &corev1.Secret{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: stack.SuiteArgoNamespace, Name: "gitops-service-webhook-tls"}, secret))
	require.Equal(t, ca, secret.Data["ca.crt"])
	// Uninstalling deletes the webhook configuration; the garbage collector
	// then deletes the Secret the manifests do not list.
	require.Len(t, secret.OwnerReferences, 1)
	assert.Equal(t, "ValidatingWebhookConfiguration", secret.OwnerReferences[0].Kind)
	cfg := &admissionv1.ValidatingWebhookConfiguration{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: secret.OwnerReferences[0].Name}, cfg))
	assert.Equal(t, cfg.UID, secret.OwnerReferences[0].UID)

	nested := "images.all(a, images.all(b, images.all(c, images.all(d, a.image + b.image + c.image + d.image != ''))))"
	for _, c := range []struct{ name, rule, want string }{
		{"syntax", "images.all(i, ", "does not compile"},
		{"not a bool", "size(images)", "not bool"},
		{"unknown field", "images.all(i, i.registy == 'x')", "does not compile"},
		{"too expensive", nested, "may cost up to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := k8s.Create(ctx, policy("true", c.rule))
			require.True(t, apierrors.IsInvalid(err), "got %v", err)
			require.Contains(t, err.Error(), "spec.rules[1].expression")
			require.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("bad selector", func(t *testing.T) {
		p := policy("true")
		p.Spec.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}
		err := k8s.Create(ctx, p)
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		require.Contains(t, err.Error(), "spec.namespaceSelector")
	})

	// A good policy is admitted and Ready; an update to a bad rule is refused.
	good := policy("images.all(i, i.registry == 'registry.example.com')")
	require.NoError(t, k8s.Create(ctx, good))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), good) })
	good = waitReady(t, good, metav1.ConditionTrue, as.PromotionPolicyReasonCompiled)
	good.Spec.Rules[0].Expression = "'x'"
	err := k8s.Update(ctx, good)
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
}

// A policy written while the webhook was not there (its configuration
// deleted) is Ready=False, InvalidRule, with a Warning Event.
func TestPolicyWrittenAroundTheWebhookIsNotReady(t *testing.T) {
	ctx := context.Background()
	ca := webhookLive(t)
	cfg := &admissionv1.ValidatingWebhookConfiguration{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: webhookConfiguration}, cfg))
	require.NoError(t, k8s.Delete(ctx, cfg))
	t.Cleanup(func() { require.NoError(t, k8s.Create(context.Background(), webhookConfig(ca))) })
	bad := policy("size(images)")
	require.Eventually(t, func() bool { return k8s.Create(ctx, bad) == nil }, 30*time.Second, 200*time.Millisecond)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), bad) })
	got := waitReady(t, bad, metav1.ConditionFalse, as.PromotionPolicyReasonInvalidRule)
	c := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	require.True(t, strings.Contains(c.Message, "spec.rules[0].expression") && strings.Contains(c.Message, "not bool"), c.Message)
	stack.WaitForEvent(t, k8s, bad, corev1.EventTypeWarning, as.PromotionPolicyReasonInvalidRule, "not bool", 30*time.Second)
}

func waitReady(t *testing.T, p *as.PromotionPolicy, status metav1.ConditionStatus, reason string) *as.PromotionPolicy {
	t.Helper()
	return stack.WaitFor(t, k8s, p, 30*time.Second, "Ready "+string(status)+" "+reason, func(p *as.PromotionPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, "Ready")
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == p.Generation
	})
}
