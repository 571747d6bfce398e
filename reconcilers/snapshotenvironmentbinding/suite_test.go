package snapshotenvironmentbinding_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = stack.SuiteArgoNamespace

// k8s is a client of the real API server the sidecar runs against (no Argo CD:
// a test plays the applicationset-controller where it needs one).
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "snapshotenvironmentbinding", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}))
}
