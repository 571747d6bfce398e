//go:build !unit

package notifications_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/notifications"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	within = 20 * time.Second
	// settle is how long a test waits to see that nothing more arrives.
	settle = 3 * time.Second
)

// receiver is a real HTTP server that keeps every request it gets.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
	// onRequest, when set, runs before the receiver answers.
	onRequest func()
	// failFirst: the first so many requests are answered 503.
	failFirst int
	ok        int
}

type received struct {
	path, auth string
	body       []byte
	form       url.Values
}

// newReceiver serves a webhook receiver, or Slack's Web API when slack is set
// (chat.postMessage answers as Slack does).
func newReceiver(t *testing.T, slack bool) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		got := received{path: req.URL.Path, auth: req.Header.Get("Authorization"), body: body}
		if slack {
			got.form, _ = url.ParseQuery(string(body))
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, got)
		hook, fail := r.onRequest, len(r.reqs) <= r.failFirst
		if !fail {
			r.ok++
		}
		r.mu.Unlock()
		if hook != nil {
			hook()
		}
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if slack {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

// webhookEvents are the event types of the webhook bodies received, in order.
func (r *receiver) webhookEvents(t *testing.T) []string {
	var out []string
	for _, g := range r.got() {
		var body struct {
			Event struct {
				Type string `json:"type"`
			} `json:"event"`
		}
		require.NoError(t, json.Unmarshal(g.body, &body), "webhook body %s", g.body)
		out = append(out, body.Event.Type)
	}
	return out
}

// platform writes argoNS's notifications ConfigMap and Secret as a platform
// keeps them, with our grants key.
func platform(t *testing.T, cm map[string]string, secret map[string]string) string {
	ctx := context.Background()
	argoNS := "argocd-" + rand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}))
	require.NoError(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: notifications.DefaultConfigMap}, Data: cm}))
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: notifications.DefaultSecret}, StringData: secret}))
	return argoNS
}

func environment(t *testing.T, ns, name string, gates *as.PromotionGates, annotations map[string]string) *as.Environment {
	env := &as.Environment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       as.EnvironmentSpec{DeploymentStrategy: as.DeploymentStrategyManual, Gates: gates},
	}
	require.NoError(t, k8s.Create(context.Background(), env))
	return env
}

func promotionRun(t *testing.T, ns, env string) *as.PromotionRun {
	run := &as.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "promote-" + rand.String(4)},
		Spec: as.PromotionRunSpec{Application: "shop", Snapshot: "shop-v2",
			ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: env}},
	}
	require.NoError(t, k8s.Create(context.Background(), run))
	return run
}

// setStatus plays the PromotionRun reconciler: it writes run's status as
// change makes it from the one on the server.
func setStatus(t *testing.T, run *as.PromotionRun, change func(*as.PromotionRunStatus)) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		cur := &as.PromotionRun{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(run), cur); err != nil {
			return false
		}
		change(&cur.Status)
		return k8s.Status().Update(ctx, cur) == nil
	}, within, stack.Tick)
}

func waiting(reason, msg string) func(*as.PromotionRunStatus) {
	return func(s *as.PromotionRunStatus) {
		s.State = as.PromotionRunStateWaiting
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: as.PromotionRunConditionWaiting, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	}
}

func entered(env string) func(*as.PromotionRunStatus) {
	return func(s *as.PromotionRunStatus) {
		now := metav1.Now()
		s.State, s.PromotionStartTime = as.PromotionRunStateActive, now
		meta.RemoveStatusCondition(&s.Conditions, as.PromotionRunConditionWaiting)
		s.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: env, Status: as.PromotionRunEnvironmentStatusInProgress, DisplayStatus: "Promoting", StartTime: &now}}
	}
}

func verified(s *as.PromotionRunStatus) {
	now := metav1.Now()
	s.State, s.CompletionResult = as.PromotionRunStateCompleted, as.PromotionRunCompleteResultSuccess
	s.EnvironmentStatus[0].Status, s.EnvironmentStatus[0].DisplayStatus, s.EnvironmentStatus[0].VerifiedTime = as.PromotionRunEnvironmentStatusSuccess, "All components synced, healthy and running the Snapshot", &now
}

func subscribe(trigger, service string) string {
	return "notifications.argoproj.io/subscribe." + trigger + "." + service
}

// eventually waits until ok holds, then that it still holds after settle:
// what arrived once must not arrive again.
func eventuallyExactly(t *testing.T, what string, ok func() bool) {
	t.Helper()
	require.Eventually(t, ok, within, stack.Tick, what)
	time.Sleep(settle)
	require.True(t, ok(), "after %s: %s", settle, what)
}

func TestPromotionEventsReachAWebhookAndSlackThroughTheEngine(t *testing.T) {
	hook, slack := newReceiver(t, false), newReceiver(t, true)
	tenant := stack.Tenant(t, k8s)
	argoNS := platform(t, map[string]string{
		// The platform's services, with its secret's keys, as Argo CD users write them.
		"service.webhook.gitops-service": fmt.Sprintf("url: %s/hook\nheaders:\n- name: Authorization\n  value: $hook-token\n", hook.URL),
		"service.slack":                  fmt.Sprintf("token: $slack-token\napiURL: %s/api/\n", slack.URL),
		notifications.GrantsKey:          fmt.Sprintf("%s:\n  gitops-service: ['*']\n  slack: [team-a]\n", tenant.Name),
	}, map[string]string{"hook-token": "Bearer hook-s3cret", "slack-token": "xoxb-s3cret"})
	env := environment(t, tenant.Name, "prod",
		&as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1, Users: []string{"alice"}, Groups: []string{"release-managers"}}},
		map[string]string{
			subscribe("on-promotion-awaiting-approval", "gitops-service"): "",
			subscribe("on-promotion-entered", "gitops-service"):           "",
			subscribe("on-promotion-verified", "slack"):                   "team-a",
		})
	startSidecar(t, argoNS)

	stack.WaitFor(t, k8s, env, within, "says its subscriptions are delivered", func(e *as.Environment) bool {
		c := meta.FindStatusCondition(e.Status.Conditions, as.EnvironmentConditionNotifications)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == as.EnvironmentReasonNotificationsSubscribed
	})

	run := promotionRun(t, tenant.Name, "prod")
	setStatus(t, run, waiting(as.WaitingReasonAwaitingApproval, "approvals of Snapshot shop-v2 into Environment prod: 0 of 1; waiting for user alice"))
	eventuallyExactly(t, "one awaiting-approval webhook", func() bool {
		return strings.Join(hook.webhookEvents(t), ",") == notifications.EventAwaitingApproval
	})
	first := hook.got()[0]
	require.Equal(t, "/hook", first.path)
	require.Equal(t, "Bearer hook-s3cret", first.auth, "the header comes from the platform's Secret")
	var body struct {
		Event struct {
			Environment string `json:"environment"`
			ID          string `json:"id"`
			Approvers   struct {
				Required int      `json:"required"`
				Users    []string `json:"users"`
				Groups   []string `json:"groups"`
			} `json:"approvers"`
		} `json:"event"`
		Promotion struct {
			Name, Snapshot, Application string
		} `json:"promotion"`
	}
	require.NoError(t, json.Unmarshal(first.body, &body))
	require.Equal(t, "prod", body.Event.Environment)
	require.Equal(t, []string{"alice"}, body.Event.Approvers.Users, "names who may approve")
	require.Equal(t, []string{"release-managers"}, body.Event.Approvers.Groups)
	require.Equal(t, 1, body.Event.Approvers.Required)
	require.Equal(t, run.Name, body.Promotion.Name)
	require.Equal(t, "shop-v2", body.Promotion.Snapshot)
	require.NotEmpty(t, body.Event.ID)

	setStatus(t, run, entered("prod"))
	eventuallyExactly(t, "then one entered webhook", func() bool {
		return strings.Join(hook.webhookEvents(t), ",") == notifications.EventAwaitingApproval+","+notifications.EventEntered
	})
	require.Empty(t, slack.got(), "nobody subscribed slack to entered")

	setStatus(t, run, verified)
	eventuallyExactly(t, "one Slack message for verified", func() bool { return len(slack.got()) == 1 })
	msg := slack.got()[0]
	require.Equal(t, "/api/chat.postMessage", msg.path)
	require.Equal(t, "team-a", msg.form.Get("channel"))
	require.Contains(t, msg.form.Get("text"), "shop-v2 of shop is verified in prod")
	require.True(t, msg.form.Get("token") == "xoxb-s3cret" || msg.auth == "Bearer xoxb-s3cret", "the token comes from the platform's Secret")
	require.Len(t, hook.got(), 2, "no webhook subscription for verified")

	recorded := stack.WaitFor(t, k8s, run, within, "records its three deliveries", func(r *as.PromotionRun) bool {
		var d map[string]int64
		return json.Unmarshal([]byte(r.Annotations[as.AnnotationNotified]), &d) == nil && len(d) == 3
	})
	require.NotContains(t, recorded.Annotations[as.AnnotationNotified], "s3cret")
}

func TestARestartDoesNotDeliverAnEventTwice(t *testing.T) {
	hook := newReceiver(t, false)
	tenant := stack.Tenant(t, k8s)
	argoNS := platform(t, map[string]string{
		"service.webhook.gitops-service": fmt.Sprintf("url: %s/hook\n", hook.URL),
		notifications.GrantsKey:          fmt.Sprintf("%s:\n  gitops-service: ['*']\n", tenant.Name),
	}, nil)
	environment(t, tenant.Name, "staging", nil, map[string]string{
		// No trigger named: every trigger we ship.
		"notifications.argoproj.io/subscribe..gitops-service": "",
	})
	first := startSidecar(t, argoNS)
	run := promotionRun(t, tenant.Name, "staging")
	setStatus(t, run, entered("staging"))
	require.Eventually(t, func() bool { return len(hook.got()) == 1 }, within, stack.Tick)
	stack.WaitFor(t, k8s, run, within, "records the delivery", func(r *as.PromotionRun) bool {
		return strings.Contains(r.Annotations[as.AnnotationNotified], "entered:staging:on-promotion-entered")
	})
	first.Stop()

	// The run moves on while no sidecar runs; the next one starts from the record.
	setStatus(t, run, verified)
	startSidecar(t, argoNS)
	eventuallyExactly(t, "entered once (before the restart) and verified once (after it)", func() bool {
		return strings.Join(hook.webhookEvents(t), ",") == notifications.EventEntered+","+notifications.EventVerified
	})
	// Another event-free change of the run sends nothing again.
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(run), run))
	run.Labels = map[string]string{"touched": "yes"}
	require.NoError(t, k8s.Update(context.Background(), run))
	time.Sleep(settle)
	require.Len(t, hook.got(), 2)
}

func TestATenantCannotUseAnotherTenantsDestinationsOrThePlatformsSecrets(t *testing.T) {
	ours, theirs, slack := newReceiver(t, false), newReceiver(t, false), newReceiver(t, true)
	tenant, other := stack.Tenant(t, k8s), stack.Tenant(t, k8s)
	argoNS := platform(t, map[string]string{
		"service.webhook.tenant-a": fmt.Sprintf("url: %s/hook\n", ours.URL),
		"service.webhook.tenant-b": fmt.Sprintf("url: %s/hook\n", theirs.URL),
		"service.slack":            fmt.Sprintf("token: $slack-token\napiURL: %s/api/\n", slack.URL),
		notifications.GrantsKey: fmt.Sprintf("%s:\n  tenant-a: ['*']\n  slack: [team-a]\n%s:\n  tenant-b: ['*']\n  slack: [team-b]\n",
			tenant.Name, other.Name),
		// Our template of the event, as the platform may override it, with a
		// webhook body for its service names.
		"template.promotion-entered": "message: entered {{.environment.name}}\nwebhook:\n  tenant-a:\n    method: POST\n    body: '{{dict \"event\" .event | toJson}}'\n",
	}, map[string]string{"slack-token": "xoxb-s3cret"})
	env := environment(t, tenant.Name, "prod", nil, map[string]string{
		subscribe("on-promotion-entered", "tenant-b"): "",                    // the other tenant's webhook
		subscribe("on-promotion-entered", "slack"):    "team-b;$slack-token", // its channel, and a secret key
		subscribe("on-promotion-entered", "tenant-a"): "",                    // its own: delivered
		subscribe("no-such-trigger", "tenant-a"):      "",
	})
	startSidecar(t, argoNS)

	refused := stack.WaitFor(t, k8s, env, within, "says which subscriptions are refused", func(e *as.Environment) bool {
		c := meta.FindStatusCondition(e.Status.Conditions, as.EnvironmentConditionNotifications)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == as.EnvironmentReasonNotificationsRefused
	})
	c := meta.FindStatusCondition(refused.Status.Conditions, as.EnvironmentConditionNotifications)
	for _, want := range []string{
		`service "tenant-b" is not granted to namespace ` + tenant.Name,
		`recipient "team-b" of service "slack" is not granted`,
		`"slack:$slack-token" names a secret reference`,
		`trigger "no-such-trigger" is not configured`,
	} {
		require.Contains(t, c.Message, want)
	}
	require.NotContains(t, c.Message, "xoxb-s3cret")
	require.NotContains(t, c.Message, `service "tenant-a" is not`)
	stack.WaitForEvent(t, k8s, env, corev1.EventTypeWarning, as.EnvironmentReasonNotificationsRefused, "tenant-b", within)

	run := promotionRun(t, tenant.Name, "prod")
	setStatus(t, run, entered("prod"))
	eventuallyExactly(t, "only the tenant's own webhook is called", func() bool {
		return strings.Join(ours.webhookEvents(t), ",") == notifications.EventEntered
	})
	require.Empty(t, theirs.got(), "the other tenant's webhook")
	require.Empty(t, slack.got(), "a channel not granted, or a secret as a channel")
}

// The one repeat the guarantee allows: the sidecar dies after the receiver
// took a delivery and before its record is written. The next sidecar sends
// it once more, with the same event id, and then never again.
func TestACrashBetweenSendAndRecordRepeatsThatDeliveryOnceWithItsID(t *testing.T) {
	hook := newReceiver(t, false)
	tenant := stack.Tenant(t, k8s)
	argoNS := platform(t, map[string]string{
		"service.webhook.gitops-service": fmt.Sprintf("url: %s/hook\n", hook.URL),
		notifications.GrantsKey:          fmt.Sprintf("%s:\n  gitops-service: ['*']\n", tenant.Name),
	}, nil)
	environment(t, tenant.Name, "prod", nil, map[string]string{subscribe("on-promotion-entered", "gitops-service"): ""})
	crashing := startSidecar(t, argoNS)
	var once sync.Once
	hook.mu.Lock()
	// The sidecar stops while the receiver holds the request: the send
	// succeeds, the record cannot be written.
	hook.onRequest = func() { once.Do(func() { go crashing.Stop(); time.Sleep(500 * time.Millisecond) }) }
	hook.mu.Unlock()
	run := promotionRun(t, tenant.Name, "prod")
	setStatus(t, run, entered("prod"))
	require.Eventually(t, func() bool { return len(hook.got()) == 1 }, within, stack.Tick)
	<-crashing.stopped
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(run), run))
	require.Empty(t, run.Annotations[as.AnnotationNotified], "the crash came before the record")

	startSidecar(t, argoNS)
	eventuallyExactly(t, "the delivery repeated once", func() bool { return len(hook.got()) == 2 })
	ids := map[string]bool{}
	for _, g := range hook.got() {
		var body struct {
			Event struct {
				ID string `json:"id"`
			} `json:"event"`
		}
		require.NoError(t, json.Unmarshal(g.body, &body))
		ids[body.Event.ID] = true
	}
	require.Len(t, ids, 1, "both carry the event's one id: %v", ids)
	stack.WaitFor(t, k8s, run, within, "records the delivery", func(r *as.PromotionRun) bool {
		return strings.Contains(r.Annotations[as.AnnotationNotified], "entered:prod:on-promotion-entered")
	})
}

// A destination that is down does not hold up the others, and gets the
// event once it is back: at least once, and once only.
func TestADestinationThatIsDownGetsTheEventOnceItIsBack(t *testing.T) {
	down, up := newReceiver(t, false), newReceiver(t, false)
	// The engine tries twice per send (retryMax 1): three sends fail.
	down.failFirst = 6
	tenant := stack.Tenant(t, k8s)
	argoNS := platform(t, map[string]string{
		"service.webhook.down":  fmt.Sprintf("url: %s/hook\nretryMax: 1\nretryWaitMin: 10000000\nretryWaitMax: 20000000\n", down.URL),
		"service.webhook.up":    fmt.Sprintf("url: %s/hook\n", up.URL),
		notifications.GrantsKey: fmt.Sprintf("%s:\n  down: ['*']\n  up: ['*']\n", tenant.Name),
		"template.promotion-entered": "message: entered\nwebhook:\n  down:\n    method: POST\n    body: '{{dict \"event\" .event | toJson}}'\n" +
			"  up:\n    method: POST\n    body: '{{dict \"event\" .event | toJson}}'\n",
	}, nil)
	environment(t, tenant.Name, "prod", nil, map[string]string{
		subscribe("on-promotion-entered", "down"): "",
		subscribe("on-promotion-entered", "up"):   "",
	})
	startSidecar(t, argoNS)
	run := promotionRun(t, tenant.Name, "prod")
	setStatus(t, run, entered("prod"))
	require.Eventually(t, func() bool { return len(up.got()) == 1 }, within, stack.Tick, "the working destination is not held up")
	eventuallyExactly(t, "the destination that was down took the event once", func() bool {
		down.mu.Lock()
		defer down.mu.Unlock()
		return down.ok == 1
	})
	require.Greater(t, len(down.got()), 6, "it was retried")
	require.Len(t, up.got(), 1, "the working destination got it once")
}

// An Environment subscribed while a run waits to enter it hears of the wait
// at once, however long the run has waited.
func TestANewSubscriberOfAWaitingRunIsToldAtOnce(t *testing.T) {
	hook := newReceiver(t, false)
	tenant := stack.Tenant(t, k8s)
	argoNS := platform(t, map[string]string{
		"service.webhook.gitops-service": fmt.Sprintf("url: %s/hook\n", hook.URL),
		notifications.GrantsKey:          fmt.Sprintf("%s:\n  gitops-service: ['*']\n", tenant.Name),
	}, nil)
	env := environment(t, tenant.Name, "prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true, Reason: "incident 42"}}, nil)
	run := promotionRun(t, tenant.Name, "prod")
	setStatus(t, run, waiting(as.WaitingReasonFrozen, "Environment prod is frozen (incident 42): until it is unfrozen"))
	startSidecar(t, argoNS)
	time.Sleep(settle)
	require.Empty(t, hook.got(), "nobody subscribed yet")

	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	env.Annotations = map[string]string{subscribe("on-promotion-frozen", "gitops-service"): ""}
	require.NoError(t, k8s.Update(context.Background(), env))
	eventuallyExactly(t, "one frozen webhook", func() bool {
		return strings.Join(hook.webhookEvents(t), ",") == notifications.EventFrozen
	})
	require.Contains(t, string(hook.got()[0].body), "incident 42")
}
