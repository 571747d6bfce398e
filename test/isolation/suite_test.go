// Package isolation is the tenant isolation matrix (issue 13): hundreds of
// hostile CRs of every kind, created at once against a real kube-apiserver
// with the sidecar's reconcilers running. Each must end with a refusal
// condition (or be rejected by the API server), nothing may be written for it,
// and afterwards no Argo CD object of the sidecar may give any tenant more
// than its own namespace. The hostile inputs that only Argo CD itself can
// refuse (a symlink out of the repository) are in test/e2e.
package isolation

import (
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/nontenant"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	argoNS    = stack.SuiteArgoNamespace
	sidecarNS = "gitops-service"
	// adminNS is a namespace the platform admin added to --never-tenant-namespaces.
	adminNS = "platform-tools"
	// neighbourNS is a well-behaved tenant with one valid object of every kind,
	// which the hostile cases try to reach.
	neighbourNS = "neighbour"
)

var (
	k8s  client.Client
	kube *stack.Kube
)

// neverTenants are the namespaces whose CRs are refused whatever they say.
var neverTenants = append([]string{argoNS, sidecarNS, adminNS}, nontenant.DefaultNeverTenants...)

func TestMain(m *testing.M) {
	// Our CRDs as shipped: hostile inputs may be refused at admission already.
	stack.SuiteAdmissionChecks = true
	os.Exit(stack.RunSuite(m, "isolation", func(s *stack.Suite) error {
		k8s, kube = s.Client, s.Kube
		for _, ns := range append([]string{neighbourNS}, neverTenants...) {
			if ns == argoNS {
				continue // RunSuite made it
			}
			if err := k8s.Create(s.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		return nil
	}, func(o *sidecar.Options) {
		o.SidecarNamespace = sidecarNS
		o.NeverTenants = append([]string{adminNS}, nontenant.DefaultNeverTenants...)
		// As in production: a tenant's file:// URL would read the repo-server's disk.
		o.AllowFileRepositories = false
		o.PromotionTimeout = time.Minute
		o.MetricsAddr = metricsAddr // as shipped: https, for the platform only (cases_metrics_test.go)
		// Previews on: every hostile one is refused before it would render
		// (no repo-server listens here).
		o.Preview = sidecar.PreviewOptions{RepoServerAddr: "127.0.0.1:1", RepoServerPlaintext: true, PerTenant: 2, Total: 8, DefaultTracking: "annotation"}
	}))
}
