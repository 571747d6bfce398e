//go:build !unit

package tenantproject_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
	"github.com/gitops-service/gitops-service/test/stack"
)

// A repository goes into a tenant's AppProject (so Argo CD renders it for the
// tenant) only when the tenant could read it itself: it is public, the tenant
// has credentials the repository accepted, or Argo CD holds credentials it
// gives every project. Argo CD's repo-server would otherwise render another
// tenant's checkout of a private repository without asking for credentials.
func TestProjectsAdmitOnlyRepositoriesTheTenantCanRead(t *testing.T) {
	ctx, c, mgr := startAPIServer(t, "tenantproject-access")
	var asked atomic.Int32
	git := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Path == "/public.git/info/refs" {
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			_, _ = w.Write([]byte("001e# service=git-upload-pack\n0000"))
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "the body of a tenant-chosen server: never shown", http.StatusUnauthorized)
	}))
	t.Cleanup(git.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	unreachable := "https://" + closed.Addr().String() + "/held.git"
	require.NoError(t, closed.Close())
	public, private := git.URL+"/public.git", git.URL+"/private.git"
	// The server's CA, trusted as Argo CD trusts it.
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: stack.SuiteArgoNamespace, Name: "argocd-tls-certs-cm"},
		Data:       map[string]string{"127.0.0.1": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: git.Certificate().Raw}))},
	}))

	access := &tenantproject.Access{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: stack.SuiteArgoNamespace,
		Egress: &egress.Policy{AllowHosts: []string{"127.0.0.1"}}}
	projects := &tenantproject.Projects{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: stack.SuiteArgoNamespace, Access: access}
	tenant, other := stack.Tenant(t, c), stack.Tenant(t, c)
	sourceReposOf := func(ns string) []string {
		n := &corev1.Namespace{}
		require.NoError(t, c.Get(ctx, types.NamespacedName{Name: ns}, n))
		p := &argov1alpha1.AppProject{}
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: stack.SuiteArgoNamespace, Name: argocd.ProjectName(string(n.UID))}, p))
		return p.Spec.SourceRepos
	}
	sourceRepos := func() []string { return sourceReposOf(tenant.Name) }
	notReadable := func(t *testing.T, err error) *tenantproject.NotReadableError {
		t.Helper()
		var nr *tenantproject.NotReadableError
		require.True(t, errors.As(err, &nr), "want NotReadableError, got %v", err)
		return nr
	}

	// Public: admitted, and asked once for a while.
	_, err = projects.Ensure(ctx, tenant.Name, public)
	require.NoError(t, err)
	require.NoError(t, access.Check(ctx, other.Name, public))
	assert.EqualValues(t, 1, asked.Load(), "a public repository is asked again within minutes")
	assert.Contains(t, sourceRepos(), public)

	// Private, no credentials: refused, not in the project; the message says
	// what to do and nothing the server sent.
	_, err = projects.Ensure(ctx, tenant.Name, private)
	nr := notReadable(t, err)
	assert.Contains(t, nr.Error(), "GitOpsDeploymentRepositoryCredentials")
	assert.NotContains(t, nr.Error(), "never shown")
	assert.NotContains(t, sourceRepos(), private)

	// With the tenant's own credentials, once the repository accepted them.
	rc := &v1.GitOpsDeploymentRepositoryCredentials{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant.Name, Name: "creds"},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: private, Secret: "creds"},
	}
	require.NoError(t, c.Create(ctx, rc))
	require.Eventually(t, func() bool {
		return errors.As(access.Check(ctx, tenant.Name, private), &nr) && strings.Contains(nr.Why, "not checked yet")
	}, wait, tick, "credentials not checked yet admit nothing")
	accept(ctx, t, c, rc)
	require.Eventually(t, func() bool { return access.Check(ctx, tenant.Name, private) == nil }, wait, tick, "the accepted credentials admit the repository")
	_, err = projects.Ensure(ctx, tenant.Name, private)
	require.NoError(t, err)
	assert.Contains(t, sourceRepos(), private)
	// ... for that tenant only.
	notReadable(t, access.Check(ctx, other.Name, private))

	// Unanswered, and ssh without a key (nothing to ask): admitted (Argo CD
	// gets no answer either) unless another tenant holds credentials for it.
	sshRepo := "ssh://git@" + closed.Addr().String() + "/held.git"
	for i, repo := range []string{unreachable, sshRepo} {
		require.NoError(t, access.Check(ctx, other.Name, repo))
		held := &v1.GitOpsDeploymentRepositoryCredentials{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenant.Name, Name: fmt.Sprintf("held-%d", i)},
			Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: repo, Secret: "held"},
		}
		require.NoError(t, c.Create(ctx, held))
		accept(ctx, t, c, held)
		require.Eventually(t, func() bool { return access.Check(ctx, other.Name, repo) != nil }, wait, tick, "credentials held by another tenant refuse %s", repo)
		assert.Contains(t, notReadable(t, access.Check(ctx, other.Name, repo)).Why, "another namespace has credentials")
		require.NoError(t, access.Check(ctx, tenant.Name, repo), "the holder itself")
	}

	// Revoked, on the tenant's own pass (Ensure without repositories), only
	// for what is certain: an ssh repository admitted without a key that
	// another tenant now holds credentials for. A public repository in use stays.
	late := "ssh://git@" + closed.Addr().String() + "/late.git"
	_, err = projects.Ensure(ctx, other.Name, late, public)
	require.NoError(t, err, "nobody holds credentials for it yet")
	useRepository(ctx, t, c, other.Name, late, public)
	require.Eventually(t, func() bool {
		_, err := projects.Ensure(ctx, other.Name)
		return err == nil && slices.Contains(sourceReposOf(other.Name), late)
	}, wait, tick, "the Application keeps it")
	lateHeld := &v1.GitOpsDeploymentRepositoryCredentials{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant.Name, Name: "late"},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: late, Secret: "late"},
	}
	require.NoError(t, c.Create(ctx, lateHeld))
	accept(ctx, t, c, lateHeld)
	require.Eventually(t, func() bool {
		_, err := projects.Ensure(ctx, other.Name)
		return err == nil && !slices.Contains(sourceReposOf(other.Name), late)
	}, wait, tick, "another tenant's credentials revoke the ssh repository admitted without a key")
	assert.Contains(t, sourceReposOf(other.Name), public)
	_, err = projects.Ensure(ctx, other.Name, late)
	assert.Contains(t, notReadable(t, err).Why, "another namespace has credentials", "and it is not admitted again")

	// Credentials Argo CD gives every project (no project in the Secret).
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: stack.SuiteArgoNamespace, Name: "platform-wide",
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "repo-creds"}},
		StringData: map[string]string{"url": git.URL + "/", "username": "platform", "password": "x"},
	}))
	require.NoError(t, access.Check(ctx, other.Name, private))
}

const wait, tick = 10 * time.Second, 50 * time.Millisecond

// accept sets the status the RepositoryCredentials reconciler sets when the
// repository accepted the credentials.
func accept(ctx context.Context, t *testing.T, c client.Client, rc *v1.GitOpsDeploymentRepositoryCredentials) {
	t.Helper()
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(rc), rc))
	rc.Status.ObservedGeneration = rc.Generation
	meta.SetStatusCondition(&rc.Status.Conditions, metav1.Condition{Type: v1.RepositoryCredentialConditionValidCredential,
		Status: metav1.ConditionTrue, Reason: v1.RepositoryCredentialReasonRepositoryCredentialUpToDate, ObservedGeneration: rc.Generation})
	require.NoError(t, c.Status().Update(ctx, rc))
}

// useRepository writes an Application of ns's tenant for each repository, as
// the GitOpsDeployment reconciler does once Ensure admitted it.
func useRepository(ctx context.Context, t *testing.T, c client.Client, ns string, repos ...string) {
	t.Helper()
	n := &corev1.Namespace{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Name: ns}, n))
	for i, repo := range repos {
		gd := fmt.Sprintf("gd-%d", i)
		labels, annotations := ownership.Meta(ownership.KindGitOpsDeployment, ns, gd, "uid-"+gd)
		require.NoError(t, c.Create(ctx, &argov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Namespace: stack.SuiteArgoNamespace, Name: gd + "-" + ns, Labels: labels, Annotations: annotations},
			Spec: argov1alpha1.ApplicationSpec{Project: argocd.ProjectName(string(n.UID)),
				Source:      &argov1alpha1.ApplicationSource{RepoURL: repo, Path: "."},
				Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: ns}},
		}))
	}
}
