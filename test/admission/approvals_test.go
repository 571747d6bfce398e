//go:build !unit

package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// sidecarUser is the install's ServiceAccount, the only one the policy lets
// approve on behalf of an Argo CD user.
const sidecarUser = "system:serviceaccount:argocd:gitops-service"

// installApprovalPolicy creates the ValidatingAdmissionPolicy and its binding
// as shipped in manifests/install.
func installApprovalPolicy(t *testing.T) {
	t.Helper()
	installPolicy(t, "promotion-approvals.yaml")
}

// installPolicy creates the ValidatingAdmissionPolicy and its binding of
// manifests/install/<file>, with their parameter (the sidecar's ServiceAccount).
func installPolicy(t *testing.T, file string) {
	t.Helper()
	n, err := stack.InstallPolicy(context.Background(), k8s, file)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the policy and its binding")
}

// approverNamespace makes a namespace where users (and the sidecar's
// ServiceAccount) may create, update and delete PromotionApprovals.
func approverNamespace(t *testing.T, users ...string) string {
	return writerNamespace(t, "approvals", "approver", "promotionapprovals", users...)
}

// writerNamespace makes a namespace prefix-<random> where users and the
// sidecar's ServiceAccount may get, create, update, patch and delete
// resource (of our API group) through Role and RoleBinding role.
func writerNamespace(t *testing.T, prefix, role, resource string, users ...string) string {
	t.Helper()
	ctx := context.Background()
	ns := prefix + "-" + rand.String(5)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{as.GroupVersion.Group}, Resources: []string{resource}, Verbs: []string{"get", "create", "update", "patch", "delete"}}}}))
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "argocd", Name: "gitops-service"}}}
	for _, u := range users {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	require.NoError(t, k8s.Create(ctx, rb))
	return ns
}

// as is a client that the API server authenticates as user in groups.
func clientAs(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := *kube.Config
	cfg.Impersonate.UserName = user
	cfg.Impersonate.Groups = append([]string{"system:authenticated"}, groups...)
	c, err := client.New(&cfg, client.Options{Scheme: k8s.Scheme()})
	require.NoError(t, err)
	return c
}

func promotionApproval(ns, name, env, user string, groups ...string) *as.PromotionApproval {
	return &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: as.PromotionApprovalSpec{Snapshot: "snap-1", Environment: env, Approver: as.Approver{User: user, Groups: groups}}}
}

// TestApprovalsAreTheAuthenticatedIdentity runs the shipped admission policy
// on the real API server: one approves as oneself only, with one's own
// groups; only the sidecar's ServiceAccount approves on behalf of an Argo CD
// user; an approval cannot be changed; and it is for an Environment of its
// own namespace.
func TestApprovalsAreTheAuthenticatedIdentity(t *testing.T) {
	ctx := context.Background()
	installApprovalPolicy(t)
	ns := approverNamespace(t, "alice", "mallory")
	other := approverNamespace(t, "bob")
	alice, mallory, sidecar := clientAs(t, "alice", "release-managers"), clientAs(t, "mallory"), clientAs(t, sidecarUser, "system:serviceaccounts")

	// The policy and the RBAC take a moment to reach the API server's caches:
	// until mallory's approval as alice is refused, the test cannot start.
	require.Eventually(t, func() bool {
		err := mallory.Create(ctx, promotionApproval(ns, "probe-"+rand.String(4), "prod", "alice"))
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
	}, 30*time.Second, 200*time.Millisecond, "the admission policy does not refuse an approval as someone else")
	// ...and alice's RBAC works.
	require.Eventually(t, func() bool {
		return alice.Create(ctx, promotionApproval(ns, "alice-"+rand.String(4), "staging", "alice")) == nil
	}, 30*time.Second, 200*time.Millisecond, "alice cannot approve as herself")

	refused := map[string]struct {
		c   client.Client
		a   *as.PromotionApproval
		msg string
	}{
		"approving as someone else":               {mallory, promotionApproval(ns, "m1", "prod", "alice"), "spec.approver.user must be mallory"},
		"claiming a group one is not in":          {mallory, promotionApproval(ns, "m2", "prod", "mallory", "release-managers"), "groups the API server authenticated you in"},
		"claiming an Argo CD identity":            {alice, promotionApproval(ns, "m3", "prod", "argocd:alice"), "spec.approver.user must be alice"},
		"the sidecar approving as a k8s user":     {sidecar, promotionApproval(ns, "m4", "prod", "alice"), "only on behalf of Argo CD users"},
		"the sidecar with a k8s group":            {sidecar, promotionApproval(ns, "m5", "prod", "argocd:carol", "release-managers"), "only on behalf of Argo CD users"},
		"the sidecar with an empty argocd: name":  {sidecar, promotionApproval(ns, "m6", "prod", "argocd:"), "only on behalf of Argo CD users"},
		"another namespace's Environment by path": {alice, promotionApproval(ns, "m7", other+"/prod", "alice"), "must be the name of an Environment of this namespace"},
	}
	for name, c := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			err := c.c.Create(ctx, c.a)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.msg)
			assert.True(t, apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c.a), &as.PromotionApproval{})), "a refused approval exists")
		})
	}

	t.Run("approving in another tenant's namespace", func(t *testing.T) {
		err := alice.Create(ctx, promotionApproval(other, "a1", "prod", "alice"))
		assert.True(t, apierrors.IsForbidden(err), "RBAC: %v", err)
	})

	t.Run("admitted: oneself with one's group, the sidecar for an Argo CD user", func(t *testing.T) {
		require.NoError(t, alice.Create(ctx, promotionApproval(ns, "ok1", "prod", "alice", "release-managers")))
		require.NoError(t, sidecar.Create(ctx, promotionApproval(ns, "ok2", "prod", "argocd:carol", "argocd:ops")))
	})

	t.Run("an approval is immutable", func(t *testing.T) {
		a := promotionApproval(ns, "frozen", "prod", "alice")
		require.NoError(t, alice.Create(ctx, a))
		for _, mut := range []func(*as.PromotionApproval){
			func(a *as.PromotionApproval) { a.Spec.Snapshot = "snap-2" },
			func(a *as.PromotionApproval) { a.Spec.Environment = "staging" },
			func(a *as.PromotionApproval) { a.Spec.Approver.User = "mallory" },
		} {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				got := &as.PromotionApproval{}
				if err := alice.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
					return err
				}
				mut(got)
				return alice.Update(ctx, got)
			})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "immutable")
		}
		// Not even an administrator (system:masters) changes it: both the CRD and the policy refuse.
		got := &as.PromotionApproval{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(a), got))
		got.Spec.Approver.User = "mallory"
		err := k8s.Update(ctx, got)
		require.Error(t, err)
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(a), got))
		assert.Equal(t, "alice", got.Spec.Approver.User)
	})
}

// TestGatesAreValidatedByTheCRD: the shapes of the gates the API server can
// check (cron, durations, counts); the time zone is the reconciler's.
func TestGatesAreValidatedByTheCRD(t *testing.T) {
	ctx := context.Background()
	ns := approverNamespace(t)
	env := func(g as.PromotionGates) *as.Environment {
		return &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "env-"}, Spec: as.EnvironmentSpec{Gates: &g}}
	}
	window := func(schedule, d, tz string) as.PromotionGates {
		dur, err := time.ParseDuration(d)
		require.NoError(t, err)
		return as.PromotionGates{FreezeWindows: []as.FreezeWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: dur}, TimeZone: tz}}}
	}
	admitted := map[string]as.PromotionGates{
		"a weekday window":      window("0 18 * * FRI", "62h", "Europe/Berlin"),
		"a descriptor":          window("@daily", "1h", ""),
		"ranges and steps":      window("*/15 9-17 1,15 JAN-MAR ?", "10m", "America/New_York"),
		"soak":                  {SoakTime: &metav1.Duration{Duration: time.Hour}},
		"two of a group":        {Approvals: &as.ApprovalGate{Required: 2, Groups: []string{"release-managers"}}},
		"one of anyone":         {Approvals: &as.ApprovalGate{Required: 1}},
		"freeze and its policy": {Freeze: &as.FreezeSwitch{Frozen: true, Reason: "INC-1", By: "alice"}, Rollbacks: &as.RollbackGates{Freeze: true}},
	}
	for name, g := range admitted {
		assert.NoError(t, k8s.Create(ctx, env(g)), name)
	}
	refused := map[string]struct {
		g   as.PromotionGates
		msg string
	}{
		"four cron fields":           {window("0 18 * *", "1h", ""), "five-field cron expression"},
		"a shell in the cron":        {window("0 18 * * $(id)", "1h", ""), "five-field cron expression"},
		"@every":                     {window("@every 1h", "1h", ""), "five-field cron expression"},
		"a zero-length window":       {window("@daily", "0s", ""), "more than 0s"},
		"a time zone that is a path": {window("@daily", "1h", "../../etc/passwd"), "timeZone"},
		"a negative soak":            {as.PromotionGates{SoakTime: &metav1.Duration{Duration: -time.Hour}}, "between 0s and 8760h"},
		"zero approvals":             {as.PromotionGates{Approvals: &as.ApprovalGate{Required: 0}}, "required"},
		"more approvals than users":  {as.PromotionGates{Approvals: &as.ApprovalGate{Required: 3, Users: []string{"a", "b"}}}, "not be more than the number of users"},
	}
	for name, c := range refused {
		err := k8s.Create(ctx, env(c.g))
		if assert.Error(t, err, name) {
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
			assert.Contains(t, err.Error(), c.msg, name)
		}
	}
}
