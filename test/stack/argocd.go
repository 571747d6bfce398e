package stack

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// Labels and names Argo CD looks for.
const (
	argoPartOfLabel   = "app.kubernetes.io/part-of"
	argoSecretType    = "argocd.argoproj.io/secret-type"
	argoRefreshAnnot  = "argocd.argoproj.io/refresh"
	argoCmdParamsName = "argocd-cmd-params-cm"
)

var (
	// ApplicationGVR, AppProjectGVR and ApplicationSetGVR are the Argo CD resources.
	ApplicationGVR    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectGVR     = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	ApplicationSetGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
)

// ArgoOptions configures StartArgoCD.
type ArgoOptions struct {
	// Namespace Argo CD runs in; default "argocd".
	Namespace string
	// ExtraConfig is merged into argocd-cm.
	ExtraConfig map[string]string
	// ExtraRBAC is merged into argocd-rbac-cm.
	ExtraRBAC map[string]string
	// ExtraCmdParams is merged into argocd-cmd-params-cm. Plain processes do not
	// read that ConfigMap, so each key is also passed as the environment
	// variable that Argo CD's own manifests map it to, for every component
	// whose manifest references it (keys no component reads are only stored).
	ExtraCmdParams map[string]string
	// ExtraEnv is added to every Argo CD component's environment.
	ExtraEnv map[string]string
	// LogLevel of the Argo CD components; default "info".
	LogLevel string
}

// ArgoCD is a running Argo CD: redis, repo-server, application controller,
// applicationset controller and API server (plain HTTP, authentication on:
// log in as AdminUser with AdminPassword, or as accounts made by CreateAccount).
type ArgoCD struct {
	Namespace  string
	ServerAddr string // 127.0.0.1:PORT of argocd-server (plain HTTP/gRPC)
	// AdminPassword is the password of Argo CD's built-in admin account.
	AdminPassword  string
	RepoServerAddr string // 127.0.0.1:PORT (plaintext gRPC)
	RedisAddr      string // 127.0.0.1:PORT
	// ApplicationSetWebhookAddr is the applicationset controller's webhook listener.
	ApplicationSetWebhookAddr string
	// ModuleDir is the argo-cd module source the CRDs were installed from.
	ModuleDir string
	Dir       string
	Kube      *Kube

	procs    []*Process // start order
	stopOnce sync.Once

	adminMu    sync.Mutex
	adminToken string
}

// StartArgoCD installs Argo CD's CRDs and configuration into k and starts its
// components as processes on free loopback ports, waiting until each is ready.
// The components reach the cluster through k.Kubeconfig; with
// ARGOCD_FAKE_IN_CLUSTER=true the destination https://kubernetes.default.svc
// resolves to k too. On error everything started is stopped again.
func StartArgoCD(ctx context.Context, k *Kube, o ArgoOptions) (_ *ArgoCD, err error) {
	if o.Namespace == "" {
		o.Namespace = "argocd"
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if err := checkArgoCDVersion(); err != nil {
		return nil, err
	}
	bins := resolveBinaries()
	if err := bins.require(bins.RedisServer, bins.Git, bins.Kustomize, bins.ArgoCD, bins.ArgoCDServer, bins.ArgoCDRepoServer,
		bins.ArgoCDController, bins.ArgoCDAppSetCtrl); err != nil {
		return nil, err
	}
	modDir, err := ArgoCDModuleDir()
	if err != nil {
		return nil, err
	}
	dir, err := makeStateDir("", "argocd-"+k.Name)
	if err != nil {
		return nil, err
	}
	a := &ArgoCD{Namespace: o.Namespace, ModuleDir: modDir, Dir: dir, Kube: k, AdminPassword: randomHex(12)}
	defer func() {
		if err != nil {
			a.Stop()
		}
	}()
	for _, d := range []string{"logs", "ssh", "tls", "gnupg", "gpg-source", "plugins", "home", "tmp", "redis", "static", "clients"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(10)
	if err != nil {
		return nil, err
	}
	redisPort, repoPort, repoMetrics, ctrlMetrics := ports[0], ports[1], ports[2], ports[3]
	appsetMetrics, appsetProbe, appsetWebhook := ports[4], ports[5], ports[6]
	serverPort, serverMetrics := ports[7], ports[8]
	a.RedisAddr = loopback(redisPort)
	a.RepoServerAddr = loopback(repoPort)
	a.ServerAddr = loopback(serverPort)
	a.ApplicationSetWebhookAddr = loopback(appsetWebhook)

	if err := k.InstallCRDs(ctx, filepath.Join(modDir, "manifests", "crds")); err != nil {
		return nil, fmt.Errorf("install Argo CD CRDs: %w", err)
	}
	if err := a.installConfig(ctx, o); err != nil {
		return nil, fmt.Errorf("install Argo CD configuration: %w", err)
	}
	cmdEnv, err := cmdParamsEnv(modDir, o.ExtraCmdParams)
	if err != nil {
		return nil, err
	}

	baseEnv := []string{
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_RECONCILIATION_TIMEOUT=10s",
		"ARGOCD_SSH_DATA_PATH=" + filepath.Join(dir, "ssh"),
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(dir, "tls"),
		"ARGOCD_GNUPGHOME=" + filepath.Join(dir, "gnupg"),
		"ARGOCD_GPG_DATA_PATH=" + filepath.Join(dir, "gpg-source"),
		"ARGOCD_PLUGINSOCKFILEPATH=" + filepath.Join(dir, "plugins"),
		// The repo-server's git askpass socket defaults to one fixed path in /tmp:
		// with two stacks on a machine, one repo-server's git asked the other for
		// credentials ("unknown nonce") and private repositories failed.
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(dir, "askpass.sock"),
		"KUBECONFIG=" + k.Kubeconfig,
		"HOME=" + filepath.Join(dir, "home"),
		"TMPDIR=" + filepath.Join(dir, "tmp"),
		"GIT_CONFIG_NOSYSTEM=1",
		// The server shells out to the argocd CLI for some features; the
		// repo-server runs kustomize.
		"PATH=" + filepath.Dir(bins.ArgoCD) + string(os.PathListSeparator) + filepath.Dir(bins.Kustomize) +
			string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	envFor := func(component string) []string {
		env := append([]string(nil), baseEnv...)
		for kk, v := range cmdEnv[component] {
			env = append(env, kk+"="+v)
		}
		for kk, v := range o.ExtraEnv {
			env = append(env, kk+"="+v)
		}
		return env
	}
	start := func(component, bin string, args ...string) (*Process, error) {
		p, err := StartProcess("argocd/"+component, filepath.Join(dir, "logs", component+".log"), dir, envFor(component), bin, args...)
		if err != nil {
			return nil, err
		}
		a.procs = append(a.procs, p)
		return p, nil
	}
	plain := &http.Client{}

	// redis
	redis, err := start("redis", bins.RedisServer,
		"--port", fmt.Sprint(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", filepath.Join(dir, "redis"), "--loglevel", "warning")
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, redis, 30*time.Second, func(ctx context.Context) error { return redisPing(ctx, a.RedisAddr) }); err != nil {
		return nil, err
	}

	// repo-server
	repoArgs := []string{"--address", "127.0.0.1", "--port", fmt.Sprint(repoPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", fmt.Sprint(repoMetrics),
		"--disable-tls", "--redis", a.RedisAddr, "--loglevel", o.LogLevel}
	if ArgoCDMajor() != "2" {
		// 3.x defaults --client-ca-path to a mounted Secret's path and refuses it with --disable-tls.
		repoArgs = append(repoArgs, "--client-ca-path=")
	}
	repo, err := start("repo-server", bins.ArgoCDRepoServer, repoArgs...)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, repo, 60*time.Second, func(ctx context.Context) error {
		return httpGetOK(ctx, plain, fmt.Sprintf("http://127.0.0.1:%d/healthz", repoMetrics), "")
	}); err != nil {
		return nil, err
	}

	// application controller, applicationset controller and server, in parallel.
	ctrl, err := start("application-controller", bins.ArgoCDController,
		"--namespace", o.Namespace,
		"--repo-server", a.RepoServerAddr, "--repo-server-plaintext",
		"--redis", a.RedisAddr,
		"--metrics-port", fmt.Sprint(ctrlMetrics),
		"--loglevel", o.LogLevel)
	if err != nil {
		return nil, err
	}
	appset, err := start("applicationset-controller", bins.ArgoCDAppSetCtrl,
		"--namespace", o.Namespace,
		"--metrics-addr", loopback(appsetMetrics),
		"--probe-addr", loopback(appsetProbe),
		"--webhook-addr", a.ApplicationSetWebhookAddr,
		"--enable-leader-election=false",
		"--argocd-repo-server", a.RepoServerAddr, "--repo-server-plaintext",
		"--loglevel", o.LogLevel)
	if err != nil {
		return nil, err
	}
	server, err := start("server", bins.ArgoCDServer,
		"--namespace", o.Namespace,
		"--insecure", "--dex-server=",
		"--address", "127.0.0.1", "--port", fmt.Sprint(serverPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", fmt.Sprint(serverMetrics),
		"--repo-server", a.RepoServerAddr, "--repo-server-plaintext",
		"--redis", a.RedisAddr,
		"--staticassets", filepath.Join(dir, "static"),
		"--loglevel", o.LogLevel)
	if err != nil {
		return nil, err
	}
	checks := []struct {
		p   *Process
		url string
	}{
		{ctrl, fmt.Sprintf("http://127.0.0.1:%d/healthz", ctrlMetrics)},
		// controller-runtime serves no /healthz without checks, and the
		// applicationset controller registers none; metrics answer once it runs.
		{appset, fmt.Sprintf("http://127.0.0.1:%d/metrics", appsetMetrics)},
		{server, fmt.Sprintf("http://%s/healthz", a.ServerAddr)},
	}
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = waitReady(ctx, c.p, 90*time.Second, func(ctx context.Context) error {
				return httpGetOK(ctx, plain, c.url, "")
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a, nil
}

// installConfig creates the namespace, the ConfigMaps and Secret Argo CD
// reads, and the default AppProject (create or update).
func (a *ArgoCD) installConfig(ctx context.Context, o ArgoOptions) error {
	cs, err := kubernetes.NewForConfig(a.Kube.Config)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.Namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cm := map[string]string{
		"url":                    "http://" + a.ServerAddr,
		"timeout.reconciliation": "10s",
		// Clusters whose credentials reach one namespace (provisioned
		// DeploymentTargets): without it Argo CD's cluster cache stops at the
		// first resource type it may not list.
		"resource.respectRBAC": "normal",
	}
	maps.Copy(cm, o.ExtraConfig)
	// Argo CD's own default: users get nothing but what policies grant them.
	rbac := map[string]string{"policy.default": ""}
	maps.Copy(rbac, o.ExtraRBAC)
	params := map[string]string{}
	maps.Copy(params, o.ExtraCmdParams)
	configMaps := map[string]map[string]string{
		"argocd-cm":                 cm,
		"argocd-rbac-cm":            rbac,
		argoCmdParamsName:           params,
		"argocd-ssh-known-hosts-cm": {},
		"argocd-tls-certs-cm":       {},
		"argocd-gpg-keys-cm":        {},
	}
	for name, data := range configMaps {
		obj := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: map[string]string{argoPartOfLabel: "argocd"}},
			Data:       data,
		}
		err := retryConflict(ctx, func() error {
			cur, err := cs.CoreV1().ConfigMaps(a.Namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = cs.CoreV1().ConfigMaps(a.Namespace).Create(ctx, obj, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			obj.ResourceVersion = cur.ResourceVersion
			_, err = cs.CoreV1().ConfigMaps(a.Namespace).Update(ctx, obj, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("ConfigMap %s: %w", name, err)
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: a.Namespace, Labels: map[string]string{argoPartOfLabel: "argocd"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"server.secretkey": []byte(randomHex(32))},
	}
	if _, err := cs.CoreV1().Secrets(a.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Secret argocd-secret: %w", err)
	}
	if err := a.setPassword(ctx, AdminUser, a.AdminPassword); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(a.Kube.Config)
	if err != nil {
		return err
	}
	proj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "AppProject",
		"metadata":   map[string]any{"name": "default", "namespace": a.Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	if _, err := dyn.Resource(AppProjectGVR).Namespace(a.Namespace).Create(ctx, proj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("AppProject default: %w", err)
	}
	return nil
}

// AddCluster registers remote as an Argo CD cluster named name (a cluster
// Secret with the remote's admin token and CA) and returns its server URL.
func (a *ArgoCD) AddCluster(ctx context.Context, name string, remote *Kube) (string, error) {
	cs, err := kubernetes.NewForConfig(a.Kube.Config)
	if err != nil {
		return "", err
	}
	cfg, err := json.Marshal(map[string]any{
		"bearerToken":     remote.AdminToken,
		"tlsClientConfig": map[string]any{"caData": remote.CAData, "insecure": false},
	})
	if err != nil {
		return "", err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "cluster-" + nameSanitizer.ReplaceAllString(strings.ToLower(name), "-"),
			Namespace: a.Namespace,
			Labels:    map[string]string{argoSecretType: "cluster", argoPartOfLabel: "argocd"},
		},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"name": name, "server": remote.URL, "config": string(cfg)},
	}
	_, err = cs.CoreV1().Secrets(a.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := cs.CoreV1().Secrets(a.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
		if gerr != nil {
			return "", gerr
		}
		secret.ResourceVersion = cur.ResourceVersion
		_, err = cs.CoreV1().Secrets(a.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("cluster Secret %s: %w", secret.Name, err)
	}
	return remote.URL, nil
}

// Refresh asks Argo CD to refresh an Application now (annotation
// argocd.argoproj.io/refresh=normal). namespace "" means a.Namespace.
func (a *ArgoCD) Refresh(ctx context.Context, namespace, app string) error {
	if namespace == "" {
		namespace = a.Namespace
	}
	dyn, err := dynamic.NewForConfig(a.Kube.Config)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"normal"}}}`, argoRefreshAnnot)
	_, err = dyn.Resource(ApplicationGVR).Namespace(namespace).Patch(ctx, app, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// Processes returns the running components in start order.
func (a *ArgoCD) Processes() []*Process { return append([]*Process(nil), a.procs...) }

// Stop kills the components and removes the state dir. Idempotent. It does
// not touch the Kubernetes objects. Logs stay available to WriteLogs.
func (a *ArgoCD) Stop() {
	if a == nil {
		return
	}
	a.stopOnce.Do(func() {
		// Controllers and server first, then what they depend on.
		var first, last []*Process
		for _, p := range a.procs {
			switch {
			case strings.HasSuffix(p.Name, "/redis"), strings.HasSuffix(p.Name, "/repo-server"):
				last = append(last, p)
			default:
				first = append(first, p)
			}
		}
		stopAll(first...)
		stopAll(last...)
		for _, p := range a.procs {
			p.saveTail(200)
		}
		if keepDirs() {
			keepStateDir(a.Dir)
			return
		}
		os.RemoveAll(a.Dir)
	})
}

// WriteLogs writes the last ~200 lines of each component's log to w, every
// line prefixed with "[argocd/<component>] ".
func (a *ArgoCD) WriteLogs(w io.Writer) {
	if a == nil {
		return
	}
	for _, p := range a.procs {
		p.WriteLog(w, 200)
	}
}

func redisPing(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis PING: %q", strings.TrimSpace(line))
	}
	return nil
}

var (
	argoModOnce sync.Once
	argoModDir  string
	argoModErr  error
)

// ArgoCDModuleDir returns the source dir of ArgoCDModule at ArgoCDVersion: the project's own requirement (go list -m in the repo root)
// when it is that version, else the module cache path.
func ArgoCDModuleDir() (string, error) {
	argoModOnce.Do(func() { argoModDir, argoModErr = findArgoModuleDir() })
	return argoModDir, argoModErr
}

func findArgoModuleDir() (string, error) {
	ok := func(d string) bool {
		st, err := os.Stat(filepath.Join(d, "manifests", "crds"))
		return err == nil && st.IsDir()
	}
	if root, err := RepoRoot(); err == nil {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", ArgoCDModule)
		cmd.Dir = root
		if out, err := cmd.Output(); err == nil {
			if v, d, found := strings.Cut(strings.TrimSpace(string(out)), " "); found && v == "v"+ArgoCDVersion && ok(d) {
				return d, nil
			}
		}
	}
	modCache := os.Getenv("GOMODCACHE")
	if modCache == "" {
		if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
			modCache = strings.TrimSpace(string(out))
		}
	}
	if modCache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			modCache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	d := filepath.Join(modCache, "github.com", "argoproj", "argo-cd", "v"+ArgoCDMajor()+"@v"+ArgoCDVersion)
	if ok(d) {
		return d, nil
	}
	return "", fmt.Errorf("argo-cd module source %s@v%s not found (looked in %s); run `go mod download %s@v%s` or `make test-stack`",
		ArgoCDModule, ArgoCDVersion, d, ArgoCDModule, ArgoCDVersion)
}

// cmdParamsEnv maps argocd-cmd-params-cm keys to the environment variables
// each component reads, the way Argo CD's own manifests wire them
// (env[].valueFrom.configMapKeyRef), and returns component -> env -> value.
func cmdParamsEnv(modDir string, params map[string]string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if len(params) == 0 {
		return out, nil
	}
	manifests := map[string]string{
		"repo-server":               "manifests/base/repo-server/argocd-repo-server-deployment.yaml",
		"application-controller":    "manifests/base/application-controller/argocd-application-controller-statefulset.yaml",
		"applicationset-controller": "manifests/base/applicationset-controller/argocd-applicationset-controller-deployment.yaml",
		"server":                    "manifests/base/server/argocd-server-deployment.yaml",
	}
	for component, rel := range manifests {
		data, err := os.ReadFile(filepath.Join(modDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("read Argo CD manifest for %s: %w", component, err)
		}
		var w struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &w); err != nil {
			return nil, fmt.Errorf("parse %s: %w", rel, err)
		}
		env := map[string]string{}
		for _, c := range w.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil || e.ValueFrom.ConfigMapKeyRef.Name != argoCmdParamsName {
					continue
				}
				if v, ok := params[e.ValueFrom.ConfigMapKeyRef.Key]; ok {
					env[e.Name] = v
				}
			}
		}
		out[component] = env
	}
	return out, nil
}

// RegisterGenerator tells Argo CD's applicationset-controller about a plugin
// generator: the ConfigMap name (what ApplicationSets reference) with its base
// URL, and a Secret holding its bearer token, as the install manifests do.
func (a *ArgoCD) RegisterGenerator(ctx context.Context, name, baseURL, token string) error {
	cs, err := kubernetes.NewForConfig(a.Kube.Config)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: map[string]string{argoPartOfLabel: "argocd"}},
		StringData: map[string]string{"token": token},
	}
	if _, err := cs.CoreV1().Secrets(a.Namespace).Create(ctx, secret, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		// Created by the install (StartSidecar with Installed): it must hold this token.
		cur, err := cs.CoreV1().Secrets(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("generator Secret: %w", err)
		}
		if string(cur.Data["token"]) != token || cur.Labels[argoPartOfLabel] != "argocd" {
			return fmt.Errorf("generator Secret %s exists with another token or without label %s=argocd", name, argoPartOfLabel)
		}
	} else if err != nil {
		return fmt.Errorf("generator Secret: %w", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: map[string]string{argoPartOfLabel: "argocd"}},
		Data:       map[string]string{"baseUrl": baseURL, "token": "$" + name + ":token", "requestTimeout": "10"},
	}
	if _, err := cs.CoreV1().ConfigMaps(a.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("generator ConfigMap: %w", err)
	}
	return nil
}

// RegisterProxyExtension configures argocd-server's proxy extension name to
// forward to baseURL with header tokenHeader set to token (stored in
// argocd-secret, as the install instructions do). argocd-server picks up the
// change of argocd-cm without a restart; the extension must be enabled
// (ArgoOptions.ExtraCmdParams "server.enable.proxy.extension").
func (a *ArgoCD) RegisterProxyExtension(ctx context.Context, name, baseURL, tokenHeader, token string) error {
	cs, err := kubernetes.NewForConfig(a.Kube.Config)
	if err != nil {
		return err
	}
	key := name + ".proxy.token"
	secretPatch, err := json.Marshal(map[string]any{"stringData": map[string]string{key: token}})
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Secrets(a.Namespace).Patch(ctx, "argocd-secret", types.MergePatchType, secretPatch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("argocd-secret: %w", err)
	}
	config := fmt.Sprintf("extensions:\n- name: %s\n  backend:\n    services:\n    - url: %s\n      headers:\n      - name: %s\n        value: $%s\n",
		name, baseURL, tokenHeader, key)
	cmPatch, err := json.Marshal(map[string]any{"data": map[string]string{"extension.config": config}})
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().ConfigMaps(a.Namespace).Patch(ctx, "argocd-cm", types.MergePatchType, cmPatch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("argocd-cm: %w", err)
	}
	return nil
}
