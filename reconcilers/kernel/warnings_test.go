package kernel

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/metrics"
)

// Each Warning Event of an error condition is counted once, by kind and reason.
func TestWarningEventsAreCounted(t *testing.T) {
	count := func(kind, reason string) float64 {
		return testutil.ToFloat64(metrics.WarningEvents.WithLabelValues(kind, reason))
	}
	rec := record.NewFakeRecorder(10)
	now := metav1.Now()

	run := &appstudio.PromotionRun{}
	before := count("PromotionRun", "TestRefused")
	c := metav1.Condition{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "TestRefused", Message: "no"}
	SetCondition(rec, run, &run.Status.Conditions, c, now, true)
	SetCondition(rec, run, &run.Status.Conditions, c, now, true) // unchanged: no Event
	SetCondition(rec, run, &run.Status.Conditions, metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "TestRefused"}, now, false)
	if got := count("PromotionRun", "TestRefused") - before; got != 1 {
		t.Errorf("SetCondition: counted %v, want 1", got)
	}

	d := &v1.GitOpsDeployment{}
	before = count("GitOpsDeployment", "InvalidSource")
	SetError(rec, d, &d.Status.Conditions, Refuse("InvalidSource", "bad"), now)
	SetError(rec, d, &d.Status.Conditions, Refuse("InvalidSource", "bad"), now)
	if got := count("GitOpsDeployment", "InvalidSource") - before; got != 1 {
		t.Errorf("SetError: counted %v under the refusal's reason, want 1", got)
	}

	r := &v1.GitOpsDeploymentSyncRun{}
	before = count("GitOpsDeploymentSyncRun", "Other")
	SetErrorReason(rec, r, &r.Status.Conditions, "not a reason: free text", "m", now)
	if got := count("GitOpsDeploymentSyncRun", "Other") - before; got != 1 {
		t.Errorf("SetErrorReason with a malformed reason: counted %v under Other, want 1", got)
	}
	if len(rec.Events) != 3 {
		t.Errorf("%d Events, want 3", len(rec.Events))
	}
}

// The Events of an object no reconciler owns (the sidecar's Pod): Warnings
// are counted like the others, under the object's kind; nil records nothing.
func TestObjectEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "argocd", Name: "gitops-service-x"}
	before := testutil.ToFloat64(metrics.WarningEvents.WithLabelValues("Pod", "TestMissing"))
	e := &ObjectEvents{Recorder: rec, Object: pod}
	e.Warning("TestMissing", "no token")
	e.Normal("TestFound", "token")
	if got := testutil.ToFloat64(metrics.WarningEvents.WithLabelValues("Pod", "TestMissing")) - before; got != 1 {
		t.Errorf("counted %v Warnings of the Pod, want 1", got)
	}
	if got := []string{<-rec.Events, <-rec.Events}; got[0] != "Warning TestMissing no token" || got[1] != "Normal TestFound token" {
		t.Errorf("Events %q", got)
	}
	var none *ObjectEvents
	none.Warning("TestMissing", "no token")
	none.Normal("TestFound", "token")
	if len(rec.Events) != 0 {
		t.Errorf("a nil ObjectEvents recorded %d Events", len(rec.Events))
	}
}
