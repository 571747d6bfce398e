//go:build !unit

package repositorycredentials_test

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	argoNS   = stack.SuiteArgoNamespace
	gitUser  = "jane"
	gitToken = "pat-4f2c9e1b"
)

var (
	// k8s is a client of the real API server the sidecar runs against.
	k8s client.Client
	// git serves private repositories over HTTPS with basic auth (gitUser,
	// gitToken); Argo CD's argocd-tls-certs-cm trusts its CA.
	git     *stack.GitHTTPServer
	gitRoot string
)

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "repositorycredentials", func(s *stack.Suite) error {
		k8s = s.Client
		var err error
		if gitRoot, err = os.MkdirTemp("", "gitops-repocreds-"); err != nil {
			return err
		}
		if git, err = stack.ServeGitHTTPS(gitRoot, gitUser, gitToken); err != nil {
			return err
		}
		s.Cleanup(func(bool) {
			git.Close()
			os.RemoveAll(gitRoot)
		})
		return k8s.Create(s.Ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "argocd-tls-certs-cm"},
			Data:       map[string]string{git.Host: string(git.CAPEM)},
		})
	}))
}
