//go:build !unit

package environment_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	// k8s is a client of the real API server the sidecar runs against.
	k8s client.Client
	// kube is that API server; Environments that must really connect point
	// at it (it is also the "remote" cluster).
	kube *stack.Kube
)

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "environment", func(s *stack.Suite) error {
		k8s, kube = s.Client, s.Kube
		return nil
	}))
}
