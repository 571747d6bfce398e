package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

// mapTenant sets the platform's tenant mapping of ns, as the platform admin does.
func mapTenant(t *testing.T, ns string, subjects ...string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+argocd.AnnotationArgoCDSubjects+`":"`+strings.Join(subjects, ",")+`"}}}`))
	require.NoError(t, k8s.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch))
}

// bindClusterRole gives user the ClusterRole role in namespace ns.
func bindClusterRole(t *testing.T, ns, user, role string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	require.NoError(t, k8s.Create(context.Background(), rb))
}

// TestTenantCannotSetItsOwnMapping: a user with namespace `admin` in its
// tenant namespace cannot write the Namespace object, so it cannot map Argo
// CD users to its namespace (grant itself or anyone access).
func TestTenantCannotSetItsOwnMapping(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	user := "tenant-admin-" + rand.String(4)
	bindClusterRole(t, ns, user, "admin")
	cfg := *kube.Config
	cfg.Impersonate.UserName = user
	as, err := kubernetes.NewForConfig(&cfg)
	require.NoError(t, err)
	// It is the namespace's admin (once the API server's RBAC cache has the
	// new RoleBinding: it is not there the instant the create returns)...
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(poll) {
		_, err = as.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	require.NoError(t, err, "the tenant's admin can write in its namespace")
	// ...but cannot annotate the namespace.
	patch := []byte(`{"metadata":{"annotations":{"` + argocd.AnnotationArgoCDSubjects + `":"` + user + `"}}}`)
	_, err = as.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{})
	assert.True(t, apierrors.IsForbidden(err), "tenant admin annotating its namespace: %v", err)
	got, err := as.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		assert.Empty(t, got.Annotations[argocd.AnnotationArgoCDSubjects])
	}
}

// argoTenant is a tenant namespace with a mapped Argo CD local account logged in
// with the real argocd CLI, and one deployed GitOpsDeployment.
type argoTenant struct {
	ns, user, password string
	cli                *stack.ArgoCLI
	app                string // its Application
	project            string
	sha                string // the commit its repository holds
}

func newArgoTenant(t *testing.T, ctx context.Context) *argoTenant {
	t.Helper()
	ns := tenantNamespace(t)
	tt := &argoTenant{ns: ns, user: "user-" + ns, password: "pw-" + rand.String(12)}
	require.NoError(t, argo.CreateAccount(ctx, tt.user, tt.password))
	mapTenant(t, ns, tt.user)
	repo, sha := gitRepo(t, map[string]string{"app/cm.yaml": configMap("shown", ns)})
	gd := deploy(t, ns, "web", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	waitStatus(t, gd, "OutOfSync", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeOutOfSync })
	app := application(t, gd)
	tt.app, tt.project, tt.sha = app.Name, app.Spec.Project, sha
	var err error
	tt.cli, err = argo.Login(ctx, tt.user, tt.password)
	require.NoError(t, err)
	return tt
}

// run runs the argocd CLI as the tenant's user.
func (tt *argoTenant) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return tt.cli.Run(ctx, args...)
}

// eventually retries the CLI until ok holds (Argo CD applies project and RBAC
// changes through informers, within a second or so).
func (tt *argoTenant) eventually(t *testing.T, what string, ok func(out string, err error) bool, args ...string) {
	t.Helper()
	var out string
	var err error
	require.Eventually(t, func() bool {
		out, err = tt.run(t, args...)
		return ok(out, err)
	}, informerWait, 500*time.Millisecond, "%s: argocd %s as %s: %v\n%s", what, strings.Join(args, " "), tt.user, err, out)
}

func succeeds(out string, err error) bool { return err == nil }

func permissionDenied(out string, err error) bool {
	return err != nil && strings.Contains(out, "PermissionDenied")
}

// TestTenantsInArgoCD: two tenants, each an Argo CD local account mapped to its
// namespace by the platform's annotation, with Argo CD's default policy
// (nothing for anyone). Each finds and works with its own Application through
// the real argocd CLI and the panel's proxy call, and is refused the other's;
// changing the mapping moves the access at once, removing it removes it.
func TestTenantsInArgoCD(t *testing.T) {
	ctx := context.Background()
	a, b := newArgoTenant(t, ctx), newArgoTenant(t, ctx)

	for _, tc := range []struct{ me, other *argoTenant }{{a, b}, {b, a}} {
		me, other := tc.me, tc.other
		// Readable: the Applications of a tenant namespace by label.
		me.eventually(t, "lists only its own Applications", func(out string, err error) bool {
			return err == nil && strings.Contains(out, me.app) && !strings.Contains(out, other.app)
		}, "app", "list", "-o", "name", "-l", ownership.LabelTenantNS+"="+me.ns)
		out, err := me.run(t, "app", "list", "-o", "name")
		require.NoError(t, err, out)
		assert.NotContains(t, out, other.app, "%s sees another tenant's Application", me.user)

		out, err = me.run(t, "app", "get", me.app, "--refresh")
		require.NoError(t, err, out)
		assert.Contains(t, out, me.project)
		out, err = me.run(t, "app", "sync", me.app, "--timeout", "60")
		require.NoError(t, err, out)
		out, err = me.run(t, "app", "history", me.app)
		require.NoError(t, err, out)
		assert.Contains(t, out, me.sha[:7], "the sync shows in the history")
		out, err = me.run(t, "app", "logs", me.app)
		require.NoError(t, err, out)

		for _, args := range [][]string{
			{"app", "get", other.app},
			{"app", "sync", other.app},
			{"app", "history", other.app},
			{"app", "logs", other.app},
			{"app", "delete", me.app, "--yes"},
			{"proj", "get", "default"},
			{"cluster", "list"},
		} {
			out, err := me.run(t, args...)
			if args[1] == "list" {
				// Listing what one may not see is an empty list, not an error.
				assert.NotContains(t, out, "kubernetes.default.svc", "%s: argocd %v", me.user, args)
				continue
			}
			assert.True(t, permissionDenied(out, err), "%s: argocd %v: %v\n%s", me.user, args, err, out)
		}

		// The panel's API through argocd-server: own Application yes, other's no.
		token, err := argo.Session(ctx, me.user, me.password)
		require.NoError(t, err)
		status, body := callPanelAPIAs(t, token, me.app, me.project)
		assert.Equal(t, http.StatusOK, status, "%s: own panel: %v", me.user, body)
		status, _ = callPanelAPIAs(t, token, other.app, other.project)
		assert.NotEqual(t, http.StatusOK, status, "%s: another tenant's panel answered", me.user)
	}

	// The mapping moves b's user to a's namespace: no restart, at once.
	mapTenant(t, b.ns, "")
	mapTenant(t, a.ns, a.user, b.user)
	b.eventually(t, "mapping moved: sees a's Application", succeeds, "app", "get", a.app)
	b.eventually(t, "mapping moved: lost its old Application", permissionDenied, "app", "get", b.app)

	// Removing the mapping removes the access.
	mapTenant(t, a.ns, "")
	a.eventually(t, "mapping removed", permissionDenied, "app", "get", a.app)
	b.eventually(t, "mapping removed", permissionDenied, "app", "get", a.app)
	token, err := argo.Session(ctx, a.user, a.password)
	require.NoError(t, err)
	status, _ := callPanelAPIAs(t, token, a.app, a.project)
	assert.NotEqual(t, http.StatusOK, status, "the panel answered after the mapping was removed")
}
