package stack

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// HelmVersion is the helm hack/build-helm.sh builds (keep the two in sync).
const HelmVersion = "3.22.0"

// ArgoHelmChart is the Argo CD Helm chart in ../shared/vendor/argo-helm, and
// the Argo CD version it installs.
const (
	ArgoHelmChart        = "argo-cd-10.1.1.tgz"
	ArgoHelmChartVersion = "10.1.1"
	ArgoHelmAppVersion   = "v3.4.4"
)

// Helm is the stack's helm binary ($GITOPS_SERVICE_CACHE/helm-v<HelmVersion>/bin/helm),
// or an error wrapping ErrMissingBinaries.
func Helm() (string, error) {
	b := &BinaryPaths{CacheDir: CacheDir()}
	p := filepath.Join(b.CacheDir, "helm-v"+HelmVersion, "bin", "helm")
	return p, b.require(p)
}

// VendorDir is ../shared/vendor beside the repository (a fresh clone in CI
// has a copy of shared/ beside it too).
func VendorDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "vendor")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%w: the vendored charts and sources (%s): %v", ErrMissingBinaries, dir, err)
	}
	return dir, nil
}

// dependenciesBlock is Chart.yaml's `dependencies:` list.
var dependenciesBlock = regexp.MustCompile(`(?m)^dependencies:\n(?:[ -].*\n)*`)

// UnpackArgoHelmChart unpacks the vendored Argo CD chart into dir and returns
// the chart's directory. The chart declares the optional dependency redis-ha
// (off by default) that the vendored copy does not carry and no chart
// repository can be reached here for: the copy's Chart.yaml drops it, as the
// vendor README says.
func UnpackArgoHelmChart(dir string) (string, error) {
	vendor, err := VendorDir()
	if err != nil {
		return "", err
	}
	f, err := os.Open(filepath.Join(vendor, "argo-helm", ArgoHelmChart))
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return "", fmt.Errorf("chart entry %q outside the chart", h.Name)
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return "", err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return "", err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(target, data, 0o644); err != nil {
				return "", err
			}
		}
	}
	chart := filepath.Join(dir, "argo-cd")
	meta := filepath.Join(chart, "Chart.yaml")
	data, err := os.ReadFile(meta)
	if err != nil {
		return "", err
	}
	trimmed := dependenciesBlock.ReplaceAll(data, nil)
	if len(trimmed) == len(data) {
		return "", fmt.Errorf("%s: no dependencies block to drop (has the vendored chart changed?)", meta)
	}
	return chart, os.WriteFile(meta, trimmed, 0o644)
}
