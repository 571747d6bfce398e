package sidecar

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
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

// Bad input (issue 22): a missing token Secret is also a Warning Event on the
// sidecar's Pod naming the Secret, once per change (the probe runs every few
// seconds), and a Normal Event when it is mounted.
func TestMissingTokenEventOnThePod(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	rec := record.NewFakeRecorder(10)
	pod := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "argocd", Name: "gitops-service-7d9f-abcde", UID: "u1"}
	g := &httpRunnable{name: "ui-proxy", what: "Argo CD proxy extension backend", tokenFile: file,
		howTo: "create Secret gitops-service-ui-proxy", event: podEvents(rec, pod)}
	g.listening.Store(true)
	for range 3 {
		require.Error(t, g.check(nil))
	}
	require.Len(t, rec.Events, 1, "one Event per change, not per probe")
	ev := <-rec.Events
	assert.Contains(t, ev, "Warning "+ReasonTokenMissing)
	assert.Contains(t, ev, "gitops-service-ui-proxy")

	require.NoError(t, os.WriteFile(file, []byte("s3cret"), 0o600))
	require.NoError(t, g.check(nil))
	require.NoError(t, g.check(nil))
	require.Len(t, rec.Events, 1)
	ev = <-rec.Events
	assert.Contains(t, ev, "Normal "+ReasonTokenFound)
	assert.NotContains(t, ev, "s3cret")

	assert.Nil(t, podEvents(rec, nil), "no Pod known (outside a cluster): no Events")
	assert.Nil(t, podEvents(rec, &corev1.ObjectReference{Kind: "Pod"}))
}
