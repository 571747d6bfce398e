package gitopsdeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func deployment(mut func(*v1.GitOpsDeploymentSpec)) *v1.GitOpsDeployment {
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "jane"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://x/y.git", Path: "p"}, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	mut(&gd.Spec)
	return gd
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name      string
		mut       func(*v1.GitOpsDeploymentSpec)
		allowFile bool
		want      string // message substring; "" means accepted
		reason    string // the Event's and Ready's
	}{
		{"valid", func(*v1.GitOpsDeploymentSpec) {}, false, "", ""},
		{"spec problem first", func(s *v1.GitOpsDeploymentSpec) { s.Source.Path = ""; s.Source.RepoURL = "file:///x" }, false, v1.ErrMsgPathEmpty, ReasonInvalidSource},
		{"file repository", func(s *v1.GitOpsDeploymentSpec) { s.Source.RepoURL = "file:///srv/repo" }, false, "spec.source.repoURL: ", ReasonInvalidSource},
		{"file repository allowed", func(s *v1.GitOpsDeploymentSpec) { s.Source.RepoURL = "file:///srv/repo" }, true, "", ""},
		{"remote helper", func(s *v1.GitOpsDeploymentSpec) { s.Source.RepoURL = "ext::sh -c id" }, true, "spec.source.repoURL: ", ReasonInvalidSource},
		{"revision as an option", func(s *v1.GitOpsDeploymentSpec) { s.Source.TargetRevision = "--upload-pack=x" }, false, "spec.source.targetRevision: ", ReasonInvalidSource},
		{"plain revision", func(s *v1.GitOpsDeploymentSpec) { s.Source.TargetRevision = "release-1" }, false, "", ""},
		{"bad type", func(s *v1.GitOpsDeploymentSpec) { s.Type = "Auto" }, false, v1.ErrMsgTypeInvalid, ReasonInvalidType},
		{"foreign namespace", func(s *v1.GitOpsDeploymentSpec) { s.Destination.Namespace = "other" }, false, v1.ErrMsgEnvironmentNeeded, ReasonInvalidDestination},
		{"sync option", func(s *v1.GitOpsDeploymentSpec) {
			s.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{"Prune=false"}}
		}, false, "unsupported sync option", ReasonInvalidSyncPolicy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := check(deployment(tc.mut), tc.allowFile)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.reason, got.Reason, "the Event's and Ready's reason names the failure")
			assert.Equal(t, string(v1.GitOpsDeploymentReasonErrorOccurred), got.ConditionReason(), "the seed's condition keeps ErrorOccurred")
			assert.Contains(t, got.Message, tc.want)
			assert.False(t, got.Keep)
			assert.Zero(t, got.After, "a spec problem is looked at again at the kernel's refusal interval")
		})
	}
}

func TestTarget(t *testing.T) {
	connected := func(status metav1.ConditionStatus) *v1.GitOpsDeploymentManagedEnvironment {
		return &v1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "jane", UID: "env-uid"},
			Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://cluster.example.com:6443"},
			Status: v1.GitOpsDeploymentManagedEnvironmentStatus{Conditions: []metav1.Condition{{
				Type: v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: status}}},
		}
	}
	remote := argocd.ClusterServer("https://cluster.example.com:6443", "env-uid")
	cases := []struct {
		name    string
		mut     func(*v1.GitOpsDeploymentSpec)
		env     *v1.GitOpsDeploymentManagedEnvironment
		want    argocd.Target
		waiting string // the refusal's reason while the environment is not there
	}{
		{"local, own namespace by default", func(*v1.GitOpsDeploymentSpec) {}, nil, argocd.Target{Server: argocd.LocalServer, Namespace: "jane"}, ""},
		{"local, own namespace named", func(s *v1.GitOpsDeploymentSpec) { s.Destination.Namespace = "jane" }, nil,
			argocd.Target{Server: argocd.LocalServer, Namespace: "jane"}, ""},
		{"environment connected", func(s *v1.GitOpsDeploymentSpec) {
			s.Destination = v1.ApplicationDestination{Environment: "prod", Namespace: "apps"}
		},
			connected(metav1.ConditionTrue), argocd.Target{Server: remote, Namespace: "apps"}, ""},
		{"environment connected, tenant's namespace by default", func(s *v1.GitOpsDeploymentSpec) { s.Destination.Environment = "prod" },
			connected(metav1.ConditionTrue), argocd.Target{Server: remote, Namespace: "jane"}, ""},
		{"environment missing", func(s *v1.GitOpsDeploymentSpec) { s.Destination.Environment = "prod" }, nil, argocd.Target{}, ReasonManagedEnvironmentNotFound},
		{"environment not connected", func(s *v1.GitOpsDeploymentSpec) { s.Destination.Environment = "prod" },
			connected(metav1.ConditionFalse), argocd.Target{}, ReasonManagedEnvironmentNotConnected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, refusal := target(deployment(tc.mut), tc.env)
			assert.Equal(t, tc.want, got)
			if tc.waiting == "" {
				assert.Nil(t, refusal)
				return
			}
			require.NotNil(t, refusal)
			assert.Equal(t, tc.waiting, refusal.Reason)
			assert.Equal(t, string(v1.GitOpsDeploymentReasonErrorOccurred), refusal.ConditionReason())
			assert.Equal(t, v1.ErrMsgManagedEnvUnresolved, refusal.Message, "the original service's message")
			assert.Equal(t, kernel.WaitingRetry, refusal.After, "looked at again at the waiting interval")
		})
	}
}

// The requeue is decided by the error's type: a refusal's After, a waiting's
// After, nothing by its message.
func TestOutcomeOfDecisions(t *testing.T) {
	_, waiting := target(deployment(func(s *v1.GitOpsDeploymentSpec) { s.Destination.Environment = "gone" }), nil)
	res, err := kernel.Outcome(ctrl.Result{}, waiting)
	require.NoError(t, err)
	assert.Equal(t, kernel.WaitingRetry, res.RequeueAfter)

	res, err = kernel.Outcome(ctrl.Result{}, check(deployment(func(s *v1.GitOpsDeploymentSpec) { s.Source.Path = "/" }), false))
	require.NoError(t, err)
	assert.Equal(t, kernel.RefusalRetry, res.RequeueAfter)
}
