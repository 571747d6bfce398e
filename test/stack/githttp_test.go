package stack

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// gitCLI runs the git CLI with no user configuration, no prompts and caFile
// as the only trusted CA ("" = the system's).
func gitCLI(t *testing.T, caFile string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false")
	if caFile != "" {
		cmd.Env = append(cmd.Env, "GIT_SSL_CAINFO="+caFile)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func withUser(t *testing.T, raw, user, password string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

func TestGitHTTPServesPrivateRepositories(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	repo, err := NewGitRepo(root, "apps")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := repo.Commit(map[string]string{"app/configmap.yaml": configMapYAML("over https")}, "add configmap")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ServeGitHTTPS(root, "reader", "s3cret-pass")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, srv.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	repoURL := srv.URL("apps")
	if got, err := srv.RepoURL(repo); err != nil || got != repoURL {
		t.Fatalf("RepoURL = %q, %v; want %q", got, err, repoURL)
	}
	if !strings.HasPrefix(repoURL, "https://127.0.0.1:") || !strings.HasSuffix(repoURL, "/apps.git") {
		t.Fatalf("URL(apps) = %q", repoURL)
	}

	// With the credentials: ls-remote shows the branch, clone gets the content.
	out, err := gitCLI(t, caFile, "ls-remote", withUser(t, repoURL, "reader", "s3cret-pass"))
	if err != nil {
		t.Fatalf("ls-remote with credentials: %v\n%s", err, out)
	}
	if !strings.Contains(out, sha+"\trefs/heads/main") {
		t.Fatalf("ls-remote output lacks %s refs/heads/main:\n%s", sha, out)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := gitCLI(t, caFile, "clone", "--quiet", withUser(t, repoURL, "reader", "s3cret-pass"), clone); err != nil {
		t.Fatalf("clone with credentials: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(clone, "app", "configmap.yaml")); err != nil || !strings.Contains(string(b), "over https") {
		t.Fatalf("cloned content: %q, %v", b, err)
	}

	// Without credentials, with a wrong password or user, and without trusting the CA: refused.
	for name, tc := range map[string]struct{ url, ca, want string }{
		"no credentials":     {repoURL, caFile, "could not read Username"},
		"wrong password":     {withUser(t, repoURL, "reader", "wrong"), caFile, "Authentication failed"},
		"wrong user":         {withUser(t, repoURL, "writer", "s3cret-pass"), caFile, "Authentication failed"},
		"untrusted CA":       {withUser(t, repoURL, "reader", "s3cret-pass"), "", "certificate"},
		"missing repository": {withUser(t, srv.URL("nope"), "reader", "s3cret-pass"), caFile, "not found"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := gitCLI(t, tc.ca, "ls-remote", tc.url)
			if err == nil {
				t.Fatalf("ls-remote succeeded:\n%s", out)
			}
			if strings.Contains(out, sha) {
				t.Fatalf("refs leaked:\n%s", out)
			}
			if !strings.Contains(strings.ToLower(out), strings.ToLower(tc.want)) {
				t.Fatalf("ls-remote output does not say %q:\n%s", tc.want, out)
			}
		})
	}

	// On the wire: 401 with a basic challenge; pushes are refused even with credentials.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.CAPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(path, user, password string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+srv.Addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := get("/apps.git/info/refs?service=git-upload-pack", "", "")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("no credentials: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := get("/apps.git/info/refs?service=git-upload-pack", "reader", "s3cret-pass"); resp.StatusCode != http.StatusOK ||
		resp.Header.Get("Content-Type") != "application/x-git-upload-pack-advertisement" {
		t.Fatalf("upload-pack advertisement: %s, %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	if resp := get("/apps.git/info/refs?service=git-receive-pack", "reader", "s3cret-pass"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("receive-pack: %s, want 403", resp.Status)
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := gitCLI(t, caFile, "ls-remote", withUser(t, repoURL, "reader", "s3cret-pass")); err == nil {
		t.Fatalf("ls-remote after Close succeeded:\n%s", out)
	}
}

func TestGitHTTPTrustGitServerCAValidates(t *testing.T) {
	a := &ArgoCD{Dir: t.TempDir()}
	for _, host := range []string{"", "..", "../x", "a/b"} {
		if err := a.TrustGitServerCA(host, []byte("-----BEGIN CERTIFICATE-----\n")); err == nil {
			t.Errorf("host %q accepted", host)
		}
	}
	if err := a.TrustGitServerCA("127.0.0.1", []byte("not pem")); err == nil {
		t.Error("non-PEM accepted")
	}
	keys, err := newPKI("x")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.TrustGitServerCA("127.0.0.1:8443", keys.CACert); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(a.Dir, "tls", "127.0.0.1")); err != nil || !bytes.Equal(b, keys.CACert) {
		t.Fatalf("CA file: %v", err)
	}
}

// TestGitHTTPArgoCDDeploysFromPrivateRepository has a real Argo CD deploy from
// the HTTPS server: with the CA trusted through TrustGitServerCA and a
// repository Secret with the credentials, it syncs; without the credentials
// its comparison fails.
func TestGitHTTPArgoCDDeploysFromPrivateRepository(t *testing.T) {
	if _, err := Binaries(); err != nil {
		if Required() {
			t.Fatalf("%v (%s=1)", err, EnvRequire)
		}
		t.Skipf("real test stack not available (set %s=1 to fail instead): %v", EnvRequire, err)
	}
	if testing.Short() {
		t.Skip("skipping real stack in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k, err := StartKube(ctx, KubeOptions{Name: "githttp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	var argo *ArgoCD
	t.Cleanup(func() {
		if t.Failed() {
			var buf bytes.Buffer
			argo.WriteLogs(&buf)
			t.Logf("component logs:\n%s", buf.String())
		}
	})
	if argo, err = StartArgoCD(ctx, k, ArgoOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(argo.Stop)

	root := t.TempDir()
	repo, err := NewGitRepo(root, "private")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := repo.Commit(map[string]string{"app/configmap.yaml": configMapYAML("private")}, "add configmap")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ServeGitHTTPS(root, "argo", "argo-pass-"+randomHex(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if err := argo.TrustGitServerCA(srv.Host, srv.CAPEM); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "githttp-" + randomHex(3)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	application := func(name, repoURL string) {
		t.Helper()
		app := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1",
			"kind":       "Application",
			"metadata":   map[string]any{"name": name, "namespace": argo.Namespace},
			"spec": map[string]any{
				"project":     "default",
				"source":      map[string]any{"repoURL": repoURL, "targetRevision": "main", "path": "app"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
				"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}},
			},
		}}
		if _, err := dyn.Resource(ApplicationGVR).Namespace(argo.Namespace).Create(ctx, app, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// No repository Secret yet: Argo CD cannot read the repository.
	application("githttp-anonymous", srv.URL("private"))
	waitFor(ctx, t, time.Minute, "comparison error without credentials", func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(ApplicationGVR).Namespace(argo.Namespace).Get(ctx, "githttp-anonymous", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "ComparisonError" && strings.Contains(fmt.Sprint(m["message"]), "uthentication") {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %v", conds)
	})
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "stack-test", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deployed without credentials: %v", err)
	}

	// A repository Secret with the credentials (what a
	// GitOpsDeploymentRepositoryCredentials becomes): a second Application syncs.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "repo-private", Namespace: argo.Namespace,
			Labels: map[string]string{argoSecretType: "repository", argoPartOfLabel: "argocd"}},
		StringData: map[string]string{"type": "git", "url": srv.URL("private"), "username": "argo", "password": srv.password},
	}
	if _, err := cs.CoreV1().Secrets(argo.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	application("githttp-private", srv.URL("private"))
	waitFor(ctx, t, 2*time.Minute, "Application from the private repository synced", func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(ApplicationGVR).Namespace(argo.Namespace).Get(ctx, "githttp-private", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
		rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
		if sync != "Synced" || rev != sha {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			return false, fmt.Errorf("sync=%q revision=%q conditions=%v", sync, rev, conds)
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "stack-test", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if cm.Data["greeting"] != "private" {
			return false, errors.New("ConfigMap content")
		}
		return true, nil
	})
}
