//go:build !unit

package subscription_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	argoNS   = stack.SuiteArgoNamespace
	gitUser  = "jane"
	gitToken = "pat-7d1e0c3a"
	regUser  = "robot"
	regPass  = "reg-5b9f2e61"
)

var (
	// k8s is a client of the real API server the sidecar runs against.
	k8s client.Client
	// open is a real OCI registry (go-containerregistry's) on 127.0.0.1,
	// anonymous; private is one that wants basic auth (regUser, regPass).
	open, private *httptest.Server
	// git serves repositories over HTTPS with basic auth (gitUser,
	// gitToken); Argo CD's argocd-tls-certs-cm trusts its CA.
	git     *stack.GitHTTPServer
	gitRoot string
	// webhookURL is the sidecar's subscription webhook.
	webhookURL string
)

func TestMain(m *testing.M) {
	port, err := stack.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	webhookURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	os.Exit(stack.RunSuite(m, "subscription", func(s *stack.Suite) error {
		k8s = s.Client
		open = httptest.NewServer(ggcrregistry.New())
		private = httptest.NewServer(basicAuth(ggcrregistry.New()))
		var err error
		if gitRoot, err = os.MkdirTemp("", "gitops-subscription-"); err != nil {
			return err
		}
		if git, err = stack.ServeGitHTTPS(gitRoot, gitUser, gitToken); err != nil {
			return err
		}
		s.Cleanup(func(bool) {
			open.Close()
			private.Close()
			git.Close()
			os.RemoveAll(gitRoot)
		})
		return k8s.Create(s.Ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "argocd-tls-certs-cm"},
			Data:       map[string]string{git.Host: string(git.CAPEM)},
		})
	}, func(o *sidecar.Options) { o.SubscriptionWebhookAddr = fmt.Sprintf("127.0.0.1:%d", port) }))
}

// basicAuth is a registry that answers only with regUser's credentials, as
// a private registry does (challenge on /v2/, 401 elsewhere).
func basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != regUser || p != regPass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test registry"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"secret detail"}]}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
