package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// SettingsServer is argocd-server (the stack's binary, ArgoCDVersion) with a
// Redis of its own, run against an Argo CD namespace whose ConfigMaps and
// Secrets an install path made (Argo CD's manifests, its Helm chart, its
// operator). Unlike StartArgoCD it writes nothing into the namespace: it
// answers GET /api/v1/settings from what it finds there, as the installed
// argocd-server would.
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

// Stop stops argocd-server and its Redis.
func (s *SettingsServer) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
}
