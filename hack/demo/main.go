// Command demo starts a local Kubernetes + Argo CD, installs the GitOps Service
// CRDs and sidecar, deploys the sample GitOpsDeployment from a local git
// repository with kubectl, and shows it reaching Synced/Healthy.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gitops-service/gitops-service/test/stack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := stack.RepoRoot()
	if err != nil {
		return err
	}
	bins, err := stack.Binaries()
	if err != nil {
		return err
	}
	start := time.Now()

	step("starting etcd, kube-apiserver, kube-controller-manager")
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "demo", ControllerManager: true})
	if err != nil {
		return err
	}
	defer kube.Stop()
	step("starting Argo CD %s (redis, repo-server, application-controller, applicationset-controller, server)", stack.ArgoCDVersion)
	argo, err := stack.StartArgoCD(ctx, kube, stack.ArgoOptions{})
	if err != nil {
		return err
	}
	defer argo.Stop()
	step("installing the GitOps Service CRDs (manifests/crd)")
	if err := kube.InstallCRDs(ctx, filepath.Join(root, "manifests", "crd")); err != nil {
		return err
	}
	step("starting the gitops-service sidecar")
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Bin: filepath.Join(root, "bin", "gitops-service")})
	if err != nil {
		return fmt.Errorf("%w (run `make build` first)", err)
	}
	defer side.Close()

	dir, err := os.MkdirTemp("", "gitops-demo-git-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	repo, err := stack.NewGitRepo(dir, "demo")
	if err != nil {
		return err
	}
	files := map[string]string{}
	for _, name := range []string{"configmap.yaml", "service.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "manifests", "samples", "guestbook", name))
		if err != nil {
			return err
		}
		files["guestbook/"+name] = string(b)
	}
	sha, err := repo.Commit(files, "guestbook sample")
	if err != nil {
		return err
	}
	step("git repository %s at %s (work clone: %s)", repo.URL, sha[:8], repo.Work)

	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bins.Kubectl, append([]string{"--kubeconfig", kube.Kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	sample, err := os.ReadFile(filepath.Join(root, "manifests", "samples", "gitopsdeployment.yaml"))
	if err != nil {
		return err
	}
	step("kubectl create namespace jane; kubectl -n jane apply -f manifests/samples/gitopsdeployment.yaml")
	if _, err := kubectl("", "create", "namespace", "jane"); err != nil {
		return err
	}
	out, err := kubectl(strings.ReplaceAll(string(sample), "REPO_URL", repo.URL), "-n", "jane", "apply", "-f", "-")
	if err != nil {
		return err
	}
	fmt.Print(out)

	step("kubectl -n jane get gitopsdeployments (until Synced/Healthy)")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := kubectl("", "-n", "jane", "get", "gitopsdeployments", "-o", "wide")
		if err != nil {
			return err
		}
		fmt.Print(out)
		if strings.Contains(out, "Synced") && strings.Contains(out, "Healthy") {
			break
		}
		if time.Now().After(deadline) {
			side.WriteLogs(os.Stderr)
			argo.WriteLogs(os.Stderr)
			return fmt.Errorf("the sample did not reach Synced/Healthy in 3 minutes; the logs above say why")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	for _, args := range [][]string{
		{"-n", "jane", "get", "configmap/guestbook-settings", "service/guestbook"},
		{"-n", "argocd", "get", "applications.argoproj.io"},
	} {
		step("kubectl %s", strings.Join(args, " "))
		out, err := kubectl("", args...)
		if err != nil {
			return err
		}
		fmt.Print(out)
	}
	step("the sample is deployed, %s after start", time.Since(start).Round(time.Second))
	if os.Getenv("DEMO_EXIT") == "1" {
		return nil
	}
	fmt.Printf(`
Try it:
  export KUBECONFIG=%s
  %s -n jane get gitopsdeployments
  # change the app and watch it deploy:
  cd %s && $EDITOR guestbook/configmap.yaml && git commit -am change && git push origin HEAD:main
  # Argo CD API/UI (auth disabled, plain HTTP): http://%s
  %s app list --server %s --plaintext --insecure
Press Ctrl-C to stop everything.
`, kube.Kubeconfig, bins.Kubectl, repo.Work, argo.ServerAddr, bins.ArgoCD, argo.ServerAddr)
	<-ctx.Done()
	step("stopping")
	return nil
}
