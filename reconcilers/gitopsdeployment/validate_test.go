package gitopsdeployment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func TestValidate(t *testing.T) {
	base := func(mut func(*v1.GitOpsDeploymentSpec)) *v1.GitOpsDeployment {
		gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "jane"},
			Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://x/y.git", Path: "p"}, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
		mut(&gd.Spec)
		return gd
	}
	cases := []struct {
		name   string
		mut    func(*v1.GitOpsDeploymentSpec)
		want   string // substring; "" means valid
		reason string // the Event's and Ready's reason
	}{
		{"valid", func(*v1.GitOpsDeploymentSpec) {}, "", ""},
		{"own namespace explicit", func(s *v1.GitOpsDeploymentSpec) { s.Destination.Namespace = "jane" }, "", ""},
		{"manual with CreateNamespace", func(s *v1.GitOpsDeploymentSpec) {
			s.Type = v1.GitOpsDeploymentSpecTypeManual
			s.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
		}, "", ""},
		{"remote namespace with environment", func(s *v1.GitOpsDeploymentSpec) {
			s.Destination = v1.ApplicationDestination{Environment: "e", Namespace: "other"}
		}, "", ""},
		{"empty path", func(s *v1.GitOpsDeploymentSpec) { s.Source.Path = "" }, v1.ErrMsgPathEmpty, ReasonInvalidSource},
		{"root path", func(s *v1.GitOpsDeploymentSpec) { s.Source.Path = "/" }, v1.ErrMsgPathRoot, ReasonInvalidSource},
		{"parent segment", func(s *v1.GitOpsDeploymentSpec) { s.Source.Path = "apps/../../etc" }, "must stay inside the repository", ReasonInvalidSource},
		{"absolute path", func(s *v1.GitOpsDeploymentSpec) { s.Source.Path = "/etc/kubernetes" }, "must stay inside the repository", ReasonInvalidSource},
		{"dotted names are fine", func(s *v1.GitOpsDeploymentSpec) { s.Source.Path = "apps/..hidden/v1.2" }, "", ""},
		{"bad type", func(s *v1.GitOpsDeploymentSpec) { s.Type = "Automatic" }, v1.ErrMsgTypeInvalid, ReasonInvalidType},
		{"foreign namespace without environment", func(s *v1.GitOpsDeploymentSpec) { s.Destination.Namespace = "kube-system" }, v1.ErrMsgEnvironmentNeeded, ReasonInvalidDestination},
		{"unsupported sync option", func(s *v1.GitOpsDeploymentSpec) {
			s.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{"Replace=true"}}
		}, "unsupported sync option", ReasonInvalidSyncPolicy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, got := validate(base(tc.mut))
			assert.Equal(t, tc.reason, reason)
			if tc.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tc.want)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	rec := record.NewFakeRecorder(10)
	setError := func(conds []v1.GitOpsDeploymentCondition, msg string, now metav1.Time) []v1.GitOpsDeploymentCondition {
		var refusal *kernel.Refusal
		if msg != "" {
			refusal = refuse(ReasonInvalidSource, "%s", msg)
		}
		kernel.SetError(rec, &v1.GitOpsDeployment{}, &conds, refusal, now)
		return conds
	}

	conds := setError(nil, "", t0)
	assert.Empty(t, conds, "no error and none before: no condition at all")

	conds = setError(conds, "boom", t0)
	assert.Len(t, conds, 1)
	assert.Equal(t, v1.GitOpsConditionStatusTrue, conds[0].Status)
	assert.Equal(t, v1.GitOpsDeploymentReasonErrorOccurred, conds[0].Reason)

	same := setError(append([]v1.GitOpsDeploymentCondition(nil), conds...), "boom", t1)
	assert.Equal(t, conds, same, "observing the same error again changes nothing (no write on resync)")
	assert.Len(t, rec.Events, 1, "one Warning Event for the new error, none when it is seen again")
	assert.Equal(t, "Warning InvalidSource boom", <-rec.Events, "the condition's reason is the seed's, the Event's the failure's")

	conds = setError(conds, "", t1)
	assert.Equal(t, v1.GitOpsConditionStatusFalse, conds[0].Status)
	assert.Equal(t, v1.GitOpsConditionReason("ErrorOccurredResolved"), conds[0].Reason)
	assert.Equal(t, t1, *conds[0].LastTransitionTime)

	conds = mirrorAppConditions(conds, []argocd.AppCondition{{Type: "ComparisonError", Message: "repo not found"}}, t1)
	assert.Len(t, conds, 2)
	assert.Equal(t, v1.GitOpsConditionReason("ComparisonError"), conds[1].Reason)
	assert.Equal(t, "repo not found", conds[1].Message)

	conds = mirrorAppConditions(conds, nil, t1)
	assert.Equal(t, v1.GitOpsConditionStatusFalse, conds[1].Status)
	assert.Equal(t, v1.GitOpsConditionReason("ComparisonErrorResolved"), conds[1].Reason)
	assert.Equal(t, v1.GitOpsConditionStatusFalse, conds[0].Status, "ErrorOccurred is ours, not resolved by the mirror")
}
