package notifications

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(m int) *metav1.Time { t := metav1.NewTime(t0.Add(time.Duration(m) * time.Minute)); return &t }

func manual(env string, rollback bool) *as.PromotionRun {
	return &as.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "t", UID: "u1", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       as.PromotionRunSpec{Application: "shop", Snapshot: "v2", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: env, Rollback: rollback}},
	}
}

func waitingOn(reason string) metav1.Condition {
	return metav1.Condition{Type: as.PromotionRunConditionWaiting, Status: metav1.ConditionTrue, Reason: reason, Message: "m", LastTransitionTime: *at(1)}
}

func keys(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Key())
	}
	return out
}

func TestEventsOf(t *testing.T) {
	approvals := &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1, Users: []string{"alice"}}}
	frozen := &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}}
	envs := []as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: as.EnvironmentSpec{}},
		{ObjectMeta: metav1.ObjectMeta{Name: "stage"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated, Gates: approvals}},
		{ObjectMeta: metav1.ObjectMeta{Name: "qa"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated, Gates: frozen}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: as.EnvironmentSpec{Gates: approvals}},
		{ObjectMeta: metav1.ObjectMeta{Name: "manual-child"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DeploymentStrategy: as.DeploymentStrategyManual, Gates: approvals}},
	}
	automated := func() *as.PromotionRun {
		r := manual("", false)
		r.Spec.ManualPromotion, r.Spec.AutomatedPromotion = nil, &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}
		return r
	}
	cases := []struct {
		name string
		run  func() *as.PromotionRun
		want []string
	}{
		{"a new run has none", func() *as.PromotionRun { return manual("prod", false) }, nil},
		{"waiting for approvals into its target", func() *as.PromotionRun {
			r := manual("prod", false)
			r.Status.Conditions = []metav1.Condition{waitingOn(as.WaitingReasonAwaitingApproval)}
			return r
		}, []string{"awaiting-approval:prod"}},
		{"waiting for another run is no event", func() *as.PromotionRun {
			r := manual("prod", false)
			r.Status.Conditions = []metav1.Condition{waitingOn(as.WaitingReasonRunActive)}
			return r
		}, nil},
		{"entered, then verified", func() *as.PromotionRun {
			r := manual("prod", false)
			r.Status.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "prod", Status: as.PromotionRunEnvironmentStatusSuccess, StartTime: at(2), VerifiedTime: at(3)}}
			return r
		}, []string{"entered:prod", "verified:prod"}},
		{"entered, then failed", func() *as.PromotionRun {
			r := manual("prod", false)
			r.Status.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "prod", Status: as.PromotionRunEnvironmentStatusFailure, StartTime: at(2)}}
			return r
		}, []string{"entered:prod", "failed:prod"}},
		{"refused before it entered: failed in its target", func() *as.PromotionRun {
			r := manual("prod", false)
			r.Status.State, r.Status.CompletionResult = as.PromotionRunStateCompleted, as.PromotionRunCompleteResultFailure
			r.Status.Conditions = []metav1.Condition{{Type: kernel.ConditionReady, Status: metav1.ConditionFalse, Reason: "SnapshotNotFound", Message: "gone"}}
			return r
		}, []string{"failed:prod"}},
		{"a rollback that succeeded rolled back", func() *as.PromotionRun {
			r := manual("prod", true)
			r.Status.Rollback = &as.RollbackStatus{Snapshot: "v1"}
			r.Status.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "prod", Status: as.PromotionRunEnvironmentStatusSuccess, StartTime: at(2), VerifiedTime: at(3)}}
			return r
		}, []string{"rolled-back:prod"}},
		{"a rollback in progress is no event yet", func() *as.PromotionRun {
			r := manual("prod", true)
			r.Status.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "prod", Status: as.PromotionRunEnvironmentStatusInProgress, StartTime: at(2)}}
			return r
		}, nil},
		{"frozen: the Environment it waits to enter", func() *as.PromotionRun {
			r := manual("qa", false)
			r.Status.Conditions = []metav1.Condition{waitingOn(as.WaitingReasonFrozen)}
			return r
		}, []string{"frozen:qa"}},
		{"automated: the approvals of the child that asks for them", func() *as.PromotionRun {
			r := automated()
			r.Status.State = as.PromotionRunStateActive
			r.Status.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "dev", Status: as.PromotionRunEnvironmentStatusSuccess, StartTime: at(2), VerifiedTime: at(3)}}
			r.Status.Conditions = []metav1.Condition{waitingOn(as.WaitingReasonAwaitingApproval)}
			return r
		}, []string{"entered:dev", "verified:dev", "awaiting-approval:stage"}},
		{"automated: the frozen child", func() *as.PromotionRun {
			r := automated()
			r.Status.State = as.PromotionRunStateActive
			r.Status.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "dev", Status: as.PromotionRunEnvironmentStatusSuccess, StartTime: at(2), VerifiedTime: at(3)}}
			r.Status.Conditions = []metav1.Condition{waitingOn(as.WaitingReasonFrozen)}
			return r
		}, []string{"entered:dev", "verified:dev", "frozen:qa"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := keys(eventsOf(c.run(), envs)); !slices.Equal(got, c.want) {
				t.Fatalf("events %v, want %v", got, c.want)
			}
		})
	}
}

func TestDueDropsOldAndUnsubscribed(t *testing.T) {
	evs := []Event{
		{Type: EventEntered, Environment: "prod", Time: t0},
		{Type: EventVerified, Environment: "prod", Time: t0.Add(-2 * time.Hour)},
		{Type: EventEntered, Environment: "dev", Time: t0},
		// Waiting now, under a condition set long ago for another reason.
		{Type: EventAwaitingApproval, Environment: "prod", Time: t0.Add(-5 * time.Hour), Now: true},
	}
	got := keys(due(evs, func(env string) bool { return env == "prod" }, t0.Add(time.Minute), time.Hour))
	if !slices.Equal(got, []string{"entered:prod", "awaiting-approval:prod"}) {
		t.Fatalf("due %v", got)
	}
}

func TestRecordedOn(t *testing.T) {
	if d := recordedOn(map[string]string{as.AnnotationNotified: `{"a":1}`}); d["a"] != 1 {
		t.Fatalf("read %v", d)
	}
	if d := recordedOn(map[string]string{as.AnnotationNotified: `not json`}); len(d) != 0 {
		t.Fatalf("garbage read as %v", d)
	}
}

func TestVarsNameWhoMayApprove(t *testing.T) {
	run := manual("prod", false)
	env := &as.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "t"},
		Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 2, Users: []string{"alice", "bob"}, Groups: []string{"sre"}}}}}
	v := varsOf(run, env, Event{Type: EventAwaitingApproval, Environment: "prod", Time: t0})
	ev := v["event"].(map[string]any)
	got := fmt.Sprint(ev["approvers"], " ", ev["id"])
	if want := "map[groups:[sre] required:2 users:[alice bob]] u1:awaiting-approval:prod"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
