package gitopsdeployment_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = stack.SuiteArgoNamespace

// k8s is a client of the real API server the sidecar runs against; no Argo CD
// controller runs here, so the tests play Argo CD's part where they need to.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "gitopsdeployment", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}))
}
