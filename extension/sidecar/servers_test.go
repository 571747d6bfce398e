package sidecar

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server whose token Secret is not mounted keeps the sidecar not ready, with
// the Secret named, until the file appears (kubelet refreshes Secret volumes).
func TestNotReadyWithoutToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	g := &httpRunnable{name: "generator", what: "ApplicationSet plugin generator", tokenFile: file, howTo: "create Secret gitops-service-generator"}
	assert.ErrorContains(t, g.check(nil), "not listening yet")
	g.listening.Store(true)
	err := g.check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no token")
	assert.Contains(t, err.Error(), "gitops-service-generator")

	require.NoError(t, os.WriteFile(file, []byte(" \n"), 0o600))
	assert.ErrorContains(t, g.check(nil), "empty")
	require.NoError(t, os.WriteFile(file, []byte("s3cret\n"), 0o600))
	assert.NoError(t, g.check(nil))

	// No token file configured: listening is enough.
	open := &httpRunnable{what: "x"}
	open.listening.Store(true)
	assert.NoError(t, open.check(nil))
}
