//go:build !unit

package promotionrun_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

// timeout is the suite's promotion timeout: there is no Argo CD here, so a
// promotion never completes and every started run ends by timing out.
const timeout = 6 * time.Second

// k8s is a client of the real API server the sidecar runs against.
var (
	k8s  client.Client
	kube *stack.Kube
)

// sidecarSA is the sidecar's ServiceAccount as the suite's policies name it.
const sidecarSA = "system:serviceaccount:" + stack.SuiteArgoNamespace + ":gitops-service"

func TestMain(m *testing.M) {
	// The platform's trusted root for keyless signatures (signature_gate_api_test.go).
	rootFile, err := trustedRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := stack.RunSuite(m, "promotionrun", func(s *stack.Suite) error {
		k8s, kube = s.Client, s.Kube
		// Approvals and requesters count only while every shipped
		// admission policy is live as shipped.
		if err := stack.InstallPolicies(s.Ctx, k8s); err != nil {
			return err
		}
		return policiesEnforced(s.Ctx)
	}, func(o *sidecar.Options) {
		o.PromotionTimeout = timeout
		// The signature gate reads the test's registry on loopback.
		o.Egress.AllowRanges = append(o.Egress.AllowRanges, netip.MustParsePrefix("127.0.0.0/8"))
		o.SigstoreTrustedRoot = rootFile
	})
	os.Remove(rootFile)
	os.Exit(code)
}

// policiesEnforced waits until the API server refuses an approval in
// another's name (its policy cache has the policies), and for the grace
// within which the sidecar does not trust approvals yet.
func policiesEnforced(ctx context.Context) error {
	forged := &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "forged-"},
		Spec: as.PromotionApprovalSpec{Snapshot: "s", Environment: "e", Approver: as.Approver{User: "someone-else"}}}
	err := utilwait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		a := forged.DeepCopy()
		if err := k8s.Create(ctx, a); err == nil {
			return false, k8s.Delete(ctx, a)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the approval policy never took effect: %w", err)
	}
	time.Sleep(3 * time.Second)
	return nil
}

// actingAs is a client of user (in groups) who may do anything in ns:
// what they write is checked by the admission policies as theirs.
func actingAs(t *testing.T, ns, user string, groups ...string) client.Client {
	t.Helper()
	ctx := context.Background()
	name := "as-" + fmt.Sprintf("%x", []byte(user))
	if len(name) > 60 {
		name = name[:60]
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if err := k8s.Create(ctx, rb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("granting %s: %v", user, err)
	}
	cfg := *kube.Config
	cfg.Impersonate.UserName = user
	cfg.Impersonate.Groups = append([]string{"system:authenticated"}, groups...)
	c, err := client.New(&cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createAs creates obj as c, retried while c's RBAC is not in the API
// server's cache yet.
func createAs(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = c.Create(context.Background(), obj); err == nil {
			return
		}
	}
	t.Fatalf("creating %s as another user: %v", obj.GetName(), err)
}
