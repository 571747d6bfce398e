//go:build !unit

// The real-API suite of the plugin generator: the sidecar's binding
// reconciler on a real API server makes the ApplicationSets, the generator
// answers from that API server. A package of its own so that `make unit`
// stays free of servers.
package apitest_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	generator "github.com/gitops-service/gitops-service/applicationset-generator"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	argoNS = stack.SuiteArgoNamespace
	wait   = 30 * time.Second
	tick   = 100 * time.Millisecond
)

var (
	k8s   client.Client
	srv   *httptest.Server
	token = "generator-token-" + utilrand.String(12)
)

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "generator", func(s *stack.Suite) error {
		k8s = s.Client
		srv = httptest.NewServer((&generator.Server{Token: func() []byte { return []byte(token) },
			// As the suite's reconcilers: its repositories are file:// URLs.
			Params: generator.ServerParams(s.Client, s.Client, argoNS, true)}).Handler())
		s.Cleanup(func(bool) { srv.Close() })
		return nil
	}))
}

// binding makes a tenant with everything a binding needs but the Snapshot
// (made when withSnapshot), and the binding.
func binding(t *testing.T, withSnapshot bool) *as.SnapshotEnvironmentBinding {
	t.Helper()
	ctx := context.Background()
	ns := "tenant-" + utilrand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: meta("shop"), Spec: as.ApplicationSpec{DisplayName: "Shop"}}))
	comp := &as.Component{ObjectMeta: meta("web"), Spec: as.ComponentSpec{ComponentName: "web", Application: "shop", ContainerImage: "quay.io/x/web:0"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: "https://git.example.test/gitops.git", Branch: "main", Context: "components/web/base"}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: meta("dev")}))
	if withSnapshot {
		snapshot(t, ns)
	}
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: meta("shop-dev"),
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap"}}
	require.NoError(t, k8s.Create(ctx, seb))
	return seb
}

func snapshot(t *testing.T, ns string) {
	require.NoError(t, k8s.Create(context.Background(), &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/x/web:1"}}}}))
}

// ask sends the request Argo CD's applicationset-controller sends for the
// ApplicationSet setName about seb; it returns the status and the answer.
func ask(t *testing.T, setName string, seb *as.SnapshotEnvironmentBinding) (int, generator.Response, string) {
	t.Helper()
	body := fmt.Sprintf(`{"applicationSetName":%q,"input":{"parameters":{"namespace":%q,"binding":%q}}}`, setName, seb.Namespace, seb.Name)
	req, err := http.NewRequest(http.MethodPost, srv.URL+generator.Path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	var out generator.Response
	var failure struct{ Error string }
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(raw, &out))
	} else {
		require.NoError(t, json.Unmarshal(raw, &failure))
	}
	return resp.StatusCode, out, failure.Error
}

func applicationSet(t *testing.T, seb *as.SnapshotEnvironmentBinding) *argov1alpha1.ApplicationSet {
	t.Helper()
	set := &argov1alpha1.ApplicationSet{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationSetName(string(seb.UID))}, set) == nil
	}, wait, tick, "no ApplicationSet for %s", seb.Name)
	return set
}

// refused waits for the binding's refusal whose message contains want.
func refused(t *testing.T, seb *as.SnapshotEnvironmentBinding, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		cur := &as.SnapshotEnvironmentBinding{}
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(seb), cur) != nil {
			return false
		}
		c := meta.FindStatusCondition(cur.Status.BindingConditions, as.BindingConditionErrorOccurred)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, want)
	}, wait, tick, "binding %s not refused with %q", seb.Name, want)
}

func TestGeneratorAnswersTheBindingsOwnApplicationSet(t *testing.T) {
	seb := binding(t, true)
	set := applicationSet(t, seb)
	code, out, msg := ask(t, set.Name, seb)
	require.Equal(t, http.StatusOK, code, msg)
	require.Len(t, out.Output.Parameters, 1)
	p := out.Output.Parameters[0]
	assert.Equal(t, "web", p.Component)
	assert.Equal(t, "https://git.example.test/gitops.git", p.RepoURL)
	assert.Equal(t, "components/web/base", p.Path)
	assert.Equal(t, "main", p.TargetRevision)
	assert.Equal(t, "quay.io/x/web:1", p.Image)

	other := binding(t, true)
	code, _, msg = ask(t, argocd.ApplicationSetName(string(other.UID)), seb)
	assert.Equal(t, http.StatusBadRequest, code, "another binding's ApplicationSet asks for this binding")
	assert.Contains(t, msg, "is not the one of SnapshotEnvironmentBinding")
}

// TestGeneratorRefusesWhatTheReconcilerRefuses: once the reconciler refuses a
// binding's repository, path or branch, the ApplicationSet it wrote before
// still asks; the generator refuses the same values (fails when the
// generator serves them unchecked).
func TestGeneratorRefusesWhatTheReconcilerRefuses(t *testing.T) {
	ctx := context.Background()
	seb := binding(t, true)
	set := applicationSet(t, seb)
	for name, tc := range map[string]struct {
		repo as.BindingComponentGitOpsRepository
		want string
	}{
		"path leaving the repository": {as.BindingComponentGitOpsRepository{URL: "https://git.example.test/gitops.git", Path: "../../../etc", Branch: "main"}, "no '..' segments"},
		"absolute path":               {as.BindingComponentGitOpsRepository{URL: "https://git.example.test/gitops.git", Path: "/etc", Branch: "main"}, "must be relative"},
		"option-like branch":          {as.BindingComponentGitOpsRepository{URL: "https://git.example.test/gitops.git", Path: "p", Branch: "--upload-pack=touch /tmp/x"}, "GitOps repository branch"},
		"git remote helper":           {as.BindingComponentGitOpsRepository{URL: "ext::sh -c touch% /tmp/x", Path: "p", Branch: "main"}, "GitOps repository"},
		"NEL in the path":             {as.BindingComponentGitOpsRepository{URL: "https://git.example.test/gitops.git", Path: "p\u0085metadata:", Branch: "main"}, "U+0085"},
	} {
		t.Run(name, func(t *testing.T) {
			cur := &as.SnapshotEnvironmentBinding{}
			require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(seb), cur))
			cur.Status.Components = []as.BindingComponentStatus{{Name: "web", GitOpsRepository: tc.repo}}
			require.NoError(t, k8s.Status().Update(ctx, cur))
			refused(t, seb, tc.want)
			require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(set), set), "the ApplicationSet written before stays")
			code, out, msg := ask(t, set.Name, seb)
			assert.Equal(t, http.StatusBadRequest, code, "served: %+v", out.Output.Parameters)
			assert.Contains(t, msg, tc.want)
			assert.Empty(t, out.Output.Parameters)
		})
	}
}

// TestGeneratorRefusesApplicationSetsNotOurs: the ApplicationSet named for
// the binding must be ours, made for that binding (fails when the name alone
// is trusted).
func TestGeneratorRefusesApplicationSetsNotOurs(t *testing.T) {
	ctx := context.Background()
	// The binding reconciler leaves these alone (not its own); the generator
	// must not answer them either.
	for name, forge := range map[string]func(l, a map[string]string){
		"no labels of ours":         func(l, a map[string]string) { clear(l); clear(a) },
		"labels of another binding": func(l, _ map[string]string) { l[ownership.LabelOwnerUID] = "another-uid" },
	} {
		t.Run(name, func(t *testing.T) {
			// Without its Snapshot the binding gets no ApplicationSet: a look-alike takes its name.
			seb := binding(t, false)
			refused(t, seb, "Snapshot")
			lookalike := argocd.ApplicationSet(argoNS, seb)
			forge(lookalike.Labels, lookalike.Annotations)
			require.NoError(t, k8s.Create(ctx, lookalike))
			snapshot(t, seb.Namespace)
			refused(t, seb, "delete or rename it")
			code, out, msg := ask(t, lookalike.Name, seb)
			assert.Equal(t, http.StatusBadRequest, code, "served: %+v", out.Output.Parameters)
			assert.Contains(t, msg, "is not the one of SnapshotEnvironmentBinding")
		})
	}
}

// TestGeneratorRefusesARepositoryTheTenantCannotRead: a binding whose
// component moves to a repository the tenant cannot read (here its own
// credentials, which the repository never accepted) is refused by the
// reconciler, and the ApplicationSet written before gets no answer naming
// it: Argo CD allows a project any repository it holds the project's
// credentials for, accepted or not, and would render it from another
// tenant's checkout (fails when the generator answers unchecked).
func TestGeneratorRefusesARepositoryTheTenantCannotRead(t *testing.T) {
	ctx := context.Background()
	seb := binding(t, true)
	set := applicationSet(t, seb)
	const repo = "ssh://git@127.0.0.1:1/other-tenant/private.git"
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(key, "")
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: seb.Namespace, Name: "borrowed"},
		Type:       v1.RepositoryCredentialSecretType,
		StringData: map[string]string{"url": repo, "sshPrivateKey": string(pem.EncodeToMemory(block))}}))
	require.NoError(t, k8s.Create(ctx, &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: metav1.ObjectMeta{Namespace: seb.Namespace, Name: "borrowed"},
		Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: repo, Secret: "borrowed"}}))

	cur := &as.SnapshotEnvironmentBinding{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(seb), cur))
	cur.Status.Components = []as.BindingComponentStatus{{Name: "web", GitOpsRepository: as.BindingComponentGitOpsRepository{URL: repo, Path: "p", Branch: "main"}}}
	require.NoError(t, k8s.Status().Update(ctx, cur))
	refused(t, seb, "cannot be read by this namespace")
	code, out, msg := ask(t, set.Name, seb)
	assert.Equal(t, http.StatusBadRequest, code, "served: %+v", out.Output.Parameters)
	assert.Contains(t, msg, "is not allowed for namespace")
	assert.Empty(t, out.Output.Parameters)
}
