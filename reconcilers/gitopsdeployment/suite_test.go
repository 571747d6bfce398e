//go:build !unit

package gitopsdeployment_test

import (
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	argoNS       = stack.SuiteArgoNamespace
	projectGrace = 2 * time.Second
)

// k8s is a client of the real API server the sidecar runs against; no Argo CD
// controller runs here, so the tests play Argo CD's part where they need to.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "gitopsdeployment", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}, func(o *sidecar.Options) {
		// This suite checks that file:// URLs are refused, and that an unused
		// AppProject goes after its grace period.
		o.AllowFileRepositories = false
		o.ProjectGrace = projectGrace
	}))
}
