package notifications

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/argoproj/notifications-engine/pkg/triggers"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// deliveries is what a run's AnnotationNotified records: delivery key -> Unix
// time of the delivery.
type deliveries map[string]int64

// recordedOn reads the deliveries recorded in annotations. A value that is
// not ours to read (someone wrote something else there) counts as none: the
// tenant who may edit the run can at most make its own notifications repeat.
func recordedOn(annotations map[string]string) deliveries {
	d := deliveries{}
	if raw := annotations[as.AnnotationNotified]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return deliveries{}
		}
	}
	return d
}

// deliveryKey names one delivery: the event, the subscription (trigger and
// destination) and the trigger's condition that sent it (with its oncePer
// value, as Argo CD keys its own record).
func deliveryKey(ev Event, d destination, c triggers.ConditionResult) string {
	parts := []string{ev.Type, ev.Environment, d.Trigger, c.Key}
	if c.OncePer != "" {
		parts = append(parts, c.OncePer)
	}
	return strings.Join(append(parts, d.Service, d.Recipient), ":")
}

// due are the events worth looking at now: of a subscribed Environment, and
// not older than maxAge (an event that happened while no sidecar sent, or
// before the Environment was subscribed, is not sent late) unless it is the
// run's present state.
func due(events []Event, subscribed func(env string) bool, now time.Time, maxAge time.Duration) []Event {
	var out []Event
	for _, ev := range events {
		if subscribed(ev.Environment) && (ev.Now || now.Sub(ev.Time) <= maxAge) {
			out = append(out, ev)
		}
	}
	return out
}

// varsOf are the variables the engine's triggers and templates see for ev:
// data, never template text.
func varsOf(run *as.PromotionRun, env *as.Environment, ev Event) map[string]any {
	approvers := map[string]any{"required": 0, "users": []string{}, "groups": []string{}}
	if g := env.Spec.Gates; g != nil && g.Approvals != nil {
		approvers = map[string]any{"required": g.Approvals.Required, "users": nonNil(g.Approvals.Users), "groups": nonNil(g.Approvals.Groups)}
	}
	rollbackTo := ""
	if run.Status.Rollback != nil {
		rollbackTo = run.Status.Rollback.Snapshot
	}
	return map[string]any{
		"event": map[string]any{
			"type": ev.Type, "environment": ev.Environment, "message": ev.Message,
			// The same for every delivery of the event: a receiver may
			// drop the one repeat a crash can cause (see doc.go).
			"id":        string(run.UID) + ":" + ev.Key(),
			"time":      ev.Time.UTC().Format(time.RFC3339),
			"approvers": approvers,
		},
		"promotion": map[string]any{
			"name": run.Name, "namespace": run.Namespace, "application": run.Spec.Application, "snapshot": run.Spec.Snapshot,
			"rollback": run.Spec.IsRollback(), "rollbackTo": rollbackTo,
			"state": string(run.Status.State), "result": string(run.Status.CompletionResult),
		},
		"environment": map[string]any{"name": env.Name, "namespace": env.Namespace, "displayName": env.Spec.DisplayName},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// subscribed says whether annotations subscribe to notifications (Argo CD's
// annotation keys, either form).
func subscribed(annotations map[string]string) bool {
	for k := range annotations {
		if isSubscription(k) {
			return true
		}
	}
	return false
}

func isSubscription(key string) bool {
	return strings.HasPrefix(key, subscribePrefix) || key == subscriptionsKey
}

// Argo CD's subscription annotations, which the engine's parser reads.
const (
	subscribePrefix  = "notifications.argoproj.io/subscribe."
	subscriptionsKey = "notifications.argoproj.io/subscriptions"
)
