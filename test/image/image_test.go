// Package image tests `make image`: it builds the sidecar's image as a user
// does and reads the OCI layout back with nothing but the standard library
// (not with the library that wrote it), as a runtime would.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/test/stack"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
}

type manifest struct {
	MediaType   string            `json:"mediaType"`
	Config      descriptor        `json:"config"`
	Layers      []descriptor      `json:"layers"`
	Annotations map[string]string `json:"annotations"`
}

type configFile struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

func TestMakeImage(t *testing.T) {
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	// IMAGE points a copy of manifests/install's kustomization at the image,
	// as `make image IMAGE=...` does to the real one.
	kustomization := filepath.Join(dir, "kustomization.yaml")
	orig, err := os.ReadFile(filepath.Join(root, "manifests", "install", "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kustomization, orig, 0o644))
	const image = "registry.example.com/platform/gitops-service:v9.8.7"
	cmd := exec.Command("make", "-s", "image", "IMAGE_DIR="+filepath.Join(dir, "out"), "IMAGE="+image, "IMAGE_KUSTOMIZATION="+kustomization)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make image:\n%s", out)
	version := strings.TrimSpace(run(t, root, filepath.Join(root, "hack", "ldflags.sh"), "version"))
	revision := strings.TrimSpace(run(t, root, filepath.Join(root, "hack", "ldflags.sh"), "revision"))

	oci := filepath.Join(dir, "out", "oci")
	var index struct{ Manifests []descriptor }
	readJSON(t, filepath.Join(oci, "index.json"), &index)
	require.Len(t, index.Manifests, 1)
	assert.Equal(t, image, index.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	var m manifest
	readJSON(t, blob(oci, index.Manifests[0].Digest), &m)
	assert.Equal(t, "application/vnd.oci.image.manifest.v1+json", m.MediaType)
	var c configFile
	readJSON(t, blob(oci, m.Config.Digest), &c)
	assert.Equal(t, "linux", c.OS)
	assert.Equal(t, "65532:65532", c.Config.User, "the Deployment's runAsNonRoot needs a numeric non-root user")
	assert.Equal(t, []string{"/gitops-service"}, c.Config.Entrypoint)
	assert.Empty(t, c.Config.Cmd)
	wantLabels := map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/gitops-service/gitops-service",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	for k, v := range wantLabels {
		assert.Equal(t, v, c.Config.Labels[k], "label %s", k)
		assert.Equal(t, v, m.Annotations[k], "annotation %s", k)
	}

	// The layers hold the binary and CA certificates, nothing to run a shell with.
	files := map[string][]byte{}
	for _, l := range m.Layers {
		for name, data := range untar(t, blob(oci, l.Digest), l.MediaType) {
			files[name] = data
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	assert.ElementsMatch(t, []string{"gitops-service", "etc/ssl/certs/ca-certificates.crt"}, names)
	bin := filepath.Join(dir, "gitops-service")
	require.NoError(t, os.WriteFile(bin, files["gitops-service"], 0o755))
	f, err := elf.Open(bin)
	require.NoError(t, err)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "the binary is dynamically linked: no libc in the image")
	}
	f.Close()

	assert.Equal(t, "gitops-service "+version+" (revision "+revision+", ", strings.SplitAfter(run(t, dir, bin, "--version"), ", ")[0])
	help := exec.Command(bin, "--help")
	helpOut, err := help.CombinedOutput()
	require.NoError(t, err, "--help:\n%s", helpOut)
	for _, flag := range []string{"-argocd-namespace", "-generator-token-file", "-ui-proxy-token-file", "-leader-elect", "-version"} {
		assert.Contains(t, string(helpOut), flag)
	}

	_, err = os.Stat(filepath.Join(dir, "out", "gitops-service.tar"))
	assert.NoError(t, err, "the docker-load tarball")
	k, err := os.ReadFile(kustomization)
	require.NoError(t, err)
	assert.Contains(t, string(k), "- name: gitops-service\n  newName: registry.example.com/platform/gitops-service\n  newTag: v9.8.7\n")
	assert.Contains(t, string(k), "# The sidecar's image", "comments kept")
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "%s %v", name, args)
	return string(out)
}

func blob(oci, digest string) string {
	return filepath.Join(oci, "blobs", strings.Replace(digest, ":", string(filepath.Separator), 1))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), path)
}

// untar reads a layer's regular files (and fails on anything but files and directories).
func untar(t *testing.T, path, mediaType string) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r io.Reader = bytes.NewReader(b)
	if strings.HasSuffix(mediaType, "+gzip") {
		gz, err := gzip.NewReader(r)
		require.NoError(t, err)
		r = gz
	}
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			files[strings.TrimPrefix(h.Name, "./")] = data
		default:
			t.Errorf("%s: unexpected entry type %c (links, devices)", h.Name, h.Typeflag)
		}
	}
}

// Outside a git checkout (a source tarball) the version is "dev".
func TestVersionWithoutGit(t *testing.T) {
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(root, "hack", "ldflags.sh"))
	cmd.Env = append(os.Environ(), "GIT_DIR="+t.TempDir(), "VERSION=", "REVISION=")
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "-X github.com/gitops-service/gitops-service/extension/buildinfo.Version=dev -X github.com/gitops-service/gitops-service/extension/buildinfo.Revision=unknown\n", string(out))
}
