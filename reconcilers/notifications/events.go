package notifications

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// The promotion events, as event.type shows them to triggers and templates.
const (
	EventAwaitingApproval = "awaiting-approval"
	EventEntered          = "entered"
	EventVerified         = "verified"
	EventFailed           = "failed"
	EventRolledBack       = "rolled-back"
	EventFrozen           = "frozen"
)

// Event is one promotion event of a run in one Environment. A run has each
// event at most once per Environment (it enters an Environment once), so
// (Type, Environment) identifies it within the run.
type Event struct {
	Type        string
	Environment string
	// Message is the run's own words about it (a step's display status, the
	// Waiting condition's message).
	Message string
	// Time is when it happened, as the run records it.
	Time time.Time
	// Now: the event is the run's present state (it waits now), never
	// stale, whatever Time says (a Waiting condition keeps its time when
	// only its reason changes).
	Now bool
}

// Key identifies the event within its run.
func (e Event) Key() string { return e.Type + ":" + e.Environment }

// eventsOf are the events run shows, read from its status as the PromotionRun
// reconciler writes it; envs are the Environments of its namespace (to tell
// which Environment a waiting automated run waits to enter).
func eventsOf(run *as.PromotionRun, envs []as.Environment) []Event {
	var out []Event
	add := func(typ, env, msg string, t time.Time) {
		if t.IsZero() {
			t = run.CreationTimestamp.Time
		}
		out = append(out, Event{Type: typ, Environment: env, Message: msg, Time: t})
	}
	rollback := run.Spec.IsRollback()
	ended := conditionTime(run, kernel.ConditionReady)
	for _, s := range run.Status.EnvironmentStatus {
		switch {
		case rollback && s.Status == as.PromotionRunEnvironmentStatusSuccess:
			add(EventRolledBack, s.EnvironmentName, s.DisplayStatus, timeOf(s.VerifiedTime, ended))
		case rollback:
		case s.StartTime != nil:
			add(EventEntered, s.EnvironmentName, s.DisplayStatus, s.StartTime.Time)
		}
		if !rollback && s.VerifiedTime != nil {
			add(EventVerified, s.EnvironmentName, s.DisplayStatus, s.VerifiedTime.Time)
		}
		if s.Status == as.PromotionRunEnvironmentStatusFailure {
			add(EventFailed, s.EnvironmentName, s.DisplayStatus, ended)
		}
	}
	if len(run.Status.EnvironmentStatus) == 0 && run.Status.State == as.PromotionRunStateCompleted &&
		run.Status.CompletionResult == as.PromotionRunCompleteResultFailure {
		// Refused before it entered anything: the failure is the first Environment's.
		msg := ""
		if c := meta.FindStatusCondition(run.Status.Conditions, kernel.ConditionReady); c != nil {
			msg = c.Message
		}
		add(EventFailed, first(run), msg, ended)
	}
	w := meta.FindStatusCondition(run.Status.Conditions, as.PromotionRunConditionWaiting)
	if w == nil || w.Status != metav1.ConditionTrue || run.Status.State == as.PromotionRunStateCompleted {
		return out
	}
	var typ string
	var gated func(*as.PromotionGates) bool
	switch w.Reason {
	case as.WaitingReasonAwaitingApproval:
		typ, gated = EventAwaitingApproval, func(g *as.PromotionGates) bool { return g.Approvals != nil }
	case as.WaitingReasonFrozen:
		typ, gated = EventFrozen, func(g *as.PromotionGates) bool { return g.Freeze != nil && g.Freeze.Frozen }
	case as.WaitingReasonFreezeWindow:
		typ, gated = EventFrozen, func(g *as.PromotionGates) bool { return len(g.FreezeWindows) > 0 }
	default:
		return out
	}
	for _, env := range entering(run, envs) {
		if e := find(envs, env); e != nil && e.Spec.Gates != nil && gated(e.Spec.Gates) {
			add(typ, env, w.Message, w.LastTransitionTime.Time)
			out[len(out)-1].Now = true
		}
	}
	return out
}

// entering are the Environments a waiting run waits to enter: its first
// before it entered any, else the automated children of those it entered.
func entering(run *as.PromotionRun, envs []as.Environment) []string {
	if len(run.Status.EnvironmentStatus) == 0 {
		return []string{first(run)}
	}
	if run.Spec.AutomatedPromotion == nil {
		return nil
	}
	var in []string
	for _, s := range run.Status.EnvironmentStatus {
		in = append(in, s.EnvironmentName)
	}
	var out []string
	for _, e := range envs {
		if slices.Contains(in, e.Spec.ParentEnvironment) && !slices.Contains(in, e.Name) &&
			e.Spec.DeploymentStrategy == as.DeploymentStrategyAppStudioAutomated {
			out = append(out, e.Name)
		}
	}
	return out
}

// first is the Environment the run begins with.
func first(run *as.PromotionRun) string {
	if run.Spec.ManualPromotion != nil {
		return run.Spec.ManualPromotion.TargetEnvironment
	}
	if run.Spec.AutomatedPromotion != nil {
		return run.Spec.AutomatedPromotion.InitialEnvironment
	}
	return ""
}

func find(envs []as.Environment, name string) *as.Environment {
	for i := range envs {
		if envs[i].Name == name {
			return &envs[i]
		}
	}
	return nil
}

func conditionTime(run *as.PromotionRun, typ string) time.Time {
	if c := meta.FindStatusCondition(run.Status.Conditions, typ); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

func timeOf(t *metav1.Time, otherwise time.Time) time.Time {
	if t != nil {
		return t.Time
	}
	return otherwise
}
