package kernel

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func TestReadyCondition(t *testing.T) {
	cases := []struct {
		name            string
		err             error
		r               Readiness
		ok              bool
		status          metav1.ConditionStatus
		reason, message string
	}{
		{"done", nil, Done("Bound", "bound to %s", "dt"), true, metav1.ConditionTrue, "Bound", "bound to dt"},
		{"done without a reason", nil, Readiness{Status: metav1.ConditionTrue}, true, metav1.ConditionTrue, ReasonSucceeded, ""},
		{"in progress", nil, Progressing("syncing"), true, metav1.ConditionUnknown, ReasonProgressing, "syncing"},
		{"nothing said", nil, Readiness{}, true, metav1.ConditionUnknown, ReasonProgressing, ""},
		{"failed for good", nil, Failed("SyncFailed", "boom"), true, metav1.ConditionFalse, "SyncFailed", "boom"},
		{"refusal", Refuse("InvalidPath", "bad %s", "path"), Done("X", "ignored"), true, metav1.ConditionFalse, "InvalidPath", "bad path"},
		{"wrapped refusal", fmt.Errorf("pass: %w", Refuse("Denied", "no")), Readiness{}, true, metav1.ConditionFalse, "Denied", "no"},
		{"waiting", Wait("WaitingForEnvironment", time.Second, "Environment %s", "dev"), Done("X", "ignored"), true, metav1.ConditionUnknown, "WaitingForEnvironment", "waiting for Environment dev"},
		{"waiting without a reason", Wait("", time.Second, "x"), Readiness{}, true, metav1.ConditionUnknown, ReasonProgressing, "waiting for x"},
		{"stale cache", ErrStaleCache, Done("X", "ignored"), false, "", "", ""},
		{"transient", errors.New("connection refused"), Done("X", "ignored"), false, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ReadyCondition(c.err, c.r)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if got.Type != ConditionReady || got.Status != c.status || got.Reason != c.reason || got.Message != c.message {
				t.Fatalf("got %s/%s/%s/%q, want Ready/%s/%s/%q", got.Type, got.Status, got.Reason, got.Message, c.status, c.reason, c.message)
			}
		})
	}
}

func TestSetReadyTransientKeepsOrStartsUnknown(t *testing.T) {
	now := metav1.NewTime(time.Unix(100, 0))
	var conds []metav1.Condition
	SetReady(&conds, errors.New("timeout"), Readiness{}, 3, now)
	if len(conds) != 1 || conds[0].Status != metav1.ConditionUnknown || conds[0].Reason != ReasonProgressing || conds[0].ObservedGeneration != 3 {
		t.Fatalf("first transient pass: %+v", conds)
	}
	SetReady(&conds, nil, Done("Bound", "ok"), 4, now)
	if conds[0].Status != metav1.ConditionTrue || conds[0].ObservedGeneration != 4 {
		t.Fatalf("done: %+v", conds)
	}
	SetReady(&conds, errors.New("timeout"), Readiness{}, 5, now)
	if conds[0].Status != metav1.ConditionTrue || conds[0].Reason != "Bound" || conds[0].ObservedGeneration != 4 {
		t.Fatalf("a transient pass changed Ready: %+v", conds)
	}

	var g []v1.GitOpsDeploymentCondition
	SetGitOpsReady(&g, ErrStaleCache, Readiness{}, now)
	if len(g) != 1 || g[0].Status != v1.GitOpsConditionStatusUnknown {
		t.Fatalf("first transient pass: %+v", g)
	}
	SetGitOpsReady(&g, Refuse("InvalidRepoURL", "bad"), Readiness{}, now)
	if g[0].Status != v1.GitOpsConditionStatusFalse || g[0].Reason != "InvalidRepoURL" || g[0].Message != "bad" {
		t.Fatalf("refusal: %+v", g)
	}
	SetGitOpsReady(&g, errors.New("timeout"), Readiness{}, now)
	if g[0].Status != v1.GitOpsConditionStatusFalse || g[0].Reason != "InvalidRepoURL" {
		t.Fatalf("a transient pass changed Ready: %+v", g)
	}
}

func TestRefusalAsError(t *testing.T) {
	var none *Refusal
	if none.AsError() != nil {
		t.Fatal("a nil Refusal is a non-nil error")
	}
	if r := Refuse("X", "y"); r.AsError() != error(r) {
		t.Fatal("a Refusal is not itself as an error")
	}
}

func TestReadyComesLast(t *testing.T) {
	now := metav1.NewTime(time.Unix(100, 0))
	conds := []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionUnknown, Reason: ReasonProgressing}, {Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "X"}}
	SetReady(&conds, Refuse("X", "y"), Readiness{}, 1, now)
	if conds[0].Type != "ErrorOccurred" || conds[1].Type != ConditionReady || conds[1].Status != metav1.ConditionFalse {
		t.Fatalf("Ready is not last: %+v", conds)
	}
	g := []v1.GitOpsDeploymentCondition{{Type: ConditionReady, Status: v1.GitOpsConditionStatusUnknown}, {Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue}}
	SetGitOpsReady(&g, errors.New("timeout"), Readiness{}, now)
	if g[0].Type != v1.GitOpsDeploymentConditionErrorOccurred || g[1].Type != ConditionReady || g[1].Status != v1.GitOpsConditionStatusUnknown {
		t.Fatalf("Ready is not last: %+v", g)
	}
}
