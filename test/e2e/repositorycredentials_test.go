package e2e

import (
	"context"
	"os"
	"path/filepath"
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
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// The private git server: HTTPS with basic auth, its CA trusted by Argo CD.
// Started by the first test that needs it, stopped by TestMain.
var (
	privateGitOnce sync.Once
	privateGitSrv  *stack.GitHTTPServer
	privateGitErr  error
	privateGitRoot string
	privateGitUser = "jane"
	// privateGitPassword is a canary: it must never leave a Secret's data.
	privateGitPassword string
)

func privateGit(t *testing.T) *stack.GitHTTPServer {
	t.Helper()
	privateGitOnce.Do(func() {
		privateGitPassword = canary("git-password")
		privateGitRoot = filepath.Join(gitRoot, "private")
		if privateGitErr = os.MkdirAll(privateGitRoot, 0o755); privateGitErr != nil {
			return
		}
		if privateGitSrv, privateGitErr = stack.ServeGitHTTPS(privateGitRoot, privateGitUser, privateGitPassword); privateGitErr != nil {
			return
		}
		privateGitErr = argo.TrustGitServerCA(privateGitSrv.Host, privateGitSrv.CAPEM)
	})
	require.NoError(t, privateGitErr, "starting the private git server")
	return privateGitSrv
}

func stopPrivateGit() {
	if privateGitSrv != nil {
		_ = privateGitSrv.Close()
	}
}

// privateRepo creates a repository on the private server with files committed.
func privateRepo(t *testing.T, files map[string]string) (url, sha string) {
	t.Helper()
	srv := privateGit(t)
	r, err := stack.NewGitRepo(privateGitRoot, "private-"+rand.String(6))
	require.NoError(t, err)
	sha, err = r.Commit(files, "private content")
	require.NoError(t, err)
	url, err = srv.RepoURL(r)
	require.NoError(t, err)
	return url, sha
}

func repositoryCredentials(t *testing.T, ns, name, url, user, password string) *v1.GitOpsDeploymentRepositoryCredentials {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-secret"},
		Type:       v1.RepositoryCredentialSecretType,
		StringData: map[string]string{"url": url, "username": user, "password": password},
	}))
	rc := &v1.GitOpsDeploymentRepositoryCredentials{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: url, Secret: name + "-secret"},
	}
	require.NoError(t, k8s.Create(ctx, rc))
	return rc
}

// repositoryCondition matches a RepositoryCredentials whose condition typ has
// the status and reason.
func repositoryCondition(typ string, status metav1.ConditionStatus, reason string) func(client.Object) bool {
	return func(obj client.Object) bool {
		rc, ok := obj.(*v1.GitOpsDeploymentRepositoryCredentials)
		if !ok {
			return false
		}
		c := meta.FindStatusCondition(rc.Status.Conditions, typ)
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == rc.Generation
	}
}

func waitObject(t *testing.T, obj client.Object, what string, ok func(client.Object) bool) {
	t.Helper()
	stack.WaitFor(t, k8s, obj, deployWait, "became "+what, ok)
}

// hasCondition matches a GitOpsDeployment with a True condition of type typ.
func hasCondition(typ v1.GitOpsConditionType) func(*v1.GitOpsDeployment) bool {
	return func(gd *v1.GitOpsDeployment) bool {
		for _, c := range gd.Status.Conditions {
			if c.Type == typ && c.Status == v1.GitOpsConditionStatusTrue {
				return true
			}
		}
		return false
	}
}

func TestPrivateRepositoryNeedsTheTenantsOwnCredentials(t *testing.T) {
	url, sha := privateRepo(t, map[string]string{"app/cm.yaml": configMap("private", "from a private repository")})
	owner, other := tenantNamespace(t), tenantNamespace(t)

	// Without credentials Argo CD cannot read the repository.
	gd := deploy(t, owner, "private", url, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "ComparisonError (no credentials)", hasCondition(v1.GitOpsDeploymentConditionComparisonError))
	_, err := getConfigMap(owner, "private")
	require.Error(t, err, "deployed without credentials")

	// With them it deploys.
	rc := repositoryCredentials(t, owner, "private-repo", url, privateGitUser, privateGitPassword)
	waitObject(t, rc, "verified", repositoryCondition(v1.RepositoryCredentialConditionValidCredential, metav1.ConditionTrue, v1.RepositoryCredentialReasonRepositoryCredentialUpToDate))
	kubectlWaitReady(t, owner, resRepoCreds, rc.GetName())
	waitStatus(t, gd, "Synced/Healthy at "+sha, syncedHealthyAt(sha))
	cm, err := getConfigMap(owner, "private")
	require.NoError(t, err)
	require.Equal(t, "from a private repository", cm.Data["value"])

	// Another tenant deploying the same URL does not get them, even now that
	// Argo CD has read the repository for the first tenant.
	gd2 := deploy(t, other, "private", url, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd2, "ComparisonError (no credentials)", hasCondition(v1.GitOpsDeploymentConditionComparisonError))
	require.Never(t, func() bool {
		_, err := getConfigMap(other, "private")
		return err == nil
	}, 20*time.Second, poll, "the second tenant deployed the private repository with the first tenant's credentials")
	got := &v1.GitOpsDeployment{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd2), got))
	require.NotEqual(t, v1.SyncStatusCodeSynced, got.Status.Sync.Status)

	// Wrong credentials of the second tenant are reported on its CR, and still deploy nothing.
	rc2 := repositoryCredentials(t, other, "private-repo", url, privateGitUser, canary("wrong-password"))
	waitObject(t, rc2, "refused", repositoryCondition(v1.RepositoryCredentialConditionValidCredential, metav1.ConditionFalse, v1.RepositoryCredentialReasonInvalidCredentials))

	// Deleting the credentials takes them away from Argo CD again.
	require.NoError(t, k8s.Delete(context.Background(), rc))
	waitDeleted(t, rc)
	require.NoError(t, argo.Refresh(context.Background(), argo.Namespace, applicationName(t, gd)))
	waitStatus(t, gd, "ComparisonError again", hasCondition(v1.GitOpsDeploymentConditionComparisonError))
}

func applicationName(t *testing.T, gd *v1.GitOpsDeployment) string {
	t.Helper()
	got := &v1.GitOpsDeployment{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), got))
	return "gitopsdepl-" + string(got.UID)
}

// repositoryCredentialsIsolationCases are hostile RepositoryCredentials: each
// must be refused with its reason and get no Argo CD Secret.
func repositoryCredentialsIsolationCases() []isolationCase {
	const url = "https://git.example.com/tenant/private.git"
	secret := func(ns, name string, typ corev1.SecretType, data map[string]string) func(t *testing.T, tenant, neighbour string) {
		return func(t *testing.T, tenant, neighbour string) {
			if ns == "neighbour" {
				ns = neighbour
			} else {
				ns = tenant
			}
			require.NoError(t, k8s.Create(context.Background(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, StringData: data,
			}))
		}
	}
	creds := map[string]string{"url": url, "username": "u", "password": canary("repo-password")}
	rc := func(name, repoURL, secretName string) func(string, string) client.Object {
		return func(tenant, _ string) client.Object {
			return &v1.GitOpsDeploymentRepositoryCredentials{
				ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name},
				Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: repoURL, Secret: secretName},
			}
		}
	}
	errorReason := func(reason string) func(client.Object) bool {
		return repositoryCondition(v1.RepositoryCredentialConditionErrorOccurred, metav1.ConditionTrue, reason)
	}
	good := corev1.SecretType(v1.RepositoryCredentialSecretType)
	return []isolationCase{
		{name: "repocreds: Secret only in the neighbour's namespace", setup: secret("neighbour", "creds", good, creds),
			object: rc("rc", url, "creds"), condition: errorReason(v1.RepositoryCredentialReasonSecretNotFound)},
		{name: "repocreds: Opaque Secret", setup: secret("tenant", "creds", corev1.SecretTypeOpaque, creds),
			object: rc("rc", url, "creds"), condition: errorReason(v1.RepositoryCredentialReasonSecretInvalidType)},
		{name: "repocreds: Secret's url names another repository", setup: secret("tenant", "creds", good, map[string]string{"url": "https://evil.example.com/x.git", "username": "u", "password": canary("repo-password")}),
			object: rc("rc", url, "creds"), condition: errorReason(v1.RepositoryCredentialReasonInvalidRepositoryURL)},
		{name: "repocreds: password in spec.url", setup: secret("tenant", "creds", good, creds),
			object: rc("rc", strings.Replace(url, "https://", "https://u:"+canary("url-password")+"@", 1), "creds"), condition: errorReason(v1.RepositoryCredentialReasonInvalidRepositoryURL)},
		{name: "repocreds: file:// url", setup: secret("tenant", "creds", good, map[string]string{"url": "file:///etc", "username": "u", "password": canary("repo-password")}),
			object: rc("rc", "file:///etc", "creds"), condition: errorReason(v1.RepositoryCredentialReasonInvalidRepositoryURL)},
		{name: "repocreds: path-like Secret name", object: rc("rc", url, "..%2Fkube-system%2Fx"), condition: errorReason(v1.RepositoryCredentialReasonSecretNotFound)},
		{name: "repocreds: over-long name", setup: secret("tenant", "creds", good, creds),
			object: rc(strings.Repeat("r", 253), url, strings.Repeat("s", 253)), condition: errorReason(v1.RepositoryCredentialReasonSecretNotFound)},
	}
}

// Argo CD's repo-server keeps one checkout per repository URL and skips the
// fetch (hence the credentials) when the revision is already there, and it
// resolves a branch from a refs cache keyed by URL alone. A tenant naming
// another tenant's private repository at a commit it learned, or at HEAD
// while the refs are cached, must still get nothing.
func TestPrivateRepositoryStaysPrivateOnceArgoCDHasCheckedItOut(t *testing.T) {
	url, sha := privateRepo(t, map[string]string{"app/cm.yaml": configMap("private", "from a private repository")})
	owner, other := tenantNamespace(t), tenantNamespace(t)

	rc := repositoryCredentials(t, owner, "private-repo", url, privateGitUser, privateGitPassword)
	waitObject(t, rc, "verified", repositoryCondition(v1.RepositoryCredentialConditionValidCredential, metav1.ConditionTrue, v1.RepositoryCredentialReasonRepositoryCredentialUpToDate))
	gd := deploy(t, owner, "private", url, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "Synced/Healthy at "+sha, syncedHealthyAt(sha))

	atCommit := deploy(t, other, "at-commit", url, "app", v1.GitOpsDeploymentSpecTypeAutomated, func(gd *v1.GitOpsDeployment) {
		gd.Spec.Source.TargetRevision = sha
	})
	atHead := deploy(t, other, "at-head", url, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	seb := bindingOfRepository(t, other, url, "app")
	waitStatus(t, atCommit, "ComparisonError (no credentials)", hasCondition(v1.GitOpsDeploymentConditionComparisonError))
	waitStatus(t, atHead, "ComparisonError (no credentials)", hasCondition(v1.GitOpsDeploymentConditionComparisonError))
	for _, gd := range []*v1.GitOpsDeployment{atCommit, atHead} {
		got := waitStatus(t, gd, "refused: RepositoryNotReadable", readyReason("RepositoryNotReadable"))
		assertNothingWrittenFor(t, got, other)
	}
	got := waitBinding(t, seb, "an error condition", func(b *as.SnapshotEnvironmentBinding) bool {
		c := meta.FindStatusCondition(b.Status.BindingConditions, as.BindingConditionErrorOccurred)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "cannot be read by this namespace")
	})
	assertNothingWrittenFor(t, got, other)
	assertWarningEvent(t, got)
	require.Never(t, func() bool {
		_, err := getConfigMap(other, "private")
		return err == nil
	}, 40*time.Second, poll, "the second tenant deployed the private repository Argo CD had checked out for the first")
	for _, gd := range []*v1.GitOpsDeployment{atCommit, atHead} {
		got := &v1.GitOpsDeployment{}
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), got))
		require.NotEqual(t, v1.SyncStatusCodeSynced, got.Status.Sync.Status, gd.Name)
		require.Empty(t, got.Status.Resources, gd.Name)
	}
}

// readyReason matches a GitOpsDeployment whose Ready condition is False with reason.
func readyReason(reason string) func(*v1.GitOpsDeployment) bool {
	return func(gd *v1.GitOpsDeployment) bool {
		for _, c := range gd.Status.Conditions {
			if c.Type == "Ready" {
				return c.Status == v1.GitOpsConditionStatusFalse && string(c.Reason) == reason
			}
		}
		return false
	}
}

// bindingOfRepository binds, in ns, a Snapshot of an application whose one
// component's GitOps repository is url at path (no credentials of ns's).
func bindingOfRepository(t *testing.T, ns, url, path string) *as.SnapshotEnvironmentBinding {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrowed"}, Spec: as.ApplicationSpec{DisplayName: "Borrowed"}}))
	comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
		Spec: as.ComponentSpec{ComponentName: "private", Application: "borrowed", ContainerImage: "quay.io/example/private:1"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: url, Branch: "main", Context: path}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrowed-env"}}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrowed-1"},
		Spec: as.SnapshotSpec{Application: "borrowed", Components: []as.SnapshotComponent{{Name: "private", ContainerImage: "quay.io/example/private:1"}}}}))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrowed"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "borrowed", Environment: "borrowed-env", Snapshot: "borrowed-1"}}
	require.NoError(t, k8s.Create(ctx, seb))
	return seb
}
