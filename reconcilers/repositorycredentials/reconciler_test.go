//go:build !unit

package repositorycredentials_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	wait = 40 * time.Second
	tick = stack.Tick
)

type rcT = v1.GitOpsDeploymentRepositoryCredentials

func tenant(t *testing.T) *corev1.Namespace { return stack.Tenant(t, k8s) }

// privateRepo creates a repository served by git and returns its https URL.
func privateRepo(t *testing.T) string {
	t.Helper()
	r, err := stack.NewGitRepo(gitRoot, "private-"+rand.String(6))
	require.NoError(t, err)
	u, err := git.RepoURL(r)
	require.NoError(t, err)
	return u
}

func credsSecret(t *testing.T, ns, name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, StringData: data}
	require.NoError(t, k8s.Create(context.Background(), s))
	return s
}

func goodSecret(t *testing.T, ns, name, url string) *corev1.Secret {
	return credsSecret(t, ns, name, v1.RepositoryCredentialSecretType, map[string]string{"url": url, "username": gitUser, "password": gitToken})
}

func newRC(t *testing.T, ns, name, url, secret string) *rcT {
	t.Helper()
	rc := &rcT{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: url, Secret: secret},
	}
	require.NoError(t, k8s.Create(context.Background(), rc))
	return rc
}

// want is "Status/Reason" per condition type; msgPart must be in ErrorOccurred's message.
func waitConditions(t *testing.T, rc *rcT, want map[string]string, msgPart string) *rcT {
	t.Helper()
	got := &rcT{}
	var getErr error
	ok := assert.Eventually(t, func() bool {
		if getErr = k8s.Get(context.Background(), client.ObjectKeyFromObject(rc), got); getErr != nil {
			return false
		}
		for typ, sr := range want {
			c := meta.FindStatusCondition(got.Status.Conditions, typ)
			if c == nil || string(c.Status)+"/"+c.Reason != sr || c.ObservedGeneration != got.Generation {
				return false
			}
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1.RepositoryCredentialConditionErrorOccurred)
		return strings.Contains(c.Message, msgPart)
	}, wait, tick)
	if !ok {
		// Formatted now: Eventually's message arguments are evaluated before it polls.
		t.Fatalf("%s/%s never got %v %q; last status: %+v (read error: %v)", rc.Namespace, rc.Name, want, msgPart, got.Status, getErr)
	}
	return got
}

var (
	verified = map[string]string{
		v1.RepositoryCredentialConditionErrorOccurred:      "False/RepositoryCredentialUpToDate",
		v1.RepositoryCredentialConditionValidRepositoryURL: "True/ValidRepositoryUrl",
		v1.RepositoryCredentialConditionValidCredential:    "True/RepositoryCredentialUpToDate",
	}
	errorReason = func(reason string) map[string]string {
		return map[string]string{v1.RepositoryCredentialConditionErrorOccurred: "True/" + reason}
	}
)

func secretKey(rc *rcT) types.NamespacedName {
	return types.NamespacedName{Namespace: argoNS, Name: argocd.RepositorySecretName(string(rc.UID))}
}

func waitRepoSecret(t *testing.T, rc *rcT, cond func(*corev1.Secret) bool) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), secretKey(rc), s) == nil && cond(s)
	}, wait, tick, "repository Secret of %s/%s never reached the expected state", rc.Namespace, rc.Name)
	return s
}

func waitNoRepoSecret(t *testing.T, rc *rcT) {
	t.Helper()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), secretKey(rc), &corev1.Secret{}))
	}, wait, tick, "repository Secret of %s/%s still exists", rc.Namespace, rc.Name)
}

// assertNoRepoSecrets checks, for a moment, that no repository Secret exists for the namespace.
func assertNoRepoSecrets(t *testing.T, ns string) {
	t.Helper()
	require.Never(t, func() bool {
		var list corev1.SecretList
		require.NoError(t, k8s.List(context.Background(), &list, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
		return len(list.Items) > 0
	}, 2*time.Second, tick, "a repository Secret was written for %s", ns)
}

func exists(*corev1.Secret) bool { return true }

func TestWorkingCredentialsGiveArgoCDAProjectScopedSecret(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	url := privateRepo(t)
	goodSecret(t, ns.Name, "creds", url)
	rc := newRC(t, ns.Name, "private", url, "creds")
	got := waitConditions(t, rc, verified, "")
	ready := waitConditions(t, rc, map[string]string{"Ready": "True/Verified"}, "")
	assert.Equal(t, ready.Generation, ready.Status.ObservedGeneration)
	assert.Contains(t, got.Finalizers, v1.FinalizerRepositoryCredentials)
	s := waitRepoSecret(t, rc, exists)
	assert.Equal(t, "repository", s.Labels["argocd.argoproj.io/secret-type"])
	assert.Equal(t, argocd.ProjectName(string(ns.UID)), string(s.Data["project"]))
	assert.Equal(t, url, string(s.Data["url"]))
	assert.Equal(t, gitUser, string(s.Data["username"]))
	assert.Equal(t, gitToken, string(s.Data["password"]))

	// Someone edits our Secret: it is put back.
	s.Data["password"] = []byte("tampered")
	require.NoError(t, k8s.Update(ctx, s))
	waitRepoSecret(t, rc, func(s *corev1.Secret) bool { return string(s.Data["password"]) == gitToken })

	// Deleting the CR deletes the Secret, then the CR goes.
	require.NoError(t, k8s.Delete(ctx, rc))
	waitNoRepoSecret(t, rc)
	require.Eventually(t, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(rc), &rcT{})) }, wait, tick)
}

func TestWrongPasswordIsReportedAndFixed(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	url := privateRepo(t)
	secret := credsSecret(t, ns.Name, "creds", v1.RepositoryCredentialSecretType, map[string]string{"url": url, "username": gitUser, "password": "wrong-b71e"})
	rc := newRC(t, ns.Name, "private", url, "creds")
	waitConditions(t, rc, map[string]string{
		v1.RepositoryCredentialConditionErrorOccurred:      "True/InvalidCredentials",
		v1.RepositoryCredentialConditionValidRepositoryURL: "True/ValidRepositoryUrl",
		v1.RepositoryCredentialConditionValidCredential:    "False/InvalidCredentials",
	}, "HTTP 401")
	waitConditions(t, rc, map[string]string{"Ready": "False/InvalidCredentials"}, "HTTP 401")
	// Argo CD still gets them (the repository may be down for a moment); the
	// status says they do not work.
	waitRepoSecret(t, rc, exists)
	assertWarningEvent(t, rc, "InvalidCredentials")

	secret.StringData = map[string]string{"password": gitToken}
	require.NoError(t, k8s.Update(ctx, secret))
	waitConditions(t, rc, verified, "")
	waitRepoSecret(t, rc, func(s *corev1.Secret) bool { return string(s.Data["password"]) == gitToken })
}

func TestMissingRepository(t *testing.T) {
	ns := tenant(t)
	url := git.URL("does-not-exist")
	goodSecret(t, ns.Name, "creds", url)
	rc := newRC(t, ns.Name, "private", url, "creds")
	waitConditions(t, rc, map[string]string{
		v1.RepositoryCredentialConditionErrorOccurred:      "True/InvalidRepositoryUrl",
		v1.RepositoryCredentialConditionValidRepositoryURL: "False/InvalidRepositoryUrl",
		v1.RepositoryCredentialConditionValidCredential:    "Unknown/NotChecked",
	}, "Repository does not exist: "+url)
}

func TestUntrustedServer(t *testing.T) {
	// A second server on the same host with a CA of its own: Argo CD trusts
	// only the first one's CA for that host, and so does the check.
	dir := t.TempDir()
	other, err := stack.ServeGitHTTPS(dir, gitUser, gitToken)
	require.NoError(t, err)
	defer other.Close()
	r, err := stack.NewGitRepo(dir, "app")
	require.NoError(t, err)
	url, err := other.RepoURL(r)
	require.NoError(t, err)
	ns := tenant(t)
	goodSecret(t, ns.Name, "creds", url)
	rc := newRC(t, ns.Name, "private", url, "creds")
	waitConditions(t, rc, errorReason(v1.RepositoryCredentialReasonInvalidRepositoryURL), "argocd-tls-certs-cm")
}

func TestSecretMissingThenCreated(t *testing.T) {
	ns := tenant(t)
	url := privateRepo(t)
	rc := newRC(t, ns.Name, "private", url, "creds")
	waitConditions(t, rc, map[string]string{
		v1.RepositoryCredentialConditionErrorOccurred:   "True/SecretNotFound",
		v1.RepositoryCredentialConditionValidCredential: "False/SecretNotFound",
	}, "Secret 'creds' was not found")
	assertNoRepoSecrets(t, ns.Name)
	assertWarningEvent(t, rc, "SecretNotFound")
	// The tenants' Secrets of this type are watched: created, it is used.
	goodSecret(t, ns.Name, "creds", url)
	waitConditions(t, rc, verified, "")
	waitRepoSecret(t, rc, exists)
}

// A refused Secret takes the credentials away from Argo CD again.
func TestSecretReplacedByAWrongTypeRemovesTheRepositorySecret(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	url := privateRepo(t)
	secret := goodSecret(t, ns.Name, "creds", url)
	rc := newRC(t, ns.Name, "private", url, "creds")
	waitRepoSecret(t, rc, exists)
	require.NoError(t, k8s.Delete(ctx, secret))
	credsSecret(t, ns.Name, "creds", corev1.SecretTypeOpaque, map[string]string{"url": url, "username": gitUser, "password": gitToken})
	waitConditions(t, rc, errorReason(v1.RepositoryCredentialReasonSecretInvalidType), v1.RepositoryCredentialSecretType)
	waitNoRepoSecret(t, rc)
}

func TestRefusals(t *testing.T) {
	url := privateRepo(t)
	neighbour := tenant(t)
	goodSecret(t, neighbour.Name, "theirs", url)
	for name, tc := range map[string]struct {
		url, secret string
		setup       func(t *testing.T, ns string)
		reason      string
		msgPart     string
	}{
		"secret only in another namespace": {url: url, secret: "theirs", reason: v1.RepositoryCredentialReasonSecretNotFound, msgPart: "Secret 'theirs' was not found"},
		"service account token secret": {url: url, secret: "sa", reason: v1.RepositoryCredentialReasonSecretInvalidType, setup: func(t *testing.T, ns string) {
			credsSecret(t, ns, "sa", corev1.SecretTypeOpaque, map[string]string{"url": url, "username": gitUser, "password": gitToken})
		}},
		"secret for another repository": {url: url, secret: "other", reason: v1.RepositoryCredentialReasonInvalidRepositoryURL, msgPart: "does not match spec.url", setup: func(t *testing.T, ns string) {
			goodSecret(t, ns, "other", "https://evil.example.com/steal.git")
		}},
		"http url":              {url: strings.Replace(url, "https://", "http://", 1), secret: "creds", reason: v1.RepositoryCredentialReasonInvalidRepositoryURL, msgPart: "https:// or ssh://"},
		"password in the url":   {url: strings.Replace(url, "https://", "https://jane:hunter2@", 1), secret: "creds", reason: v1.RepositoryCredentialReasonInvalidRepositoryURL, msgPart: "must not contain a password"},
		"file url":              {url: "file:///etc", secret: "creds", reason: v1.RepositoryCredentialReasonInvalidRepositoryURL},
		"odd secret name":       {url: url, secret: "../../kube-system/x", reason: v1.RepositoryCredentialReasonSecretNotFound},
		"over-long secret name": {url: url, secret: strings.Repeat("s", 300), reason: v1.RepositoryCredentialReasonSecretNotFound},
		"https secret without user": {url: url, secret: "nouser", reason: v1.RepositoryCredentialReasonInvalidCredentials, setup: func(t *testing.T, ns string) {
			credsSecret(t, ns, "nouser", v1.RepositoryCredentialSecretType, map[string]string{"url": url, "password": gitToken})
		}},
	} {
		t.Run(name, func(t *testing.T) {
			ns := tenant(t)
			if tc.setup != nil {
				tc.setup(t, ns.Name)
			}
			rc := newRC(t, ns.Name, "rc", tc.url, tc.secret)
			got := waitConditions(t, rc, errorReason(tc.reason), tc.msgPart)
			assert.NotContains(t, got.Status.Conditions[0].Message, "hunter2")
			assertNoRepoSecrets(t, ns.Name)
			assertWarningEvent(t, rc, tc.reason)
		})
	}
}

func TestDuplicateWaitsForTheOlder(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	url := privateRepo(t)
	goodSecret(t, ns.Name, "creds", url)
	first := newRC(t, ns.Name, "first", url, "creds")
	waitConditions(t, first, verified, "")
	second := newRC(t, ns.Name, "second", strings.TrimSuffix(url, ".git"), "creds")
	waitConditions(t, second, errorReason(v1.RepositoryCredentialReasonDuplicate), "'first'")
	require.Never(t, func() bool { return k8s.Get(ctx, secretKey(second), &corev1.Secret{}) == nil }, 2*time.Second, tick)

	require.NoError(t, k8s.Delete(ctx, first))
	waitNoRepoSecret(t, first)
	waitConditions(t, second, verified, "")
	waitRepoSecret(t, second, exists)
}

// Argo CD repository Secrets that are not ours (an admin's, for the same
// repository) are never touched.
func TestForeignSecretsAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	url := privateRepo(t)
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "admin-repo-" + rand.String(5),
			Labels: map[string]string{argocd.LabelSecretType: argocd.SecretTypeRepository}},
		StringData: map[string]string{"url": url, "username": "admin", "password": "admin-pw"},
	}
	require.NoError(t, k8s.Create(ctx, foreign))
	goodSecret(t, ns.Name, "creds", url)
	rc := newRC(t, ns.Name, "private", url, "creds")
	waitConditions(t, rc, verified, "")
	require.NoError(t, k8s.Delete(ctx, rc))
	waitNoRepoSecret(t, rc)
	got := &corev1.Secret{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(foreign), got), "the admin's Secret was deleted")
	assert.Equal(t, "admin-pw", string(got.Data["password"]), "the admin's Secret was changed")
}

func assertWarningEvent(t *testing.T, rc *rcT, reason string) {
	t.Helper()
	stack.WaitForEvent(t, k8s, rc, corev1.EventTypeWarning, reason, "", wait)
}
