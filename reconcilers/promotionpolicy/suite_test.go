//go:build !unit

package promotionpolicy_test

import (
	"fmt"
	"os"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/promotionpolicy"
	"github.com/gitops-service/gitops-service/test/stack"
)

const webhookConfiguration = "gitops-service-promotionpolicies-test"

var (
	k8s  client.Client
	port int
)

// The sidecar serves the webhook on 127.0.0.1 with a certificate it makes
// for that address; the API server calls it as manifests/install's
// configuration says (failurePolicy Fail, our kind only), by URL here.
func TestMain(m *testing.M) {
	p, err := stack.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	port = p
	os.Exit(stack.RunSuite(m, "promotionpolicy", func(s *stack.Suite) error {
		k8s = s.Client
		return k8s.Create(s.Ctx, webhookConfig(nil))
	}, func(o *sidecar.Options) {
		o.PolicyWebhook = sidecar.PolicyWebhookOptions{Addr: fmt.Sprintf("127.0.0.1:%d", port), Hosts: []string{"127.0.0.1"},
			Secret: "gitops-service-webhook-tls", Configuration: webhookConfiguration}
	}))
}

func webhookConfig(caBundle []byte) *admissionv1.ValidatingWebhookConfiguration {
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, promotionpolicy.WebhookPath)
	return &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookConfiguration},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "promotionpolicies.appstudio.redhat.com",
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{"appstudio.redhat.com"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"promotionpolicies"}, Scope: ptr.To(admissionv1.ClusterScope)}}},
			FailurePolicy:           ptr.To(admissionv1.Fail),
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}}}
}
