//go:build !unit

package managedenvironment_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = stack.SuiteArgoNamespace

var (
	// k8s is a client of the real API server the sidecar runs against (the
	// "local" cluster, where the CRs and Argo CD's objects live).
	k8s      client.Client
	suiteCtx context.Context

	// The "remote" cluster environments point at: a second real API server,
	// with a kube-controller-manager so ServiceAccount tokens get issued. It is
	// started once, by the first test that needs it.
	remoteOnce sync.Once
	remoteKube *stack.Kube
	remoteK8s  client.Client
	remoteErr  error

	// Static tokens of the remote cluster besides its admin: one that
	// authenticates but may do nothing.
	powerlessToken = "powerless-" + rand.String(16)
)

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "managedenvironment", func(s *stack.Suite) error {
		k8s, suiteCtx = s.Client, s.Ctx
		s.Cleanup(func(failed bool) {
			if remoteKube == nil {
				return
			}
			if failed {
				remoteKube.WriteLogs(os.Stderr)
			}
			remoteKube.Stop()
		})
		return nil
	}))
}

// remote returns the remote cluster, starting it on first use.
func remote(t *testing.T) *stack.Kube {
	t.Helper()
	remoteOnce.Do(func() {
		start := time.Now()
		remoteKube, remoteErr = stack.StartKube(suiteCtx, stack.KubeOptions{
			Name:              "remote",
			ControllerManager: true,
			ExtraTokens:       map[string]stack.TokenUser{powerlessToken: {Name: "powerless"}},
		})
		if remoteErr == nil {
			remoteK8s, remoteErr = client.New(remoteKube.Config, client.Options{Scheme: sidecar.NewScheme()})
		}
		fmt.Fprintf(os.Stderr, "remote cluster up in %s\n", time.Since(start).Round(100*time.Millisecond))
	})
	require.NoError(t, remoteErr, "starting the remote cluster")
	return remoteKube
}
