package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ArgoCDInstallYAML is Argo CD's own manifests/install.yaml of version
// (2.14.21 or 3.5.1: the stack's two), from the Go module cache; a module
// not there yet is fetched (`go mod download`, as the stack's build does), so
// a fresh machine needs nothing else.
func ArgoCDInstallYAML(version string) (string, error) {
	major, _, _ := strings.Cut(version, ".")
	mod := "github.com/argoproj/argo-cd/v" + major + "@v" + version
	modCache := os.Getenv("GOMODCACHE")
	if modCache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOMODCACHE: %w", err)
		}
		modCache = strings.TrimSpace(string(out))
	}
	path := filepath.Join(modCache, "github.com", "argoproj", "argo-cd", "v"+major+"@v"+version, "manifests", "install.yaml")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = os.TempDir() // outside any module: only the download
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w\n%s", mod, err, out)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no module directory in %s", mod, out)
	}
	return filepath.Join(info.Dir, "manifests", "install.yaml"), nil
}
