package notifications

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/subscriptions"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// catalogYAML is the data of the triggers and templates we ship for our
// events (keys trigger.on-promotion-* and template.promotion-*). A key of
// the same name in the platform's ConfigMap wins.
//
//go:embed catalog.yaml
var catalogYAML []byte

// GrantsKey is the key of the platform's notifications ConfigMap that says
// which of its services, and which recipients of each, the tenants of each
// namespace may subscribe to: YAML, namespace -> service -> recipients ("*":
// any recipient). Nothing is granted unless named here.
const GrantsKey = "gitops-service.tenants"

// grants are GrantsKey's value: namespace -> service -> recipients.
type grants map[string]map[string][]string

// config is what one delivery needs from the platform: the engine's
// configuration (services, triggers and templates, the platform's secret
// already substituted into the services) and the grants.
type config struct {
	engine *api.Config
	grants grants
	// ours are the triggers we ship: those of a subscription that names none.
	ours []string
	// secrets are the values of the platform's notifications Secret, which
	// no message of ours may show.
	secrets [][]byte
}

// catalog returns the data of the triggers and templates we ship.
func catalog() (map[string]string, error) {
	var data map[string]string
	if err := yaml.UnmarshalStrict(catalogYAML, &data); err != nil {
		return nil, fmt.Errorf("reading the shipped notifications catalog: %w", err)
	}
	return data, nil
}

// parseConfig is the configuration from the platform's ConfigMap and Secret
// (either may be nil: no services) over the triggers and templates we ship.
// The platform's keys win; only the platform's keys name services.
func parseConfig(cm *corev1.ConfigMap, secret *corev1.Secret) (*config, error) {
	data, err := catalog()
	if err != nil {
		return nil, err
	}
	var ours []string
	for k := range data {
		if name, ok := strings.CutPrefix(k, "trigger."); ok {
			ours = append(ours, name)
		}
	}
	slices.Sort(ours)
	merged := &corev1.ConfigMap{Data: data}
	if cm != nil {
		merged.Namespace = cm.Namespace
		maps.Copy(merged.Data, cm.Data)
	}
	if secret == nil {
		secret = &corev1.Secret{}
	}
	engine, err := api.ParseConfig(merged, secret)
	if err != nil {
		return nil, fmt.Errorf("parsing the notifications configuration: %w", err)
	}
	g := grants{}
	if raw := merged.Data[GrantsKey]; raw != "" {
		if err := yaml.UnmarshalStrict([]byte(raw), &g); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", GrantsKey, err)
		}
	}
	var secrets [][]byte
	for _, v := range secret.Data {
		if len(v) > 0 {
			secrets = append(secrets, v)
		}
	}
	return &config{engine: engine, grants: g, ours: ours, secrets: secrets}, nil
}

// destination is one subscription of an Environment: a trigger and where it sends.
type destination struct {
	Trigger string
	services.Destination
}

// subscriptionsOf are the subscriptions env's annotations make, read as Argo
// CD reads an Application's (the engine's own parser), and the reasons the
// ones the namespace may not use are refused. A subscription that names no
// trigger has the triggers we ship (not the platform's defaults, which are
// Application triggers).
func (c *config) subscriptionsOf(namespace string, annotations map[string]string) (ok []destination, refused []string) {
	// Only the subscription keys: the engine's parser hands any other
	// annotation the recipients of the one before it.
	subs := map[string]string{}
	for k, v := range annotations {
		if isSubscription(k) {
			subs[k] = v
		}
	}
	dests := subscriptions.NewAnnotations(subs).GetDestinations(c.ours, nil)
	for _, trigger := range slices.Sorted(maps.Keys(dests)) {
		for _, d := range dests[trigger] {
			if why := c.refusal(namespace, trigger, d); why != "" {
				refused = append(refused, why)
				continue
			}
			ok = append(ok, destination{Trigger: trigger, Destination: d})
		}
	}
	slices.Sort(refused)
	slices.SortFunc(ok, func(a, b destination) int {
		return strings.Compare(a.Trigger+"\x00"+a.Service+"\x00"+a.Recipient, b.Trigger+"\x00"+b.Service+"\x00"+b.Recipient)
	})
	return slices.Compact(ok), slices.Compact(refused)
}

// refusal says why namespace may not use d for trigger, or "".
func (c *config) refusal(namespace, trigger string, d services.Destination) string {
	sub := fmt.Sprintf("subscription %s.%s", trigger, d.Service)
	switch {
	case d.Service == "":
		return fmt.Sprintf("%s: names no service", sub)
	case strings.Contains(d.Service, "$") || strings.Contains(d.Recipient, "$"):
		// The engine substitutes $keys only in the platform's service
		// configuration; a tenant naming one is trying to.
		return fmt.Sprintf("%s: %q names a secret reference; the platform's notification secrets are not for tenants", sub, d.Service+":"+d.Recipient)
	case c.engine.Triggers[trigger] == nil:
		return fmt.Sprintf("%s: trigger %q is not configured", sub, trigger)
	case c.engine.Services[d.Service] == nil:
		return fmt.Sprintf("%s: service %q is not configured by the platform", sub, d.Service)
	}
	allowed, granted := c.grants[namespace][d.Service]
	if !granted {
		return fmt.Sprintf("%s: service %q is not granted to namespace %s (%s)", sub, d.Service, namespace, GrantsKey)
	}
	if !slices.Contains(allowed, "*") && !slices.Contains(allowed, d.Recipient) {
		return fmt.Sprintf("%s: recipient %q of service %q is not granted to namespace %s (%s)", sub, d.Recipient, d.Service, namespace, GrantsKey)
	}
	return ""
}

// redact replaces every value of the platform's secret in msg (an engine
// error may quote a URL or a header built from one).
func (c *config) redact(msg string) string {
	for _, s := range c.secrets {
		msg = strings.ReplaceAll(msg, string(s), "***")
	}
	return msg
}
