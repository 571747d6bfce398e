package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sidecar is the gitops-service binary running as its own process against a Kube,
// exactly as it runs beside Argo CD in a cluster (KUBECONFIG instead of in-cluster).
type Sidecar struct {
	// MetricsURL is https://127.0.0.1:PORT/metrics, answered only to callers
	// the API server authorizes (ScrapeMetrics scrapes as the platform's
	// Prometheus).
	MetricsURL string
	ProbeAddr  string
	// GeneratorURL and GeneratorToken are the ApplicationSet plugin generator's
	// base URL and bearer token (see ArgoCD.RegisterGenerator).
	GeneratorURL   string
	GeneratorToken string
	// UIProxyURL and UIProxyToken are the proxy extension backend's base URL
	// and the secret header value argocd-server would add.
	UIProxyURL   string
	UIProxyToken string
	Bin          string
	Dir          string
	// Rendered is what manifests/install rendered, for an Installed sidecar.
	Rendered *Rendered

	args       []string
	env        []string
	kube       *Kube
	kubeconfig string
	proc       *Process
	metrics    *http.Client
}

// SidecarOptions configures StartSidecar.
type SidecarOptions struct {
	// Bin is a built sidecar; empty builds ./extension from the repo root once.
	Bin string
	// ArgoNamespace defaults to "argocd".
	ArgoNamespace string
	// ArgoRedisAddr is Argo CD's Redis (ArgoCD.RedisAddr), where the sidecar
	// reads per-resource health on Argo CD 3.x; empty: not read.
	ArgoRedisAddr string
	// Args are extra flags.
	Args []string
	// RepoServerAddr is Argo CD's repo-server (ArgoCD.RepoServerAddr,
	// plaintext), which PromotionPreviews render with; empty: previews off.
	RepoServerAddr string
	// RefuseFileRepositories leaves out --allow-file-repositories, which the
	// stack's sidecar gets by default: its repositories are file:// URLs.
	RefuseFileRepositories bool
	// Kubeconfig replaces the Kube's admin kubeconfig, e.g. a FaultProxy's.
	Kubeconfig string
	// Installed runs the sidecar as manifests/install does (see
	// installSidecar): its ServiceAccount's token bound by the rendered RBAC
	// (applied to k), the rendered container's args and environment, the
	// Secrets it mounts (created as the README says) as files; only the listen
	// addresses, Argo CD's Redis and file:// repositories are the stack's.
	// Kubeconfig and ArgoNamespace other than the rendered one are refused.
	Installed bool
}

// StackLoopback is the one loopback address the stack's sidecar may connect
// to for tenants (--probe-allow-cidrs): its git and API servers listen there.
// Other loopback addresses (127.0.0.2) stay refused, for tests of the rule.
const StackLoopback = "127.0.0.1/32"

// The Secrets the README has the platform admin create and the Deployment mounts.
const (
	GeneratorSecret = "gitops-service-generator"
	UIProxySecret   = "gitops-service-ui-proxy"
)

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// BuildSidecar builds the sidecar binary once per test process.
func BuildSidecar() (string, error) {
	buildOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		// One directory per test process, named by its pid: a process leaves
		// it behind (a test binary has no hook after its last test), so each
		// build removes those of processes that are gone (83 MB each).
		removeStaleBuilds()
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("gitops-service-bin-%d", os.Getpid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "gitops-service")
		// Built as `make image` builds the image's binary (static, stamped),
		// so the tests run what is shipped and share its build cache.
		ldflags, err := exec.Command(filepath.Join(root, "hack", "ldflags.sh")).Output()
		if err != nil {
			buildErr = fmt.Errorf("hack/ldflags.sh: %w", err)
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w "+strings.TrimSpace(string(ldflags)), "-o", buildBin, "./extension")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./extension: %w\n%s", err, out)
		}
	})
	return buildBin, buildErr
}

// removeStaleBuilds removes the sidecar builds of test processes that have
// exited.
func removeStaleBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "gitops-service-bin-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "gitops-service-bin-"))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// StartSidecar starts the sidecar against k and waits until it is ready.
func StartSidecar(ctx context.Context, k *Kube, o SidecarOptions) (*Sidecar, error) {
	bin := o.Bin
	if bin == "" {
		var err error
		if bin, err = BuildSidecar(); err != nil {
			return nil, err
		}
	}
	if o.ArgoNamespace == "" {
		o.ArgoNamespace = "argocd"
	}
	dir, err := os.MkdirTemp("", "gitops-stack-sidecar-")
	if err != nil {
		return nil, err
	}
	if o.Installed {
		if o.Kubeconfig != "" {
			return nil, errors.New("an installed sidecar uses its ServiceAccount's token, not a Kubeconfig")
		}
		in, err := installSidecar(ctx, k, o.ArgoNamespace, dir)
		if err != nil {
			return nil, fmt.Errorf("installing the sidecar as manifests/install does: %w", err)
		}
		flags, err := SidecarFlags(bin)
		if err != nil {
			return nil, err
		}
		in.args = append(in.args, rerootFlags(flags, in.args, in.mounts)...)
		for attempt := 1; ; attempt++ {
			s, err := newInstalledSidecar(o, bin, dir, in)
			if err != nil {
				return nil, err
			}
			s.kube = k
			if err = s.Start(ctx); err == nil || !portInUse(err) || attempt == 3 {
				return s, err
			}
			s.Stop()
		}
	}
	token := randomHex(16)
	tokenFile := filepath.Join(dir, "generator-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return nil, err
	}
	proxyToken := randomHex(16)
	proxyTokenFile := filepath.Join(dir, "ui-proxy-token")
	if err := os.WriteFile(proxyTokenFile, []byte(proxyToken), 0o600); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := newSidecar(k, o, bin, dir, tokenFile, token, proxyTokenFile, proxyToken)
		if err != nil {
			return nil, err
		}
		// Another process may take a free port before the sidecar binds it.
		if err = s.Start(ctx); err == nil || !portInUse(err) || attempt == 3 {
			return s, err
		}
		s.Stop()
	}
}

// newSidecar is a Sidecar on free ports, not started.
func newSidecar(k *Kube, o SidecarOptions, bin, dir, tokenFile, token, proxyTokenFile, proxyToken string) (*Sidecar, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	s := &Sidecar{
		MetricsURL:     fmt.Sprintf("https://%s/metrics", loopback(ports[0])),
		ProbeAddr:      loopback(ports[1]),
		GeneratorURL:   "http://" + loopback(ports[2]),
		GeneratorToken: token,
		UIProxyURL:     "http://" + loopback(ports[3]),
		UIProxyToken:   proxyToken,
		Bin:            bin,
		Dir:            dir,
		kube:           k,
		kubeconfig:     k.Kubeconfig,
		args: append([]string{
			// Only an Installed sidecar writes Argo CD's settings (as
			// manifests/install's does): these tests set up Argo CD themselves.
			"--argocd-settings=off",
			"--argocd-namespace=" + o.ArgoNamespace,
			"--argocd-redis=" + o.ArgoRedisAddr,
			"--leader-elect=false",
			"--metrics-bind-address=" + loopback(ports[0]),
			"--health-probe-bind-address=" + loopback(ports[1]),
			"--generator-bind-address=" + loopback(ports[2]),
			"--generator-token-file=" + tokenFile,
			"--ui-proxy-bind-address=" + loopback(ports[3]),
			"--ui-proxy-token-file=" + proxyTokenFile,
			"--zap-log-level=info",
		}, o.Args...),
	}
	if o.Kubeconfig != "" {
		s.kubeconfig = o.Kubeconfig
	}
	if !o.RefuseFileRepositories {
		s.args = append(s.args, "--allow-file-repositories")
	}
	s.args = append(s.args, "--probe-allow-cidrs="+StackLoopback)
	s.args = append(s.args, previewArgs(o)...)
	return s, nil
}

// newInstalledSidecar is an installed Sidecar on free ports, not started:
// the rendered args, then the stack's listen addresses, Redis and file://
// repositories (later flags win).
func newInstalledSidecar(o SidecarOptions, bin, dir string, in *installed) (*Sidecar, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	token, proxyToken := in.secrets[GeneratorSecret], in.secrets[UIProxySecret]
	if token == nil || proxyToken == nil {
		return nil, fmt.Errorf("the Deployment mounts neither Secret %s nor %s", GeneratorSecret, UIProxySecret)
	}
	s := &Sidecar{
		MetricsURL:     fmt.Sprintf("https://%s/metrics", loopback(ports[0])),
		ProbeAddr:      loopback(ports[1]),
		GeneratorURL:   "http://" + loopback(ports[2]),
		GeneratorToken: string(token.Data["token"]),
		UIProxyURL:     "http://" + loopback(ports[3]),
		UIProxyToken:   string(proxyToken.Data["token"]),
		Bin:            bin,
		Dir:            dir,
		Rendered:       in.rendered,
		kubeconfig:     in.kubeconfig,
		env:            in.env,
		args: append(append(append([]string{}, in.args...),
			"--metrics-bind-address="+loopback(ports[0]),
			"--health-probe-bind-address="+loopback(ports[1]),
			"--generator-bind-address="+loopback(ports[2]),
			"--ui-proxy-bind-address="+loopback(ports[3]),
			// The API server cannot reach the PromotionPolicy webhook's
			// Service here: not served (reconcilers/promotionpolicy tests it).
			"--policy-webhook-bind-address=0",
			// argocd-server reaches the ui-proxy here, not at its Service.
			"--ui-proxy-url=http://"+loopback(ports[3]),
			"--argocd-redis="+o.ArgoRedisAddr,
			"--zap-log-level=info",
		), o.Args...),
	}
	if !o.RefuseFileRepositories {
		s.args = append(s.args, "--allow-file-repositories")
	}
	s.args = append(s.args, "--probe-allow-cidrs="+StackLoopback)
	s.args = append(s.args, previewArgs(o)...)
	return s, nil
}

// previewArgs point PromotionPreviews at the stack's repo-server, with the
// tracking method the stack's Argo CD version defaults to.
func previewArgs(o SidecarOptions) []string {
	if o.RepoServerAddr == "" {
		return []string{"--preview-repo-server="}
	}
	tracking := "annotation"
	if ArgoCDMajor() == "2" {
		tracking = "label"
	}
	return []string{"--preview-repo-server=" + o.RepoServerAddr, "--preview-repo-server-plaintext", "--preview-default-tracking=" + tracking}
}

// Kubeconfig is the kubeconfig file the sidecar runs with.
func (s *Sidecar) Kubeconfig() string { return s.kubeconfig }

// Process is the running sidecar process.
func (s *Sidecar) Process() *Process { return s.proc }

// Start (re)starts the sidecar process and waits for /readyz.
func (s *Sidecar) Start(ctx context.Context) error {
	p, err := StartProcess("gitops-service", filepath.Join(s.Dir, "gitops-service.log"), s.Dir,
		append([]string{"KUBECONFIG=" + s.kubeconfig}, s.env...), s.Bin, s.args...)
	if err != nil {
		return err
	}
	s.proc = p
	hc := &http.Client{Timeout: 2 * time.Second}
	return waitReady(ctx, p, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, hc, "http://"+s.ProbeAddr+"/readyz", "ok")
	})
}

// Exited says whether the sidecar's process has ended (by itself or killed).
func (s *Sidecar) Exited() bool {
	select {
	case <-s.proc.Done():
		return true
	default:
		return false
	}
}

// Kill ends the process with SIGKILL; Start may follow.
func (s *Sidecar) Kill() {
	if s.proc != nil {
		s.proc.Kill()
	}
}

// Pid is the sidecar's process id.
func (s *Sidecar) Pid() int { return s.proc.Pid() }

// Stop stops the process (SIGTERM, then SIGKILL); Start may follow.
func (s *Sidecar) Stop() {
	if s.proc != nil {
		s.proc.Stop()
	}
}

// Log returns everything the sidecar logged so far.
func (s *Sidecar) Log() (string, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir, "gitops-service.log"))
	return string(b), err
}

// WriteLogs writes the tail of the sidecar's log.
func (s *Sidecar) WriteLogs(w io.Writer) {
	if s.proc != nil {
		s.proc.WriteLog(w, 200)
	}
}

// Close stops the sidecar and removes its state dir.
func (s *Sidecar) Close() {
	s.Stop()
	s.proc.saveTail(200) // WriteLogs still works afterwards
	if !keepDirs() {
		os.RemoveAll(s.Dir)
	}
}
