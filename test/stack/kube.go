package stack

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TokenUser is the identity a static token authenticates as.
type TokenUser struct {
	Name   string
	UID    string // optional; defaults to Name
	Groups []string
}

// KubeOptions configures StartKube.
type KubeOptions struct {
	// Name is used in log prefixes and dir names, e.g. "local", "remote".
	Name string
	// ControllerManager starts kube-controller-manager with the garbage
	// collector, namespace and service-account token controllers (see
	// Controllers). Without it namespaces stay Terminating forever and
	// ownerReference cascades never happen.
	ControllerManager bool
	// Controllers overrides the kube-controller-manager --controllers list.
	Controllers []string
	// ExtraTokens are more static tokens, keyed by token.
	ExtraTokens map[string]TokenUser
	// ExtraAPIServerArgs are appended to the kube-apiserver command line.
	ExtraAPIServerArgs []string
}

// DefaultControllers is the kube-controller-manager --controllers list used
// when KubeOptions.Controllers is empty.
var DefaultControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-token-controller",
	// fills the aggregated admin/edit/view ClusterRoles (tenants' RBAC on our CRDs)
	"clusterrole-aggregation-controller",
}

// Kube is a running etcd + kube-apiserver (+ kube-controller-manager).
type Kube struct {
	Name       string
	URL        string // https://127.0.0.1:PORT
	CAData     []byte // PEM of the CA that signed the serving cert
	AdminToken string // static token of user "admin" in group system:masters
	Config     *rest.Config
	Kubeconfig string // admin kubeconfig file (token + CA data, no file refs)
	Dir        string
	EtcdURL    string

	bins      *BinaryPaths
	etcd      *Process
	apiserver *Process
	kcm       *Process
	etcdData  string // when outside Dir (tmpfs)
	stopOnce  sync.Once
}

var nameSanitizer = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// StartKube starts etcd and kube-apiserver (and kube-controller-manager when
// asked) on free loopback ports, with all state in a new temp dir, and waits
// until they are ready. On error everything started is stopped again.
func StartKube(ctx context.Context, o KubeOptions) (_ *Kube, err error) {
	if o.Name == "" {
		o.Name = "kube"
	}
	bins := resolveBinaries()
	need := []string{bins.Etcd, bins.KubeAPIServer}
	if o.ControllerManager {
		need = append(need, bins.KubeControllerManager)
	}
	if err := bins.require(need...); err != nil {
		return nil, err
	}
	dir, err := makeStateDir("", o.Name)
	if err != nil {
		return nil, err
	}
	k := &Kube{Name: o.Name, Dir: dir, bins: bins}
	defer func() {
		if err != nil {
			k.Stop()
		}
	}()
	for _, d := range []string{"logs", "pki"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	keys, err := newPKI(o.Name)
	if err != nil {
		return nil, fmt.Errorf("generate certificates: %w", err)
	}
	k.CAData = keys.CACert
	files := map[string][]byte{
		"pki/ca.crt":        keys.CACert,
		"pki/ca.key":        keys.CAKey,
		"pki/apiserver.crt": keys.ServingCert,
		"pki/apiserver.key": keys.ServingKey,
		"pki/sa.key":        keys.SAKey,
	}

	// Static tokens.
	k.AdminToken = randomHex(24)
	kcmToken := randomHex(24)
	tokens := map[string]TokenUser{
		k.AdminToken: {Name: "admin", Groups: []string{"system:masters"}},
		// --use-service-account-credentials=false: the controller manager acts with
		// its own identity for every controller, so it needs to be able to do anything.
		kcmToken: {Name: "system:kube-controller-manager", Groups: []string{"system:masters"}},
	}
	for t, u := range o.ExtraTokens {
		if t == "" || strings.ContainsAny(t, ",\"\n") || u.Name == "" || strings.ContainsAny(u.Name+u.UID+strings.Join(u.Groups, ""), ",\"\n") {
			return nil, fmt.Errorf("invalid static token %q for user %+v (no commas, quotes or newlines; name required)", t, u)
		}
		tokens[t] = u
	}
	files["pki/tokens.csv"] = tokenFile(tokens)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}

	if err := k.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := k.startAPIServer(ctx, o.ExtraAPIServerArgs); err != nil {
		return nil, err
	}
	k.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := k.writeKubeconfig(k.Kubeconfig, k.AdminToken); err != nil {
		return nil, err
	}
	if o.ControllerManager {
		controllers := o.Controllers
		if len(controllers) == 0 {
			controllers = DefaultControllers
		}
		if err := k.startControllerManager(ctx, kcmToken, controllers); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func tokenFile(tokens map[string]TokenUser) []byte {
	var lines []string
	for t, u := range tokens {
		uid := u.UID
		if uid == "" {
			uid = u.Name
		}
		line := fmt.Sprintf("%s,%s,%s", t, u.Name, uid)
		if len(u.Groups) > 0 {
			line += fmt.Sprintf(",\"%s\"", strings.Join(u.Groups, ","))
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

func (k *Kube) path(p string) string { return filepath.Join(k.Dir, p) }

func (k *Kube) logPath(component string) string {
	return filepath.Join(k.Dir, "logs", component+".log")
}

var (
	etcdNoFsyncOnce sync.Once
	etcdNoFsync     bool
)

// etcdSupportsNoFsync reports whether this etcd knows --unsafe-no-fsync
// (3.5+; Debian 12's 3.4.23 does not).
func etcdSupportsNoFsync(bin string) bool {
	etcdNoFsyncOnce.Do(func() {
		out, _ := exec.Command(bin, "--help").CombinedOutput()
		etcdNoFsync = strings.Contains(string(out), "unsafe-no-fsync")
	})
	return etcdNoFsync
}

func (k *Kube) startEtcd(ctx context.Context) error {
	noFsync := etcdSupportsNoFsync(k.bins.Etcd)
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		dataDir := k.path("etcd")
		if !noFsync {
			// Without --unsafe-no-fsync, keep the data on tmpfs so fsync is free.
			if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
				if d, err := makeStateDir("/dev/shm", "etcd-"+k.Name); err == nil {
					dataDir = filepath.Join(d, "data")
					k.etcdData = d
				}
			}
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		args := []string{
			"--name=etcd",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=etcd=" + peer,
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + randomHex(8),
			"--logger=zap",
			"--log-outputs=stderr",
			"--log-level=warn",
			"--quota-backend-bytes=8589934592",
		}
		if noFsync {
			args = append(args, "--unsafe-no-fsync")
		}
		var env []string
		if runtime.GOARCH != "amd64" {
			env = append(env, "ETCD_UNSUPPORTED_ARCH="+runtime.GOARCH)
		}
		p, err := StartProcess(k.Name+"/etcd", k.logPath("etcd"), k.Dir, env, k.bins.Etcd, args...)
		if err != nil {
			return err
		}
		err = waitReady(ctx, p, 30*time.Second, func(ctx context.Context) error {
			return httpGetOK(ctx, http.DefaultClient, client+"/health", `"true"`)
		})
		if err == nil {
			k.etcd, k.EtcdURL = p, client
			return nil
		}
		p.Kill()
		if k.etcdData != "" {
			os.RemoveAll(k.etcdData)
			k.etcdData = ""
		}
		if !portInUse(err) || attempt == 3 {
			return err
		}
	}
}

func (k *Kube) startAPIServer(ctx context.Context, extra []string) error {
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return err
		}
		args := []string{
			"--etcd-servers=" + k.EtcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + k.path("pki"),
			"--tls-cert-file=" + k.path("pki/apiserver.crt"),
			"--tls-private-key-file=" + k.path("pki/apiserver.key"),
			"--client-ca-file=" + k.path("pki/ca.crt"),
			"--token-auth-file=" + k.path("pki/tokens.csv"),
			"--service-account-key-file=" + k.path("pki/sa.key"),
			"--service-account-signing-key-file=" + k.path("pki/sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-cluster-ip-range=10.0.0.0/24",
			"--authorization-mode=RBAC",
			"--disable-admission-plugins=ServiceAccount",
			"--enable-priority-and-fairness=false",
			"--endpoint-reconciler-type=none",
			"--allow-privileged=true",
			"--profiling=false",
			"--v=1",
		}
		args = append(args, extra...)
		p, err := StartProcess(k.Name+"/kube-apiserver", k.logPath("kube-apiserver"), k.Dir, nil, k.bins.KubeAPIServer, args...)
		if err != nil {
			return err
		}
		k.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
		k.Config = k.TokenConfig(k.AdminToken)
		hc, err := rest.HTTPClientFor(k.Config)
		if err != nil {
			p.Kill()
			return err
		}
		err = waitReady(ctx, p, 90*time.Second, func(ctx context.Context) error {
			return httpGetOK(ctx, hc, k.URL+"/readyz", "ok")
		})
		if err == nil {
			k.apiserver = p
			return nil
		}
		p.Kill()
		if !portInUse(err) || attempt == 3 {
			return err
		}
	}
}

func (k *Kube) startControllerManager(ctx context.Context, token string, controllers []string) error {
	kubeconfig := k.path("kube-controller-manager.kubeconfig")
	if err := k.writeKubeconfig(kubeconfig, token); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return err
		}
		args := []string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			"--controllers=" + strings.Join(controllers, ","),
			"--service-account-private-key-file=" + k.path("pki/sa.key"),
			"--root-ca-file=" + k.path("pki/ca.crt"),
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + k.path("kcm-certs"),
			"--kube-api-qps=200",
			"--kube-api-burst=400",
			// etcd 3.4 has no watch progress requests, so every watch-list
			// attempt falls back to LIST with a warning per informer.
			"--feature-gates=WatchListClient=false",
			"--v=1",
		}
		p, err := StartProcess(k.Name+"/kube-controller-manager", k.logPath("kube-controller-manager"), k.Dir, nil,
			k.bins.KubeControllerManager, args...)
		if err != nil {
			return err
		}
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		err = waitReady(ctx, p, 60*time.Second, func(ctx context.Context) error {
			return httpGetOK(ctx, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), "ok")
		})
		if err == nil {
			k.kcm = p
			return nil
		}
		p.Kill()
		if !portInUse(err) || attempt == 3 {
			return err
		}
	}
}

// TokenConfig returns a rest.Config for the API server authenticating with a
// bearer token (QPS 200, Burst 400).
func (k *Kube) TokenConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            k.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), k.CAData...)},
		QPS:             200,
		Burst:           400,
	}
}

// Clientset returns a typed clientset with the admin config.
func (k *Kube) Clientset() (kubernetes.Interface, error) { return kubernetes.NewForConfig(k.Config) }

// KubeconfigFor returns kubeconfig bytes with one cluster (server URL and
// certificate-authority-data), one user with the token, one context, set as
// current-context.
func (k *Kube) KubeconfigFor(token string) ([]byte, error) {
	name := nameSanitizer.ReplaceAllString(k.Name, "_")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: k.URL, CertificateAuthorityData: k.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}

func (k *Kube) writeKubeconfig(path, token string) error {
	b, err := k.KubeconfigFor(token)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Processes returns the running components (etcd, kube-apiserver, and
// kube-controller-manager if started).
func (k *Kube) Processes() []*Process {
	var ps []*Process
	for _, p := range []*Process{k.etcd, k.apiserver, k.kcm} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// Stop kills the processes and removes the state dir. Idempotent. Logs stay
// available to WriteLogs (kept in memory).
func (k *Kube) Stop() {
	if k == nil {
		return
	}
	k.stopOnce.Do(func() {
		stopAll(k.kcm, k.apiserver)
		stopAll(k.etcd)
		for _, p := range k.Processes() {
			p.saveTail(200)
		}
		if keepDirs() {
			keepStateDir(k.Dir)
			if k.etcdData != "" {
				keepStateDir(k.etcdData)
			}
			return
		}
		if k.etcdData != "" {
			os.RemoveAll(k.etcdData)
		}
		os.RemoveAll(k.Dir)
	})
}

// WriteLogs writes the last ~200 lines of each component's log to w, every
// line prefixed with "[<name>/<component>] ".
func (k *Kube) WriteLogs(w io.Writer) {
	if k == nil {
		return
	}
	for _, p := range k.Processes() {
		p.WriteLog(w, 200)
	}
}

// httpGetOK GETs url and succeeds on 200 with a body containing want.
func httpGetOK(ctx context.Context, c *http.Client, url, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if want != "" && !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: unexpected body %q", url, strings.TrimSpace(string(body)))
	}
	return nil
}
