package sidecar

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionpolicy"
)

// PolicyWebhookOptions configure the validating webhook that refuses a
// PromotionPolicy whose rules do not compile (docs/policies.md).
type PolicyWebhookOptions struct {
	// Addr is where it listens (host:port); "" or "0" disables it.
	Addr string
	// Hosts are the names (and IPs) its certificate is for: the webhook
	// Service's DNS names.
	Hosts []string
	// Secret, in the Argo CD namespace, keeps its certificate and CA.
	Secret string
	// Configuration is the ValidatingWebhookConfiguration whose caBundle
	// the sidecar writes.
	Configuration string
}

func (o PolicyWebhookOptions) enabled() bool { return o.Addr != "" && o.Addr != "0" }

// policyWebhookServer is the manager's webhook server with a certificate
// the sidecar manages, or nil when the webhook is disabled.
func policyWebhookServer(o Options, certs *promotionpolicy.Certs) (webhook.Server, error) {
	if !o.PolicyWebhook.enabled() {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(o.PolicyWebhook.Addr)
	if err != nil {
		return nil, fmt.Errorf("--policy-webhook-bind-address: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("--policy-webhook-bind-address: %w", err)
	}
	return webhook.NewServer(webhook.Options{Host: host, Port: p, TLSOpts: []func(*tls.Config){func(c *tls.Config) {
		c.GetCertificate = certs.GetCertificate
		c.MinVersion = tls.VersionTLS12
	}}}), nil
}

// policyCerts is the webhook's certificate keeper, nil when the webhook is disabled.
func policyCerts(o Options, c client.Client) *promotionpolicy.Certs {
	if !o.PolicyWebhook.enabled() {
		return nil
	}
	return &promotionpolicy.Certs{Client: c, Namespace: o.ArgoNamespace, Secret: o.PolicyWebhook.Secret,
		WebhookConfiguration: o.PolicyWebhook.Configuration, Hosts: o.PolicyWebhook.Hosts}
}

// setupPolicyWebhook serves the PromotionPolicy webhook on mgr with certs.
func setupPolicyWebhook(mgr ctrl.Manager, certs *promotionpolicy.Certs) error {
	if certs == nil {
		return nil
	}
	if err := mgr.Add(certs); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("promotionpolicy-webhook", func(*http.Request) error { return certs.Ready() }); err != nil {
		return err
	}
	return promotionpolicy.SetupWebhook(mgr)
}

// policyRegistration is the PromotionPolicy status reconciler's row.
func policyRegistration(mgr ctrl.Manager) registration {
	return registration{what: "the PromotionPolicy reconciler", concurrency: 1, kinds: []client.Object{&as.PromotionPolicy{}},
		setup: &promotionpolicy.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gitops-service")}}
}
