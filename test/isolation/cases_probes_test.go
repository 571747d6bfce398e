package isolation

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
	"github.com/gitops-service/gitops-service/reconcilers/repositorycredentials"
)

// Issue 33, item 7: the sidecar's probes of tenant-chosen URLs (repository
// checks, ManagedEnvironment connections) reach no loopback, link-local,
// unspecified or (repositories) in-cluster address: an open-port oracle
// otherwise. The suite's sidecar may reach 127.0.0.1 only (the stack's
// servers, stack.StackLoopback); a server on 127.0.0.2 stands for what must
// stay unreached, and never gets a connection.

var (
	forbiddenOnce sync.Once
	forbiddenPort int
	forbiddenHits atomic.Int32
	// forbiddenChecked: the tests that assert no connection when they end.
	forbiddenChecked sync.Map
)

// forbiddenServer listens on 127.0.0.2 and counts every connection; when
// each test that uses it ends, there must have been none.
func forbiddenServer(t *testing.T) int {
	forbiddenOnce.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.2:0")
		require.NoError(t, err)
		forbiddenPort = l.Addr().(*net.TCPAddr).Port
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			_, _ = w.Write([]byte(canary("internal-service-body")))
		}), ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				forbiddenHits.Add(1)
			}
		}}
		go func() { _ = srv.Serve(l) }() // serves until the test process ends
	})
	if _, done := forbiddenChecked.LoadOrStore(t, true); !done {
		t.Cleanup(func() {
			assert.Zero(t, forbiddenHits.Load(), "a probe of a tenant's URL connected to a loopback address")
		})
	}
	return forbiddenPort
}

// probeURLs are tenant URLs of addresses the sidecar must not connect to;
// each is made when its case runs (the forbidden server's port).
var probeURLs = map[string]func(port int) string{
	"loopback":             func(p int) string { return fmt.Sprintf("https://127.0.0.2:%d/org/repo.git", p) },
	"unspecified":          func(p int) string { return fmt.Sprintf("https://0.0.0.0:%d/org/repo.git", p) },
	"link-local metadata":  func(int) string { return "https://169.254.169.254/latest/meta-data/iam" },
	"IPv4-mapped loopback": func(p int) string { return fmt.Sprintf("https://[::ffff:127.0.0.2]:%d/org/repo.git", p) },
	"cluster service":      func(int) string { return "https://10.96.0.1/org/repo.git" },
}

func probeCases() []hostileCase {
	var out []hostileCase
	notConnected := netfailure.NotAllowed.String()[:40]
	for name, url := range probeURLs {
		if name == "cluster service" {
			continue // an API server may live in the cluster (egress.Policy.ForAPIServers)
		}
		var api string
		out = append(out, hostileCase{Kind: "ManagedEnvironment", Name: "API server on " + name,
			Setup: func(t *testing.T, e tenantEnv) {
				api = url(forbiddenServer(t))
				cfg := clientcmdapi.NewConfig()
				cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: api, InsecureSkipTLSVerify: true}
				cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: canary("probe-api-token")}
				cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
				cfg.CurrentContext = "x"
				kc, err := clientcmd.Write(*cfg)
				require.NoError(t, err)
				create(t, &corev1.Secret{ObjectMeta: om(e.NS, "creds"), Type: v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kc}})
			},
			Object: func(e tenantEnv) client.Object {
				return &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(e.NS, "env"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
					APIURL: api, ClusterCredentialsSecret: "creds", AllowInsecureSkipTLSVerify: true}}
			},
			Want: want{Type: v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: metav1.ConditionFalse,
				Reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, Msg: notConnected},
		})
	}
	// An ssh repository path, host or user that git-upload-pack or ssh would
	// read as an option: refused before any command runs (credentials:
	// TestProbesOfInternalAddressesAreRefused).
	for i, url := range []string{"git@github.com:-oProxyCommand=touch", "git@github.com:--upload-pack=touch",
		"ssh://git@github.com/-oProxyCommand=x", "ssh://-oProxyCommand=x/repo.git"} {
		out = append(out, hostileCase{Kind: "GitOpsDeployment", Name: fmt.Sprintf("ssh option-like repoURL %d %q", i, url),
			Object: func(e tenantEnv) client.Object {
				return deployment(e, "app", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = url })
			},
			Want: errorOccurred("", "begins with '-'"),
		})
	}
	return out
}

// sshKey is a usable OpenSSH private key (PEM).
func sshKey(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	return string(pem.EncodeToMemory(block))
}

// The probes of RepositoryCredentials (with the tenant's credentials) of
// internal addresses, and of ssh URLs that read as options. These are not
// refusals of the matrix (the repository Secret is written before the check,
// as for any repository that does not answer): each ends with
// InvalidRepositoryURL saying why, nothing of the credentials or of what
// listens there shows, and nothing is connected to.
func TestProbesOfInternalAddressesAreRefused(t *testing.T) {
	ctx := context.Background()
	port := forbiddenServer(t)
	type probe struct{ url, want string }
	var probes []probe
	for _, url := range probeURLs {
		probes = append(probes, probe{url(port), netfailure.NotAllowed.String()})
	}
	for _, url := range []string{"ssh://git@github.com/-oProxyCommand=x", "ssh://git@github.com/--upload-pack=touch"} {
		probes = append(probes, probe{url, "begins with '-', which git-upload-pack would read as an option"})
	}
	for i, p := range probes {
		ns := fmt.Sprintf("probe-rc-%d", i)
		create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		data := map[string]string{repositorycredentials.KeyURL: p.url, repositorycredentials.KeyUsername: "jane", repositorycredentials.KeyPassword: canary("probe-password")}
		if strings.HasPrefix(p.url, "ssh://") {
			data = map[string]string{repositorycredentials.KeyURL: p.url, repositorycredentials.KeySSHPrivateKey: sshKey(t)}
		}
		create(t, &corev1.Secret{ObjectMeta: om(ns, "creds"), Type: v1.RepositoryCredentialSecretType, StringData: data})
		rc := &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om(ns, "repo"), Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: p.url, Secret: "creds"}}
		create(t, rc)
		refused := errorOccurred(v1.RepositoryCredentialReasonInvalidRepositoryURL, p.want)
		require.Eventually(t, func() bool {
			return k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc) == nil && refused.matches(rc)
		}, wait, tick, "%s: no refusal %s; conditions %+v", p.url, refused, rc.Status.Conditions)
		var events corev1.EventList
		require.NoError(t, k8s.List(ctx, &events, client.InNamespace(ns)))
		texts := []string{}
		for _, c := range rc.Status.Conditions {
			texts = append(texts, c.Message)
		}
		for _, e := range events.Items {
			texts = append(texts, e.Message)
		}
		for _, text := range texts {
			// Neither the password nor what listens there (its body).
			assert.NotContains(t, text, canaryMark, p.url)
		}
	}
}
