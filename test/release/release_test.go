// Package release tests `make release` as a maintainer runs it: everything a
// platform installs a release from, pushed to a registry (an in-memory one
// here), with nothing in the tree modified by building.
package release

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/test/stack"
)

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func gitStatus(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	return string(out)
}

// startRegistry runs hack/image's in-memory registry and returns its address.
func startRegistry(t *testing.T, root string) string {
	t.Helper()
	// Built, then run: a `go run` killed leaves its child holding the test's output.
	bin := filepath.Join(t.TempDir(), "registry")
	build := exec.Command("go", "-C", filepath.Join(root, "hack", "image"), "build", "-o", bin, "./registry")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	cmd := exec.Command(bin)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	select {
	case addr, ok := <-lines:
		require.True(t, ok, "the registry printed no address")
		return addr
	case <-time.After(time.Minute):
		t.Fatal("the registry did not start")
	}
	return ""
}

func makeRelease(root, kubectl string, env ...string) (string, error) {
	cmd := exec.Command("make", "-s", "release")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), append([]string{"KUBECTL=" + kubectl}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestMakeRelease(t *testing.T) {
	bins, err := stack.Binaries()
	if err != nil {
		if _, statErr := os.Stat(bins.Kubectl); statErr != nil {
			if stack.Required() {
				t.Fatal(err)
			}
			t.Skip("needs the test stack's kubectl (its kustomize renders the manifests):", err)
		}
	}
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	registry := startRegistry(t, root)
	const version = "v0.1.0"
	repo := registry + "/platform/gitops-service"
	const url = "https://artifacts.example.com/gitops-service/" + version
	before := gitStatus(t, root)

	out, err := makeRelease(root, bins.Kubectl, "VERSION="+version, "PUSH=1", "RELEASE_INSECURE=1", "RELEASE_IMAGE="+repo, "RELEASE_URL="+url)
	require.NoError(t, err, "make release:\n%s", out)
	assert.Equal(t, before, gitStatus(t, root), "building the release changed the tree")
	dir := filepath.Join(root, "bin", "release", version)

	// The image: the digest the manifests are pinned to is the built image's and the registry's.
	var index struct{ Manifests []struct{ Digest string } }
	data, err := os.ReadFile(filepath.Join(dir, "image", "oci", "index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &index))
	require.Len(t, index.Manifests, 1)
	digest := index.Manifests[0].Digest
	req, err := http.NewRequest(http.MethodHead, "http://"+registry+"/v2/platform/gitops-service/manifests/"+version, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the pushed tag")
	assert.Equal(t, digest, resp.Header.Get("Docker-Content-Digest"), "the registry holds the built image")
	image := regexp.MustCompile(`(?m)^\s+image: (\S*gitops-service\S*)$`)
	for _, f := range []string{"install.yaml", "install-helm.yaml", "install-operator.yaml", "uninstall.yaml", "uninstall-operator.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		refs := image.FindAllStringSubmatch(string(data), -1)
		require.NotEmpty(t, refs, f)
		for _, m := range refs {
			assert.Equal(t, repo+"@"+digest, m[1], "%s pins the sidecar's image by digest", f)
		}
	}
	helmInstall, err := os.ReadFile(filepath.Join(dir, "install-helm.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(helmInstall), "--argocd-settings=verify")

	// The UI extension tarball and the checksum file argocd-extension-installer reads.
	tarball := "extension-gitops-service-" + version + ".tar.gz"
	sums, err := os.ReadFile(filepath.Join(dir, "checksums.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(sums), sha256File(t, filepath.Join(dir, tarball))+"  "+tarball)

	// The snippets point at the release location.
	for _, f := range []string{"values-gitops-service.yaml", "ui-extension-installer.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		s := string(data)
		assert.Contains(t, s, url+"/"+tarball, f)
		assert.Contains(t, s, url+"/checksums.txt", f)
		assert.Contains(t, s, "value: "+version, "%s: EXTENSION_VERSION", f)
		assert.NotContains(t, s, "github.com/gitops-service/gitops-service/releases", f)
	}
	_, err = os.Stat(filepath.Join(dir, "argocd-gitops-service.yaml"))
	assert.NoError(t, err)

	notes, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(notes), "## "+version+"\n"), "the release's entry: %q", notes)
	assert.NotContains(t, string(notes), "## Unreleased")

	// The SBOM describes the binary in the image, with the modules linked into it.
	var sbom struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
			Checksums   []struct {
				ChecksumValue string `json:"checksumValue"`
			} `json:"checksums"`
		} `json:"packages"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "sbom.spdx.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sbom))
	assert.Equal(t, "SPDX-2.3", sbom.SPDXVersion)
	require.NotEmpty(t, sbom.Packages)
	assert.Equal(t, version, sbom.Packages[0].VersionInfo)
	assert.Equal(t, sha256File(t, filepath.Join(dir, "image", "gitops-service")), sbom.Packages[0].Checksums[0].ChecksumValue)
	mods := map[string]string{}
	for _, p := range sbom.Packages {
		mods[p.Name] = p.VersionInfo
	}
	assert.NotEmpty(t, mods["sigs.k8s.io/controller-runtime"], "controller-runtime is linked into the sidecar")
	assert.NotEmpty(t, mods["k8s.io/client-go"])

	// SHA256SUMS covers every file of the release directory.
	sumsAll, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err)
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(sumsAll)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, line)
		assert.Equal(t, sha256File(t, filepath.Join(dir, name)), sum, name)
		listed++
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := 0
	for _, e := range entries {
		if !e.IsDir() && e.Name() != "SHA256SUMS" {
			files++
		}
	}
	assert.Equal(t, files, listed)

	// A version without a CHANGELOG entry is refused before anything is built.
	out, err = makeRelease(root, bins.Kubectl, "VERSION=v9.9.9")
	require.Error(t, err)
	assert.Contains(t, out, "CHANGELOG.md has no entry '## v9.9.9'")
	_, err = os.Stat(filepath.Join(root, "bin", "release", "v9.9.9"))
	assert.True(t, os.IsNotExist(err), "nothing built for a refused version")
	out, err = makeRelease(root, bins.Kubectl, "VERSION=1.2")
	require.Error(t, err)
	assert.Contains(t, out, "is not vMAJOR.MINOR.PATCH")
}
