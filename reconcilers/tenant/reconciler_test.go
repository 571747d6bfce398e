//go:build !unit

package tenant_test

import (
	"context"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/tenant"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	wait = 20 * time.Second
	tick = 100 * time.Millisecond
)

func annotate(t *testing.T, ns, subjects string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+argocd.AnnotationArgoCDSubjects+`":`+jsonString(subjects)+`}}}`))
	require.NoError(t, k8s.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch))
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// projectOf waits for the tenant's AppProject and returns it once cond holds.
func projectOf(t *testing.T, ns string, cond func(*argov1alpha1.AppProject) bool) *argov1alpha1.AppProject {
	t.Helper()
	n := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, n))
	p := &argov1alpha1.AppProject{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: argocd.ProjectName(string(n.UID))}, p) == nil && cond(p)
	}, wait, tick, "AppProject of %s: last roles %+v", ns, p.Spec.Roles)
	return p
}

func groups(p *argov1alpha1.AppProject) []string {
	for _, r := range p.Spec.Roles {
		if r.Name == argocd.TenantRole {
			return r.Groups
		}
	}
	return nil
}

func rbacPolicy(t *testing.T) (string, bool, map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: argocd.RBACConfigMap}, cm))
	v, ok := cm.Data[argocd.RBACPolicyKey]
	return v, ok, cm.Data
}

// TestMappingDrivesRolesAndPolicy: the namespace annotation (the platform's
// mapping) becomes the tenant role of the tenant's AppProject and the
// extension policy in argocd-rbac-cm; a change applies at once, removal takes
// the access away, the admin's own policy is never touched, and bad entries
// are ignored with a Warning Event.
func TestMappingDrivesRolesAndPolicy(t *testing.T) {
	ctx := context.Background()
	adminPolicy := "p, role:ops, applications, *, */*, allow\n"
	require.NoError(t, k8s.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.RBACConfigMap},
		Data:       map[string]string{"policy.csv": adminPolicy, "policy.default": ""},
	}))

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + rand.String(6),
		Annotations: map[string]string{argocd.AnnotationArgoCDSubjects: "jane, team-jane"}}}
	require.NoError(t, k8s.Create(ctx, ns))
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://git.example.com/jane/apps.git", Path: "web"},
			Type: v1.GitOpsDeploymentSpecTypeManual},
	}
	require.NoError(t, k8s.Create(ctx, gd))

	p := projectOf(t, ns.Name, func(p *argov1alpha1.AppProject) bool { return len(groups(p)) == 2 })
	assert.Equal(t, []string{"jane", "team-jane"}, groups(p))
	require.Eventually(t, func() bool { v, _, _ := rbacPolicy(t); return strings.Contains(v, "g, team-jane, ") }, wait, tick)

	// A change applies at once; a bad entry is ignored and reported.
	annotate(t, ns.Name, "jane,bob,role:admin")
	projectOf(t, ns.Name, func(p *argov1alpha1.AppProject) bool { return strings.Join(groups(p), ",") == "bob,jane" })
	require.Eventually(t, func() bool {
		v, _, _ := rbacPolicy(t)
		return strings.Contains(v, "g, bob, ") && !strings.Contains(v, "team-jane")
	}, wait, tick)
	v, _, data := rbacPolicy(t)
	assert.NotContains(t, v, "role:admin, role:gitops-service-tenant")
	assert.Equal(t, adminPolicy, data["policy.csv"], "the admin's policy is not ours to touch")
	stack.WaitForEvent(t, k8s, ns, corev1.EventTypeWarning, tenant.ReasonInvalidArgoCDSubjects, "role:admin", wait)
	// The release managers (read by the panel's backend) are checked the same
	// way and grant nothing in Argo CD.
	rm := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+argocd.AnnotationArgoCDReleaseManagers+`":"jane,proj:x:y"}}}`))
	require.NoError(t, k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}, rm))
	stack.WaitForEvent(t, k8s, ns, corev1.EventTypeWarning, tenant.ReasonInvalidArgoCDSubjects, argocd.AnnotationArgoCDReleaseManagers+`: ignoring "proj:x:y"`, wait)
	v, _, _ = rbacPolicy(t)
	assert.NotContains(t, v, "proj:x:y")

	// Removing the mapping removes the role and our policy key.
	annotate(t, ns.Name, "")
	projectOf(t, ns.Name, func(p *argov1alpha1.AppProject) bool { return len(p.Spec.Roles) == 0 })
	require.Eventually(t, func() bool { _, ok, _ := rbacPolicy(t); return !ok }, wait, tick, "policy key not removed")
	_, _, data = rbacPolicy(t)
	assert.Equal(t, adminPolicy, data["policy.csv"])
	assert.Contains(t, data, "policy.default")
}
