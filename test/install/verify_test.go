package install

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
)

// verifyReportsNothing runs the sidecar's --argocd-settings=verify check (its
// Keeper) against what an install path made: no key missing or different,
// no Warning Event, and nothing written.
func verifyReportsNothing(t *testing.T, ctx context.Context, c client.Client, ns, when string) {
	t.Helper()
	var events []string
	k := &argocdsettings.Keeper{
		Client: c, Reader: c, Namespace: ns, Names: argocdsettings.DefaultNames(),
		Mode: argocdsettings.Verify, Log: logr.Discard(),
		Event: func(eventtype, reason, msg string) { events = append(events, eventtype+" "+reason+": "+msg) },
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
	assert.Empty(t, events, "%s: --argocd-settings=verify reports", when)
	assert.Equal(t, before, versions(), "%s: verify wrote to Argo CD's ConfigMaps", when)
}
