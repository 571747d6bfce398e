package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SettingsServer is argocd-server (the stack's binary, ArgoCDVersion) with a
// Redis of its own, run against an Argo CD namespace whose ConfigMaps and
// Secrets an install path made (Argo CD's manifests, its Helm chart, its
// operator). Unlike StartArgoCD it writes nothing into the namespace: it
// answers GET /api/v1/settings from what it finds there, as the installed
// argocd-server would, and serves the proxy extensions when the installed
// argocd-server Deployment switches them on.
type SettingsServer struct {
	Addr  string // 127.0.0.1:PORT, plain HTTP
	procs []*Process
}

// StartSettingsServer starts redis and argocd-server in namespace ns of k
// and waits until argocd-server answers /healthz.
func StartSettingsServer(ctx context.Context, k *Kube, ns string) (_ *SettingsServer, err error) {
	bins, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(k.Dir, "argocd-server-")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"home", "tmp", "static"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	s := &SettingsServer{Addr: loopback(ports[1])}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	redisAddr := loopback(ports[0])
	redis, err := StartProcess("argocd-server-redis", filepath.Join(dir, "redis.log"), dir, nil, bins.RedisServer,
		"--port", fmt.Sprint(ports[0]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, redis)
	if err := waitReady(ctx, redis, 30*time.Second, func(ctx context.Context) error { return redisPing(ctx, redisAddr) }); err != nil {
		return nil, err
	}
	env := []string{
		"KUBECONFIG=" + k.Kubeconfig,
		"HOME=" + filepath.Join(dir, "home"),
		"TMPDIR=" + filepath.Join(dir, "tmp"),
		"ARGOCD_FAKE_IN_CLUSTER=true",
	}
	proxy, err := proxyExtensionEnabled(ctx, k, ns)
	if err != nil {
		return nil, err
	}
	if proxy {
		env = append(env, "ARGOCD_SERVER_ENABLE_PROXY_EXTENSION=true")
	}
	server, err := StartProcess("argocd-server", filepath.Join(dir, "server.log"), dir, env, bins.ArgoCDServer,
		"--namespace", ns, "--insecure", "--dex-server=",
		"--address", "127.0.0.1", "--port", fmt.Sprint(ports[1]),
		"--metrics-address", "127.0.0.1", "--metrics-port", fmt.Sprint(ports[2]),
		// No repo-server: settings do not need one.
		"--repo-server", "127.0.0.1:1", "--repo-server-plaintext",
		"--redis", redisAddr, "--staticassets", filepath.Join(dir, "static"), "--loglevel", "info")
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, server)
	plain := &http.Client{}
	if err := waitReady(ctx, server, 90*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, plain, "http://"+s.Addr+"/healthz", "")
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// proxyExtensionEnabled tells whether the install path's argocd-server
// Deployment runs with the proxy extensions on: by the flag (the operator's
// way) or by ARGOCD_SERVER_ENABLE_PROXY_EXTENSION, literal or from
// argocd-cmd-params-cm's server.enable.proxy.extension (install.yaml's and
// the Helm chart's way). No Deployment: off.
func proxyExtensionEnabled(ctx context.Context, k *Kube, ns string) (bool, error) {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return false, err
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "argocd-server", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The server container is named argocd-server (install.yaml, the operator) or server (the Helm chart).
	for _, c := range d.Spec.Template.Spec.Containers {
		if slices.ContainsFunc(append(slices.Clone(c.Command), c.Args...), func(a string) bool {
			return a == "--enable-proxy-extension" || a == "--enable-proxy-extension=true"
		}) {
			return true, nil
		}
		for _, e := range c.Env {
			if e.Name != "ARGOCD_SERVER_ENABLE_PROXY_EXTENSION" {
				continue
			}
			if e.ValueFrom == nil {
				return e.Value == "true", nil
			}
			ref := e.ValueFrom.ConfigMapKeyRef
			if ref == nil {
				return false, nil
			}
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return strings.TrimSpace(cm.Data[ref.Key]) == "true", nil
		}
	}
	return false, nil
}

// Settings is GET /api/v1/settings (unauthenticated: the public settings):
// the decoded body, or an error naming the status and body when it is not 200
// (argocd-server answers 404 `configmap "argocd-cm" not found` when argocd-cm
// lost the label Argo CD selects its ConfigMaps by).
func (s *SettingsServer) Settings(ctx context.Context) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr+"/api/v1/settings", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v1/settings: %s: %s", resp.Status, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET /api/v1/settings: %w: %s", err, body)
	}
	return out, nil
}

// Session logs user in (POST /api/v1/session) and returns the session token.
func (s *SettingsServer) Session(ctx context.Context, user, password string) (string, error) {
	return session(ctx, s.Addr, user, password)
}

// CallExtension calls proxy extension ext at path (below
// /extensions/<ext>) as the UI does: the session token as the AuthCookie and
// the Application the call is about (`<namespace>:<name>`) and its project in
// the headers Argo CD requires. It returns the status and body.
func (s *SettingsServer) CallExtension(ctx context.Context, token, ext, path, app, project string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr+"/extensions/"+ext+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.AddCookie(&http.Cookie{Name: AuthCookie, Value: token})
	req.Header.Set("Argocd-Application-Name", app)
	req.Header.Set("Argocd-Project-Name", project)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// ExtensionBackend is another extension's backend service: plain HTTP on
// 127.0.0.1, answering every request with ExtensionBackendAnswer and
// recording what arrived.
type ExtensionBackend struct {
	URL  string
	srv  *httptest.Server
	mu   sync.Mutex
	seen []ExtensionRequest
}

// ExtensionRequest is what the backend of an extension received.
type ExtensionRequest struct {
	Path, Application, Project string
}

// ExtensionBackendAnswer is the body every ExtensionBackend answers with.
const ExtensionBackendAnswer = "answer from the other extension's backend"

// StartExtensionBackend starts an ExtensionBackend; Close stops it.
func StartExtensionBackend() *ExtensionBackend {
	b := &ExtensionBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.seen = append(b.seen, ExtensionRequest{
			Path:        r.URL.Path,
			Application: r.Header.Get("Argocd-Application-Name"),
			Project:     r.Header.Get("Argocd-Project-Name"),
		})
		b.mu.Unlock()
		_, _ = io.WriteString(w, ExtensionBackendAnswer)
	}))
	b.URL = b.srv.URL
	return b
}

// Requests returns what the backend received so far.
func (b *ExtensionBackend) Requests() []ExtensionRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

// Close stops the backend.
func (b *ExtensionBackend) Close() { b.srv.Close() }

// CreateProxyApplication creates AppProject project (every destination and
// source permitted) and Application app in it, in Argo CD's namespace ns:
// the Application a proxy extension call names, as a user's would be.
// Neither is synced: no application controller needs to run.
func CreateProxyApplication(ctx context.Context, k *Kube, ns, project, app string) error {
	c, err := client.New(k.Config, client.Options{})
	if err != nil {
		return err
	}
	objs := []map[string]any{
		{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
			"metadata": map[string]any{"name": project, "namespace": ns},
			"spec": map[string]any{
				"sourceRepos":  []any{"*"},
				"destinations": []any{map[string]any{"server": "*", "namespace": "*"}},
			},
		},
		{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": app, "namespace": ns},
			"spec": map[string]any{
				"project":     project,
				"source":      map[string]any{"repoURL": "https://git.example.com/apps.git", "path": app},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "default"},
			},
		},
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		// Right after an install Argo CD's CRDs may not be served yet.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := c.Create(ctx, u)
			if err == nil {
				break
			}
			if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
				return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// Tail returns the last n lines of argocd-server's log.
func (s *SettingsServer) Tail(n int) string { return s.procs[len(s.procs)-1].Tail(n) }

// Stop stops argocd-server and its Redis.
func (s *SettingsServer) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
}
