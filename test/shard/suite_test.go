//go:build !unit

// Package shard runs tenants over two Argo CD instances on one
// kube-apiserver: two full Argo CDs (namespaces argocd-a and argocd-b), each
// with its own sidecar (--argocd-instance=a, the default one, and b), and
// moves a tenant from one to the other.
//
// Its own package, not test/e2e: every e2e test there runs beside one
// sidecar that serves every namespace, which would act on these tenants too.
// make test runs it with Argo CD 3.5.1 only (the ./... pass), as a second
// full Argo CD is the costly part and the handover is ours, not Argo CD's;
// what differs between 2.14 and 3.x (resource tracking) is the same for both
// instances of one version.
package shard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	nsA, nsB = "argocd-a", "argocd-b"
)

var (
	kube         *stack.Kube
	argoA, argoB *stack.ArgoCD
	sideA, sideB *stack.Sidecar
	k8s          client.Client
	gitRoot      string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) (code int) {
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "SKIP: the shard tests need the real test stack:", err)
		return 0
	}
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "shard setup:", err); return 1 }
	start := time.Now()
	var err error
	// The garbage collector orphans a released ApplicationSet's
	// Applications; the workload controllers run the Pods whose UID must
	// survive a move.
	if kube, err = stack.StartKube(ctx, stack.KubeOptions{Name: "shard", ControllerManager: true,
		Controllers: append(append([]string{}, stack.DefaultControllers...), stack.WorkloadControllers...)}); err != nil {
		return fail(err)
	}
	defer kube.Stop()
	podsCtx, stopPods := context.WithCancel(ctx)
	defer stopPods()
	if err := kube.RunPods(podsCtx, stack.PodRunLabel+"=true"); err != nil {
		return fail(err)
	}
	defer func() {
		if code != 0 {
			kube.WriteLogs(os.Stderr)
			for _, a := range []*stack.ArgoCD{argoA, argoB} {
				if a != nil {
					a.WriteLogs(os.Stderr)
				}
			}
			for _, s := range []*stack.Sidecar{sideA, sideB} {
				if s != nil {
					s.WriteLogs(os.Stderr)
				}
			}
		}
	}()
	root, err := stack.RepoRoot()
	if err != nil {
		return fail(err)
	}
	if argoA, err = stack.StartArgoCD(ctx, kube, stack.ArgoOptions{Namespace: nsA}); err != nil {
		return fail(err)
	}
	defer argoA.Stop()
	if argoB, err = stack.StartArgoCD(ctx, kube, stack.ArgoOptions{Namespace: nsB}); err != nil {
		return fail(err)
	}
	defer argoB.Stop()
	if err := kube.InstallCRDsWithoutAdmissionChecks(ctx, filepath.Join(root, "manifests", "crd"), stack.ToolchainCRDs(root)); err != nil {
		return fail(err)
	}
	// Each instance's sidecar: a is the default (unlabelled namespaces), b
	// serves only namespaces labelled for it; neither takes the other's Argo
	// CD namespace for a tenant.
	never := "--never-tenant-namespaces=kube-system,kube-public,kube-node-lease," + nsA + "," + nsB
	if sideA, err = stack.StartSidecar(ctx, kube, stack.SidecarOptions{ArgoNamespace: nsA, ArgoRedisAddr: argoA.RedisAddr,
		Args: []string{"--argocd-instance=a", "--serve-unlabelled-namespaces=true", never}}); err != nil {
		return fail(err)
	}
	defer sideA.Close()
	if sideB, err = stack.StartSidecar(ctx, kube, stack.SidecarOptions{ArgoNamespace: nsB, ArgoRedisAddr: argoB.RedisAddr,
		Args: []string{"--argocd-instance=b", "--serve-unlabelled-namespaces=false", never}}); err != nil {
		return fail(err)
	}
	defer sideB.Close()
	// Each Argo CD's applicationset controller asks its own sidecar's plugin generator.
	if err := argoA.RegisterGenerator(ctx, argocd.GeneratorConfigMap, sideA.GeneratorURL, sideA.GeneratorToken); err != nil {
		return fail(err)
	}
	if err := argoB.RegisterGenerator(ctx, argocd.GeneratorConfigMap, sideB.GeneratorURL, sideB.GeneratorToken); err != nil {
		return fail(err)
	}
	if k8s, err = client.New(kube.Config, client.Options{Scheme: sidecar.NewScheme()}); err != nil {
		return fail(err)
	}
	if gitRoot, err = os.MkdirTemp("", "gitops-shard-git-"); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(gitRoot)
	fmt.Fprintf(os.Stderr, "shard: stack up in %s\n", time.Since(start).Round(100*time.Millisecond))
	return m.Run()
}
