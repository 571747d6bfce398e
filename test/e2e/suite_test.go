// Package e2e runs the sidecar as a process beside a real Argo CD (repo-server,
// application-controller, applicationset-controller, server, Redis) on a real
// kube-apiserver + etcd + kube-controller-manager, deploying from local git
// repositories.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	kube    *stack.Kube
	argo    *stack.ArgoCD
	side    *stack.Sidecar
	k8s     client.Client
	gitRoot string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) (code int) {
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "SKIP: e2e tests need the real test stack:", err)
		return 0
	}
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "e2e setup:", err); return 1 }
	start := time.Now()
	var err error
	if kube, err = stack.StartKube(ctx, stack.KubeOptions{Name: "e2e", ControllerManager: true, Controllers: workloadControllers()}); err != nil {
		return fail(err)
	}
	defer kube.Stop()
	podsCtx, stopPods := context.WithCancel(ctx)
	defer stopPods()
	if err := kube.RunPods(podsCtx, stack.PodRunLabel+"=true"); err != nil {
		return fail(err)
	}
	// The remote cluster (started by the first test that needs it) stops after
	// the leak check has read its logs.
	defer stopRemote()
	defer stopPrivateGit()
	defer func() {
		if code != 0 {
			kube.WriteLogs(os.Stderr)
			remoteKube.WriteLogs(os.Stderr)
			if argo != nil {
				argo.WriteLogs(os.Stderr)
			}
			if side != nil {
				side.WriteLogs(os.Stderr)
			}
		}
	}()
	root, err := stack.RepoRoot()
	if err != nil {
		return fail(err)
	}
	// The UI panel's API goes through argocd-server's proxy extension, which
	// argocd-server enables only at start: the flag is there before it starts
	// (as after the restart the README asks for); the rest of Argo CD's
	// settings come from manifests/install and the installed sidecar below (ApplyInstalledSettings),
	// admin's right to invoke the extension included.
	argoOpts := stack.ArgoOptions{
		ExtraCmdParams: map[string]string{"server.enable.proxy.extension": "true"},
	}
	if argo, err = stack.StartArgoCD(ctx, kube, argoOpts); err != nil {
		return fail(err)
	}
	defer argo.Stop()
	// Without the admission checks that repeat the reconcilers' refusals: the
	// hostile cases here follow a refusal through the real Argo CD (test/isolation
	// checks the same inputs are refused at admission).
	if err := kube.InstallCRDsWithoutAdmissionChecks(ctx, filepath.Join(root, "manifests", "crd"), stack.ToolchainCRDs(root)); err != nil {
		return fail(err)
	}
	// The sidecar as manifests/install runs it: its ServiceAccount bound by the
	// rendered RBAC, the rendered args, env and mounted Secrets.
	if side, err = stack.StartSidecar(ctx, kube, stack.SidecarOptions{ArgoRedisAddr: argo.RedisAddr, RepoServerAddr: argo.RepoServerAddr, Installed: true}); err != nil {
		return fail(err)
	}
	defer side.Close()
	// Argo CD's side as installed too (the plugin generator's ConfigMap; the
	// sidecar's own keys in Argo CD's ConfigMaps, extension.config.gitops-service
	// reading the token from its Secret), but for the Services' in-cluster URLs.
	if err := argo.ApplyInstalledSettings(ctx, side, map[string]string{
		"http://gitops-service-generator:8090": side.GeneratorURL,
	}); err != nil {
		return fail(err)
	}
	if k8s, err = client.New(kube.Config, client.Options{Scheme: sidecar.NewScheme()}); err != nil {
		return fail(err)
	}
	if gitRoot, err = os.MkdirTemp("", "gitops-e2e-git-"); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(gitRoot)
	fmt.Fprintf(os.Stderr, "e2e: stack up in %s\n", time.Since(start).Round(100*time.Millisecond))
	code = m.Run()
	if canaryUsed > 0 {
		leaks, err := checkLeaks(ctx, append([]string{kube.Dir, argo.Dir, side.Dir}, remoteLogDirs()...)...)
		if err != nil {
			return fail(fmt.Errorf("leak check: %w", err))
		}
		if len(leaks) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: %d planted credentials leaked to:\n  %s\n", len(leaks), strings.Join(leaks, "\n  "))
			return 1
		}
		fmt.Fprintf(os.Stderr, "e2e: leak check: %d planted credentials, none in logs, events, status, specs or annotations\n", canaryUsed)
	}
	return code
}

// tenantNamespace creates a fresh tenant namespace.
func tenantNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + rand.String(6)}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// gitRepo creates a local repository with the given files committed.
func gitRepo(t *testing.T, files map[string]string) (*stack.GitRepo, string) {
	t.Helper()
	r, err := stack.NewGitRepo(gitRoot, "repo-"+rand.String(6))
	if err != nil {
		t.Fatal(err)
	}
	sha, err := r.Commit(files, "initial content")
	if err != nil {
		t.Fatal(err)
	}
	return r, sha
}

// workloadControllers run Deployments (their Pods run through RunPods), so
// App Studio components become Healthy as on a real cluster.
func workloadControllers() []string {
	return append(append([]string{}, stack.DefaultControllers...), stack.WorkloadControllers...)
}
