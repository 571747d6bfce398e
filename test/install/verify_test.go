package install

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// verifyReportsNothing runs the sidecar's --argocd-settings=verify check (its
// Keeper) against what an install path made: no key missing or different,
// no Warning Event, and nothing written.
func verifyReportsNothing(t *testing.T, ctx context.Context, c client.Client, ns, when string) {
	t.Helper()
	rec := record.NewFakeRecorder(100)
	k := &argocdsettings.Keeper{
		Client: c, Reader: c, Namespace: ns, Names: argocdsettings.DefaultNames(),
		Mode: argocdsettings.Verify, Log: logr.Discard(),
		Events: &kernel.ObjectEvents{Recorder: rec, Object: &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "gitops-service"}},
	}
	versions := func() map[string]string {
		out := map[string]string{}
		for _, name := range []string{"argocd-cm", "argocd-cmd-params-cm", "argocd-rbac-cm"} {
			var m corev1.ConfigMap
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m))
			out[name] = m.ResourceVersion
		}
		return out
	}
	before := versions()
	require.NoError(t, k.Check(ctx), when)
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	assert.Empty(t, events, "%s: --argocd-settings=verify reports", when)
	assert.Equal(t, before, versions(), "%s: verify wrote to Argo CD's ConfigMaps", when)
}
