package tenantproject

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/gitprobe"
)

func repoCreds(generation, observed int64, valid metav1.ConditionStatus, reason string, failed bool) *v1.GitOpsDeploymentRepositoryCredentials {
	rc := &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: metav1.ObjectMeta{Name: "creds", Generation: generation}}
	rc.Status.ObservedGeneration = observed
	rc.Status.Conditions = []metav1.Condition{{Type: v1.RepositoryCredentialConditionValidCredential, Status: valid, Reason: reason, ObservedGeneration: observed}}
	if failed {
		rc.Status.Conditions = append(rc.Status.Conditions, metav1.Condition{Type: v1.RepositoryCredentialConditionErrorOccurred, Status: metav1.ConditionTrue, ObservedGeneration: observed})
	}
	return rc
}

func TestDecideWhoMayUseARepository(t *testing.T) {
	accepted := repoCreds(2, 2, metav1.ConditionTrue, v1.RepositoryCredentialReasonRepositoryCredentialUpToDate, false)
	refused := repoCreds(2, 2, metav1.ConditionFalse, v1.RepositoryCredentialReasonInvalidCredentials, true)
	stale := repoCreds(3, 2, metav1.ConditionTrue, v1.RepositoryCredentialReasonRepositoryCredentialUpToDate, false)
	notChecked := repoCreds(1, 1, metav1.ConditionUnknown, v1.RepositoryCredentialReasonNotChecked, true)
	for _, tc := range []struct {
		name      string
		repo      string
		creds     *v1.GitOpsDeploymentRepositoryCredentials
		allowFile bool
		way       way
		why       string
	}{
		{name: "https without credentials: ask the repository", repo: "https://git.example.com/org/app.git", way: ask},
		{name: "http without credentials: ask the repository", repo: "http://git.example.com/org/app", way: ask},
		{name: "own accepted credentials", repo: "https://git.example.com/org/app.git", creds: accepted, way: admit},
		{name: "own refused credentials", repo: "https://git.example.com/org/app.git", creds: refused, way: refuse, why: "not valid (InvalidCredentials)"},
		{name: "credentials changed since checked", repo: "https://git.example.com/org/app.git", creds: stale, way: refuse, why: "not checked yet"},
		{name: "ssh key the repository accepted", repo: "ssh://git@git.example.com/org/app.git", creds: accepted, way: admit},
		{name: "scp-like with an accepted key", repo: "git@git.example.com:org/app.git", creds: accepted, way: admit},
		{name: "ssh key refused", repo: "ssh://git@git.example.com/org/app.git", creds: refused, way: refuse, why: "not valid (InvalidCredentials)"},
		{name: "credentials not checked (an earlier problem)", repo: "ssh://git@git.example.com/org/app.git", creds: notChecked, way: refuse, why: "not valid (NotChecked)"},
		{name: "ssh without credentials: nothing to ask", repo: "ssh://git@git.example.com/org/app.git", way: unlessHeld, why: "another namespace has credentials"},
		{name: "scp-like without credentials", repo: "git@git.example.com:org/app.git", way: unlessHeld, why: "another namespace has credentials"},
		{name: "git daemon serves anyone", repo: "git://git.example.com/org/app.git", way: admit},
		{name: "file when allowed", repo: "file:///srv/git/app", allowFile: true, way: admit},
		{name: "file when not allowed", repo: "file:///srv/git/app", way: refuse, why: "not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, why := decide(tc.repo, tc.creds, tc.allowFile)
			assert.Equal(t, tc.way, w)
			if tc.why == "" {
				assert.Empty(t, why)
			} else {
				assert.Contains(t, why, tc.why)
			}
		})
	}
}

// A private repository and a missing one read alike: the answer must not
// tell a tenant that another's repository exists.
func TestAnonymousAnswers(t *testing.T) {
	assert.Empty(t, anonymous(gitprobe.Result{Answer: gitprobe.Readable, Status: 200}))
	private := anonymous(gitprobe.Result{Answer: gitprobe.Refused, Status: 401})
	assert.Equal(t, private, anonymous(gitprobe.Result{Answer: gitprobe.Refused, Status: 403}))
	assert.Equal(t, private, anonymous(gitprobe.Result{Answer: gitprobe.NotFound, Status: 404}))
	assert.Contains(t, private, "GitOpsDeploymentRepositoryCredentials")
	assert.Contains(t, anonymous(gitprobe.Result{Answer: gitprobe.NotGit, Status: 302}), "HTTP 302")
	assert.Contains(t, anonymous(gitprobe.Result{Answer: gitprobe.Failed, Detail: "unknown host"}), "unknown host")
	for _, res := range []gitprobe.Result{{Answer: gitprobe.Failed}, {Answer: gitprobe.NotGit, Status: 503}, {Answer: gitprobe.NotGit, Status: 429}} {
		assert.True(t, unanswered(res), "%+v says nothing about the repository", res)
	}
	for _, res := range []gitprobe.Result{{Answer: gitprobe.Readable}, {Answer: gitprobe.Refused, Status: 401}, {Answer: gitprobe.NotFound}, {Answer: gitprobe.NotGit, Status: 302}, {Answer: gitprobe.NotGit, Status: 400}} {
		assert.False(t, unanswered(res), "%+v", res)
	}
}
