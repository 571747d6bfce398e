package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ArgoCDOperatorCommit is the argocd-operator source hack/build-argocd-operator.sh
// builds (keep the two in sync).
const ArgoCDOperatorCommit = "cf5d1c02"

// ArgoCDOperatorDir is where hack/build-argocd-operator.sh puts the operator's
// controller (bin/manager) and CRDs (crd/), or an error wrapping
// ErrMissingBinaries.
func ArgoCDOperatorDir() (string, error) {
	b := &BinaryPaths{CacheDir: CacheDir()}
	dir := filepath.Join(b.CacheDir, "argocd-operator-"+ArgoCDOperatorCommit)
	if err := b.require(filepath.Join(dir, "bin", "manager")); err != nil {
		return "", fmt.Errorf("%w (hack/build-argocd-operator.sh)", err)
	}
	return dir, nil
}

// StartArgoCDOperator installs the operator's CRDs into k and runs its
// controller as a process watching namespace ns (no leader election, metrics
// and probes on free loopback ports), as the operator's Deployment would.
func StartArgoCDOperator(ctx context.Context, k *Kube, ns string) (*Process, error) {
	dir, err := ArgoCDOperatorDir()
	if err != nil {
		return nil, err
	}
	if err := k.InstallCRDs(ctx, filepath.Join(dir, "crd")); err != nil {
		return nil, fmt.Errorf("install the operator's CRDs: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(k.Dir, "argocd-operator-")
	if err != nil {
		return nil, err
	}
	p, err := StartProcess("argocd-operator", filepath.Join(work, "operator.log"), work,
		[]string{"KUBECONFIG=" + k.Kubeconfig, "WATCH_NAMESPACE=" + ns, "HOME=" + work, "REDIS_CONFIG_PATH=" + filepath.Join(dir, "redis")},
		filepath.Join(dir, "bin", "manager"),
		"--metrics-bind-address", loopback(ports[0]), "--health-probe-bind-address", loopback(ports[1]))
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, 2*time.Minute, func(ctx context.Context) error {
		return httpGetOK(ctx, &http.Client{}, fmt.Sprintf("http://%s/readyz", loopback(ports[1])), "")
	}); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}
