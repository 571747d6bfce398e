package notifications

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/argoproj/notifications-engine/pkg/templates"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func platformConfig(t *testing.T, data map[string]string) *config {
	t.Helper()
	cm := &corev1.ConfigMap{Data: data}
	cfg, err := parseConfig(cm, &corev1.Secret{Data: map[string][]byte{"token": []byte("xoxb-s3cret")}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestShippedTriggersAndTemplatesParse(t *testing.T) {
	cfg := platformConfig(t, nil)
	for _, e := range []string{EventAwaitingApproval, EventEntered, EventVerified, EventFailed, EventRolledBack, EventFrozen} {
		if cfg.engine.Triggers["on-promotion-"+e] == nil {
			t.Errorf("no trigger on-promotion-%s", e)
		}
		if _, ok := cfg.engine.Templates["promotion-"+e]; !ok {
			t.Errorf("no template promotion-%s", e)
		}
	}
	if !slices.Equal(cfg.ours, []string{"on-promotion-awaiting-approval", "on-promotion-entered", "on-promotion-failed", "on-promotion-frozen", "on-promotion-rolled-back", "on-promotion-verified"}) {
		t.Errorf("our triggers: %v", cfg.ours)
	}
}

func TestThePlatformsKeysWin(t *testing.T) {
	cfg := platformConfig(t, map[string]string{"template.promotion-verified": "message: ours no more"})
	if got := cfg.engine.Templates["promotion-verified"].Message; got != "ours no more" {
		t.Fatalf("template %q", got)
	}
}

// A tenant's strings are data to the shipped templates: a quote or a
// template action in them neither breaks the webhook's JSON nor runs.
func TestTenantStringsCannotChangeATemplate(t *testing.T) {
	cfg := platformConfig(t, nil)
	run := manual("prod", false)
	run.Spec.Application = `shop", "x": "{{.secret}}`
	env := &as.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "t"}}
	vars := varsOf(run, env, Event{Type: EventVerified, Environment: "prod", Time: t0})
	// The engine's own template service, as Send formats with it.
	svc, err := templates.NewService(cfg.engine.Templates)
	if err != nil {
		t.Fatal(err)
	}
	n, err := svc.FormatNotification(vars, "promotion-verified")
	if err != nil {
		t.Fatal(err)
	}
	body := n.Webhook["gitops-service"].Body
	if !strings.Contains(body, `"application":"shop\", \"x\": \"{{.secret}}"`) {
		t.Fatalf("body %s", body)
	}
	if !strings.Contains(n.Message, `{{.secret}}`) {
		t.Fatalf("message %s", n.Message)
	}
}

func TestSubscriptionsOf(t *testing.T) {
	cfg := platformConfig(t, map[string]string{
		"service.webhook.a": "url: http://a/",
		"service.webhook.b": "url: http://b/",
		"service.slack":     "token: $token",
		GrantsKey:           "t:\n  a: ['*']\n  slack: [team-t]\nu:\n  b: ['*']\n",
	})
	ok, refused := cfg.subscriptionsOf("t", map[string]string{
		subscribePrefix + "on-promotion-verified.a":     "",
		subscribePrefix + "on-promotion-verified.slack": "team-t;team-u;$token",
		subscribePrefix + "on-promotion-failed.b":       "",
		subscribePrefix + "on-promotion-failed.nope":    "",
		subscribePrefix + "on-app-synced.a":             "",
		"unrelated":                                     "x",
	})
	var got []string
	for _, d := range ok {
		got = append(got, d.Trigger+"/"+d.Service+"/"+d.Recipient)
	}
	if !slices.Equal(got, []string{"on-promotion-verified/a/", "on-promotion-verified/slack/team-t"}) {
		t.Errorf("delivered %v", got)
	}
	want := []string{
		`subscription on-app-synced.a: trigger "on-app-synced" is not configured`,
		`subscription on-promotion-failed.b: service "b" is not granted to namespace t (gitops-service.tenants)`,
		`subscription on-promotion-failed.nope: service "nope" is not configured by the platform`,
		`subscription on-promotion-verified.slack: "slack:$token" names a secret reference; the platform's notification secrets are not for tenants`,
		`subscription on-promotion-verified.slack: recipient "team-u" of service "slack" is not granted to namespace t (gitops-service.tenants)`,
	}
	if !slices.Equal(refused, want) {
		t.Errorf("refused\n%s\nwant\n%s", strings.Join(refused, "\n"), strings.Join(want, "\n"))
	}
	// Nothing is granted to a namespace the platform does not name.
	if ok, _ := cfg.subscriptionsOf("v", map[string]string{subscribePrefix + "on-promotion-verified.a": ""}); len(ok) != 0 {
		t.Errorf("ungranted namespace delivered %v", ok)
	}
}

func TestRedactHidesTheSecret(t *testing.T) {
	cfg := platformConfig(t, nil)
	var b bytes.Buffer
	b.WriteString(cfg.redact("request to https://hooks/xoxb-s3cret failed"))
	if strings.Contains(b.String(), "s3cret") {
		t.Fatal(b.String())
	}
}

// Every shipped template renders, with the engine's template service, into
// the words it is for (an awaiting approval names who may approve).
func TestShippedTemplatesRender(t *testing.T) {
	cfg := platformConfig(t, nil)
	svc, err := templates.NewService(cfg.engine.Templates)
	if err != nil {
		t.Fatal(err)
	}
	gated := &as.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "t"},
		Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 2, Users: []string{"alice", "bob"}, Groups: []string{"sre"}}}}}
	open := &as.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "t"}}
	rollback := manual("prod", true)
	rollback.Status.Rollback = &as.RollbackStatus{Snapshot: "v1"}
	for _, c := range []struct {
		event string
		run   *as.PromotionRun
		env   *as.Environment
		want  string
	}{
		{EventAwaitingApproval, manual("prod", false), gated, "waits for 2 approval(s) to enter prod (t). May approve: users alice, bob; members of sre."},
		{EventAwaitingApproval, manual("prod", false), open, "May approve: anyone who may approve in t."},
		{EventEntered, manual("prod", false), open, "Snapshot v2 of shop entered prod (t), PromotionRun r."},
		{EventVerified, manual("prod", false), open, "Snapshot v2 of shop is verified in prod (t)."},
		{EventFailed, manual("prod", false), open, "Promotion of Snapshot v2 of shop to prod (t) failed: timed out"},
		{EventRolledBack, rollback, open, "prod (t) of shop was rolled back from Snapshot v2 to v1."},
		{EventFrozen, manual("prod", false), open, "Snapshot v2 of shop waits: timed out"},
	} {
		vars := varsOf(c.run, c.env, Event{Type: c.event, Environment: "prod", Message: "timed out", Time: t0})
		n, err := svc.FormatNotification(vars, "promotion-"+c.event)
		if err != nil {
			t.Fatalf("%s: %v", c.event, err)
		}
		if !strings.Contains(n.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", c.event, n.Message, c.want)
		}
		if b := n.Webhook["gitops-service"].Body; !strings.HasPrefix(b, `{"event":{`) {
			t.Errorf("%s: webhook body %s", c.event, b)
		}
	}
}

// The engine's YAML form of subscriptions is read too, under the same grants.
func TestSubscriptionsInTheYAMLForm(t *testing.T) {
	cfg := platformConfig(t, map[string]string{"service.webhook.a": "url: http://a/", GrantsKey: "t:\n  a: ['*']\n"})
	ok, refused := cfg.subscriptionsOf("t", map[string]string{subscriptionsKey: "- trigger: [on-promotion-failed, on-promotion-verified]\n  destinations:\n  - service: a\n    recipients: [x]\n  - service: b\n    recipients: [y]\n"})
	var got []string
	for _, d := range ok {
		got = append(got, d.Trigger+"/"+d.Service+"/"+d.Recipient)
	}
	if !slices.Equal(got, []string{"on-promotion-failed/a/x", "on-promotion-verified/a/x"}) {
		t.Errorf("delivered %v", got)
	}
	if len(refused) != 2 || !strings.Contains(refused[0], `service "b" is not configured`) {
		t.Errorf("refused %v", refused)
	}
}
