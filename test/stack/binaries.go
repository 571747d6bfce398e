package stack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Versions of the components `make test-stack` builds.
const (
	KubeVersion = "1.32.13"
	// ArgoCDVersion2 and ArgoCDVersion3 are the Argo CD versions the stack
	// runs; ARGOCD_VERSION picks one, DefaultArgoCDVersion without it.
	ArgoCDVersion2       = "2.14.21"
	ArgoCDVersion3       = "3.5.1"
	DefaultArgoCDVersion = ArgoCDVersion3
	EnvArgoCDVersion     = "ARGOCD_VERSION"
)

// kustomizeVersions is the kustomize each Argo CD version ships (its
// hack/tool-versions.sh); the repo-server runs it.
var kustomizeVersions = map[string]string{ArgoCDVersion2: "5.4.3", ArgoCDVersion3: "5.8.1"}

var (
	// ArgoCDVersion is the Argo CD version this process runs against
	// ($ARGOCD_VERSION, default DefaultArgoCDVersion).
	ArgoCDVersion = argoCDVersionFromEnv()
	// ArgoCDModule is the Go module the Argo CD binary and CRDs come from.
	ArgoCDModule = "github.com/argoproj/argo-cd/v" + ArgoCDMajor()
	// KustomizeVersion is what ArgoCDVersion ships.
	KustomizeVersion = kustomizeVersions[ArgoCDVersion]
)

func argoCDVersionFromEnv() string {
	if v := strings.TrimPrefix(os.Getenv(EnvArgoCDVersion), "v"); v != "" {
		return v
	}
	return DefaultArgoCDVersion
}

// ArgoCDMajor is the major version of ArgoCDVersion ("2" or "3").
func ArgoCDMajor() string {
	major, _, _ := strings.Cut(ArgoCDVersion, ".")
	return major
}

// checkArgoCDVersion fails for a version the stack does not know.
func checkArgoCDVersion() error {
	if _, ok := kustomizeVersions[ArgoCDVersion]; !ok {
		return fmt.Errorf("%w: %s=%s is not a version the test stack builds (%s or %s)",
			ErrMissingBinaries, EnvArgoCDVersion, ArgoCDVersion, ArgoCDVersion2, ArgoCDVersion3)
	}
	return nil
}

// EnvCache names the cache dir of built binaries; EnvRequire, when "1", turns
// a missing stack into a test failure instead of a skip.
const (
	EnvCache   = "GITOPS_SERVICE_CACHE"
	EnvRequire = "GITOPS_SERVICE_REQUIRE_STACK"
	envLogs    = "GITOPS_SERVICE_STACK_LOGS"
	envKeep    = "GITOPS_SERVICE_STACK_KEEP"
)

// BinaryPaths holds the absolute paths of every binary the stack runs.
type BinaryPaths struct {
	CacheDir              string
	KubeAPIServer         string
	KubeControllerManager string
	Kubectl               string
	ArgoCD                string // multi-call binary; the symlinks below point to it
	ArgoCDServer          string
	ArgoCDRepoServer      string
	ArgoCDController      string
	ArgoCDAppSetCtrl      string
	Etcd                  string
	RedisServer           string
	Git                   string
	Kustomize             string // run by Argo CD's repo-server
}

// ErrMissingBinaries is wrapped by the error Binaries returns when something is
// not installed or built.
var ErrMissingBinaries = errors.New("test stack binaries missing")

// CacheDir returns $GITOPS_SERVICE_CACHE or $HOME/.cache/gitops-service.
func CacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "gitops-service")
}

// Required reports whether GITOPS_SERVICE_REQUIRE_STACK=1, i.e. whether tests
// must fail (not skip) when the stack is unavailable.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Binaries resolves the cache dir and the paths of all binaries. When any is
// missing it returns an error (wrapping ErrMissingBinaries) that lists them and
// says to run `make test-stack`.
func Binaries() (*BinaryPaths, error) {
	b := resolveBinaries()
	if err := checkArgoCDVersion(); err != nil {
		return b, err
	}
	return b, b.require(b.KubeAPIServer, b.KubeControllerManager, b.Kubectl, b.ArgoCD,
		b.ArgoCDServer, b.ArgoCDRepoServer, b.ArgoCDController, b.ArgoCDAppSetCtrl,
		b.Etcd, b.RedisServer, b.Git, b.Kustomize)
}

// KubeBinaries is Binaries for tests that run only the API server (and
// kube-controller-manager, kubectl): they need not wait for Argo CD's build.
func KubeBinaries() (*BinaryPaths, error) {
	b := resolveBinaries()
	return b, b.require(b.KubeAPIServer, b.KubeControllerManager, b.Kubectl, b.Etcd)
}

// aptPackages are the apt packages of the tools looked up on PATH.
var aptPackages = map[string]string{"etcd": "etcd-server", "redis-server": "redis-server", "git": "git"}

func resolveBinaries() *BinaryPaths {
	cache := CacheDir()
	kbin := filepath.Join(cache, "kube-v"+KubeVersion, "bin")
	abin := filepath.Join(cache, "argocd-v"+ArgoCDVersion, "bin")
	return &BinaryPaths{
		CacheDir:              cache,
		KubeAPIServer:         filepath.Join(kbin, "kube-apiserver"),
		KubeControllerManager: filepath.Join(kbin, "kube-controller-manager"),
		Kubectl:               filepath.Join(kbin, "kubectl"),
		ArgoCD:                filepath.Join(abin, "argocd"),
		ArgoCDServer:          filepath.Join(abin, "argocd-server"),
		ArgoCDRepoServer:      filepath.Join(abin, "argocd-repo-server"),
		ArgoCDController:      filepath.Join(abin, "argocd-application-controller"),
		ArgoCDAppSetCtrl:      filepath.Join(abin, "argocd-applicationset-controller"),
		Kustomize:             filepath.Join(cache, "kustomize-v"+KustomizeVersion, "bin", "kustomize"),
		Etcd:                  lookTool("etcd"),
		RedisServer:           lookTool("redis-server"),
		Git:                   lookTool("git"),
	}
}

// lookTool finds a Debian-packaged tool on PATH (or in the usual dirs);
// returns the bare name when not found, which require reports.
func lookTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.IsDir() {
			return filepath.Join(dir, name)
		}
	}
	return name
}

// require checks that the given paths (fields of b) are executable files.
// While hack/test-stack.sh is building the stack (`make test` builds it beside
// verify and the tests on a cold machine), it waits for what is still being
// built instead of failing, saying so once a minute.
func (b *BinaryPaths) require(paths ...string) error {
	missing, missingPkgs := missingPaths(paths)
	for since := time.Now(); len(missing) > 0 && len(missingPkgs) == 0; missing, missingPkgs = missingPaths(paths) {
		pid, building := builder(b.CacheDir)
		if !building {
			break
		}
		if waited := time.Since(since); waited%time.Minute < buildPoll {
			fmt.Fprintf(os.Stderr, "[stack] waiting %s for hack/test-stack.sh (pid %d) to build %s\n", waited.Round(time.Second), pid, strings.Join(missing, ", "))
		}
		time.Sleep(buildPoll)
	}
	if len(missing) == 0 && len(missingPkgs) == 0 {
		return nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "run `make test-stack` (cache dir %s)", b.CacheDir)
	if len(missing) > 0 {
		fmt.Fprintf(&sb, "; not built: %s", strings.Join(missing, ", "))
	}
	if len(missingPkgs) > 0 {
		fmt.Fprintf(&sb, "; not installed: %s", strings.Join(missingPkgs, ", "))
	}
	return fmt.Errorf("%w: %s", ErrMissingBinaries, sb.String())
}

var buildPoll = 5 * time.Second

// missingPaths are the paths that are not executable files, and the apt
// packages of the tools that were not found on PATH.
func missingPaths(paths []string) (missing, missingPkgs []string) {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			missingPkgs = append(missingPkgs, fmt.Sprintf("%s (apt package %s)", p, aptPackages[p]))
			continue
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	return missing, missingPkgs
}

// builder is the pid of the hack/test-stack.sh that is building into cache
// now: it writes cache/.building while it runs (a file left by a killed build
// names a process that is gone). Its builds move each binary into place whole.
func builder(cache string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(cache, ".building"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}
