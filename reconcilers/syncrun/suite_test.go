//go:build !unit

package syncrun_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = stack.SuiteArgoNamespace

// k8s is a client of the real API server the sidecar runs against; no Argo CD
// runs here, so the tests play Argo CD's part.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "syncrun", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}))
}
