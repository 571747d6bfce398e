//go:build !unit

// Package admission checks our CRDs as shipped (manifests/crd) on a real
// kube-apiserver: every example of the API contract (the seeds) is admitted,
// hostile repository URLs, paths, revisions, API URLs, sync options, names
// over their limits and values outside an enum are refused at admission,
// nothing the reconcilers accept is refused, and every kind has short names
// and the gitops category. No controller runs here.
package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	k8s     client.Client
	kube    *stack.Kube
	crdDir  string
	kubectl string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bins, err := stack.Binaries()
	if err != nil {
		if stack.Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "SKIP: admission tests need the real API server:", err)
		return 0
	}
	kubectl = bins.Kubectl
	ctx := context.Background()
	kube, err = stack.StartKube(ctx, stack.KubeOptions{Name: "admission"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer kube.Stop()
	root, err := stack.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	crdDir = filepath.Join(root, "manifests", "crd")
	if err := kube.InstallCRDs(ctx, crdDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		kube.WriteLogs(os.Stderr)
		return 1
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, as.AddToScheme} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if k8s, err = client.New(kube.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		kube.WriteLogs(os.Stderr)
	}
	return code
}
