package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tarball is what argocd-extension-installer installs: a top-level
// resources/ directory (the installer copies resources/* to argocd-server's
// /tmp/extensions/resources/) holding the panel's current JavaScript at
// resources/gitops-service/extension-*.js, and checksums.txt in the format the
// installer greps by file name.
func TestTarballLayout(t *testing.T) {
	src := filepath.Join("..", "..", "extension", "ui", JSFile)
	js, err := os.ReadFile(src)
	require.NoError(t, err)
	out := t.TempDir()
	path, err := Build(src, "v1.2.3", out)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(out, "extension-gitops-service-v1.2.3.tar.gz"), path)

	tgz, err := os.ReadFile(path)
	require.NoError(t, err)
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	entries := map[string][]byte{}
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		names = append(names, h.Name)
		entries[h.Name] = body
		assert.Equal(t, 0, h.Uid, h.Name)
		if h.Typeflag == tar.TypeReg {
			assert.Equal(t, int64(0o644), h.Mode, h.Name)
		}
	}
	assert.Equal(t, []string{"resources/", "resources/gitops-service/", "resources/gitops-service/extension-gitops-service.js"}, names)
	assert.Equal(t, js, entries["resources/gitops-service/extension-gitops-service.js"], "the panel's current JavaScript")

	sum := sha256.Sum256(tgz)
	checksums, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(sum[:])+"  extension-gitops-service-v1.2.3.tar.gz\n", string(checksums))

	// Reproducible: the same input gives the same bytes (one checksum per version).
	again, err := Tarball(js)
	require.NoError(t, err)
	assert.Equal(t, tgz, again)

	for _, bad := range []string{"", "../x", "v1/../../x", "v1 2", "v1?x=y", "-v1"} {
		_, err := Build(src, bad, out)
		assert.Error(t, err, "version %q", bad)
	}
}
