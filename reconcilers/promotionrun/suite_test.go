//go:build !unit

package promotionrun_test

import (
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

// timeout is the suite's promotion timeout: there is no Argo CD here, so a
// promotion never completes and every started run ends by timing out.
const timeout = 6 * time.Second

// k8s is a client of the real API server the sidecar runs against.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "promotionrun", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}, func(o *sidecar.Options) { o.PromotionTimeout = timeout }))
}
