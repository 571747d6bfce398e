//go:build !unit

package admission

import (
	"context"
	"path/filepath"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Separate duties (issue 33, item 3): the roles the install ships, bound by
// RoleBindings, and the admission policies admission-*.yaml, on the real API
// server. This stack runs no kube-controller-manager, so the aggregated
// admin and edit are stood in for by what we aggregate into them: edit =
// gitops-service-tenant-edit, admin = that and gitops-service-tenant-gates
// (test/e2e's TestTenantKubectlRBAC checks the aggregation itself).

// installDutyRBAC creates the ClusterRoles of manifests/rbac/tenant_roles.yaml
// and duty_roles.yaml as shipped, and the two policies.
func installDutyRBAC(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	for _, f := range []string{"tenant_roles.yaml", "duty_roles.yaml"} {
		for _, u := range readDocs(t, filepath.Join(root, "manifests", "rbac", f)) {
			if err := k8s.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
			}
		}
	}
	installPolicy(t, "admission-environment-gates.yaml")
	installPolicy(t, "admission-promotion-force.yaml")
}

// bindRoles binds user to the ClusterRoles in ns.
func bindRoles(t *testing.T, ns, user string, clusterRoles ...string) {
	t.Helper()
	for _, role := range clusterRoles {
		require.NoError(t, k8s.Create(context.Background(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: user + "-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))
	}
}

// duties is a namespace with a gated Environment prod (frozen, one approval
// by the release manager, soak in its parent staging), the binding that runs
// Snapshot snap-1 there, the PromotionHistory of a rollback there, and a user
// of each duty.
type duties struct {
	ns                                                     string
	promoter, approver, gatekeeper, editor, admin          client.Client
	promoterName, approverName, gatekeeperName, editorName string
}

const (
	rolePromoter       = "gitops-service-promoter"
	roleApprover       = "gitops-service-approver"
	roleReleaseManager = "gitops-service-release-manager"
	roleEdit           = "gitops-service-tenant-edit"
	roleGates          = "gitops-service-tenant-gates"
)

func newDuties(t *testing.T) *duties {
	t.Helper()
	ctx := context.Background()
	installDutyRBAC(t)
	d := &duties{ns: "duties-" + rand.String(5)}
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.ns}}))
	sfx := rand.String(4)
	d.promoterName, d.gatekeeperName, d.editorName = "pat-"+sfx, "rita-"+sfx, "ed-"+sfx
	d.approverName = "abe-" + sfx
	adminName := "ada-" + sfx
	bindRoles(t, d.ns, d.promoterName, rolePromoter)
	bindRoles(t, d.ns, d.approverName, roleApprover)
	bindRoles(t, d.ns, d.gatekeeperName, roleReleaseManager)
	bindRoles(t, d.ns, d.editorName, roleEdit)
	bindRoles(t, d.ns, adminName, roleEdit, roleGates)
	d.promoter, d.approver, d.gatekeeper = clientAs(t, d.promoterName), clientAs(t, d.approverName), clientAs(t, d.gatekeeperName)
	d.editor, d.admin = clientAs(t, d.editorName), clientAs(t, adminName)

	for _, obj := range []client.Object{
		&as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "staging"}, Spec: as.EnvironmentSpec{
			Gates: &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Hour}}}},
		&as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "prod"}, Spec: as.EnvironmentSpec{
			ParentEnvironment: "staging", DeploymentStrategy: as.DeploymentStrategyManual,
			Preview:  &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: time.Hour}},
			Analysis: &as.AnalysisPolicy{Checks: []as.AnalysisCheck{{Name: "ready", Web: &as.WebCheck{URL: "https://shop.example.test/healthz"}}}},
			Gates: &as.PromotionGates{
				Freeze:     &as.FreezeSwitch{Frozen: true, Reason: "INC-1"},
				Approvals:  &as.ApprovalGate{Required: 1, Users: []string{d.gatekeeperName}},
				Rollbacks:  &as.RollbackGates{Freeze: true, Approvals: true},
				Signatures: &as.SignatureGate{Keys: []as.SignatureKey{{Name: "ci", PublicKey: signingKey}}},
			}}},
		&as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "scratch"}},
		&as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "snap-1"}, Spec: as.SnapshotSpec{Application: "shop"}},
		&as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "snap-2"}, Spec: as.SnapshotSpec{Application: "shop"}},
		&as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "shop-prod"}, Spec: as.SnapshotEnvironmentBindingSpec{
			Application: "shop", Environment: "prod", Snapshot: "snap-1"}},
		&as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "shop.prod"}, Spec: as.PromotionHistorySpec{
			Application: "shop", Environment: "prod"}},
		// A forced run a release manager made: others label it (its spec is immutable).
		&as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "forced"}, Spec: as.PromotionRunSpec{
			Snapshot: "snap-1", Application: "shop", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Force: true}}},
	} {
		require.NoError(t, k8s.Create(ctx, obj), "%T %s", obj, obj.GetName())
	}
	// The policies and RBAC take a moment to reach the API server's caches:
	// until the editor's unfreeze of a probe Environment is refused by the
	// policy (one admitted before then is frozen again), the test cannot start.
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "probe"},
		Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}}}}))
	var err error
	require.Eventually(t, func() bool {
		err = patchEnv(d.editor, d.ns, "probe", func(e *as.Environment) { e.Spec.Gates.Freeze.Frozen = false })
		if err == nil {
			require.NoError(t, patchEnv(k8s, d.ns, "probe", func(e *as.Environment) { e.Spec.Gates.Freeze.Frozen = true }))
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
	}, 30*time.Second, 200*time.Millisecond, "the policy gitops-service-environment-gates does not refuse an unfreeze by edit: %v", err)
	require.Eventually(t, func() bool {
		return d.promoter.Create(ctx, promotion(d.ns, "probe-"+rand.String(4), false)) == nil
	}, 30*time.Second, 200*time.Millisecond, "the promoter cannot create a PromotionRun")
	return d
}

func promotion(ns, name string, force bool) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-2", Application: "shop", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Force: force}}}
}

func rollback(ns, name string) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-1", Application: "shop", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Rollback: true}}}
}

// patchEnv reads Environment name as the admin and patches it as c.
func patchEnv(c client.Client, ns, name string, mut func(*as.Environment)) error {
	ctx := context.Background()
	e := &as.Environment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, e); err != nil {
		return err
	}
	base := e.DeepCopy()
	mut(e)
	return c.Patch(ctx, e, client.MergeFrom(base))
}

func patchBinding(c client.Client, ns string) error {
	ctx := context.Background()
	b := &as.SnapshotEnvironmentBinding{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop-prod"}, b); err != nil {
		return err
	}
	base := b.DeepCopy()
	b.Spec.Snapshot = "snap-2"
	return c.Patch(ctx, b, client.MergeFrom(base))
}

func release(c client.Client, ns string) error {
	ctx := context.Background()
	h := &as.PromotionHistory{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop.prod"}, h); err != nil {
		return err
	}
	base := h.DeepCopy()
	now := metav1.Now()
	h.Spec.ReleasedAt = &now
	return c.Patch(ctx, h, client.MergeFrom(base))
}

// gateBypasses are the ways past a gate on prod, each as user c.
func gateBypasses(ns string) map[string]func(c client.Client) error {
	return map[string]func(c client.Client) error{
		"remove prod's gates": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Gates = nil })
		},
		"unfreeze prod": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Gates.Freeze.Frozen = false })
		},
		"lower prod's approvals to anyone": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Gates.Approvals.Users = nil })
		},
		"let rollbacks pass prod's freeze and approvals": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Gates.Rollbacks = nil })
		},
		"require a preview of prod no more": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Preview = nil })
		},
		"drop prod's analysis": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Analysis = nil })
		},
		"let anything pass prod's analysis": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Analysis.Checks[0].Web.ExpectedStatus = 404 })
		},
		"move prod out from under staging's soak": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.ParentEnvironment = "scratch" })
		},
		"require signatures of prod's images no more": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Gates.Signatures = nil })
		},
		"sign prod's images with a key of one's own": func(c client.Client) error {
			return patchEnv(c, ns, "prod", func(e *as.Environment) { e.Spec.Gates.Signatures.Keys[0].PublicKey = otherSigningKey })
		},
		"drop staging's soak time": func(c client.Client) error {
			return patchEnv(c, ns, "staging", func(e *as.Environment) { e.Spec.Gates.SoakTime = nil })
		},
		"delete prod (to re-create it without gates)": func(c client.Client) error {
			return c.Delete(context.Background(), &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"}})
		},
		"point prod's binding at a Snapshot":       func(c client.Client) error { return patchBinding(c, ns) },
		"release the rollback's hold (releasedAt)": func(c client.Client) error { return release(c, ns) },
		"force a promotion": func(c client.Client) error {
			return c.Create(context.Background(), promotion(ns, "force-"+rand.String(4), true))
		},
	}
}

// prod's signing key, and one a promoter would rather it were (the CRD does
// not parse them: the gate does, when it verifies).
const (
	signingKey      = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEci\n-----END PUBLIC KEY-----\n"
	otherSigningKey = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEme\n-----END PUBLIC KEY-----\n"
)

// editDeploysDirectly are the paths that edit keeps: it writes bindings as it
// writes GitOpsDeployments, the core API, which no gate holds (docs/tenants.md,
// "Separate duties": whoever must be held by gates gets the promoter
// role, not edit).
var editDeploysDirectly = map[string]bool{"point prod's binding at a Snapshot": true}

// TestPromoterCannotLiftOrBypassAGate: a user who may promote (the promoter
// role, and the aggregated edit) goes through each way past a gate that holds
// its promotion and is refused, by RBAC or by the policies; the release
// manager and admin are not. One namespace per path, so that each starts
// from the gated state.
func TestPromoterCannotLiftOrBypassAGate(t *testing.T) {
	for path := range gateBypasses("") {
		t.Run(path, func(t *testing.T) {
			d := newDuties(t)
			try := gateBypasses(d.ns)[path]
			users := map[string]client.Client{"promoter": d.promoter, "approver": d.approver}
			if !editDeploysDirectly[path] {
				users["edit"] = d.editor
			}
			for who, c := range users {
				err := try(c)
				require.Error(t, err, "%s: %s", who, path)
				assert.True(t, apierrors.IsForbidden(err), "%s: %s: %v", who, path, err)
			}
			assertGated(t, d.ns)
			// The release manager may (and admin, in a fresh namespace below).
			require.NoError(t, try(d.gatekeeper), "release manager: %s", path)
			a := newDuties(t)
			require.NoError(t, gateBypasses(a.ns)[path](a.admin), "admin: %s", path)
		})
	}
}

// assertGated: after the refusals, prod and staging are as they were.
func assertGated(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	prod, staging := &as.Environment{}, &as.Environment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, prod))
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "staging"}, staging))
	require.NotNil(t, prod.Spec.Gates)
	require.NotNil(t, prod.Spec.Gates.Freeze)
	assert.True(t, prod.Spec.Gates.Freeze.Frozen)
	require.NotNil(t, prod.Spec.Gates.Approvals)
	assert.NotEmpty(t, prod.Spec.Gates.Approvals.Users)
	assert.Equal(t, &as.RollbackGates{Freeze: true, Approvals: true}, prod.Spec.Gates.Rollbacks)
	assert.NotNil(t, prod.Spec.Preview)
	require.NotNil(t, prod.Spec.Analysis)
	assert.Zero(t, prod.Spec.Analysis.Checks[0].Web.ExpectedStatus)
	assert.Equal(t, "staging", prod.Spec.ParentEnvironment)
	require.NotNil(t, staging.Spec.Gates)
	assert.NotNil(t, staging.Spec.Gates.SoakTime)
	require.NotNil(t, prod.Spec.Gates.Signatures)
	assert.Equal(t, signingKey, prod.Spec.Gates.Signatures.Keys[0].PublicKey)
	b := &as.SnapshotEnvironmentBinding{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop-prod"}, b))
	assert.Equal(t, "snap-1", b.Spec.Snapshot)
	h := &as.PromotionHistory{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop.prod"}, h))
	assert.Nil(t, h.Spec.ReleasedAt)
	r := &as.PromotionRun{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "forced"}, r))
	assert.Equal(t, "snap-1", r.Spec.Snapshot)
	var runs as.PromotionRunList
	require.NoError(t, k8s.List(ctx, &runs, client.InNamespace(ns)))
	for _, r := range runs.Items {
		if r.Name != "forced" && r.Spec.ManualPromotion != nil {
			assert.False(t, r.Spec.ManualPromotion.Force, "run %s is forced", r.Name)
		}
	}
}

// TestDutiesDoTheirWork: what each role is for is admitted: the promoter
// creates Snapshots, PromotionRuns (a rollback too: it returns only to a
// Snapshot verified in the Environment and is held by the gates
// gates.rollbacks names, which the promoter cannot change) and previews;
// the approver approves; edit freezes (never unfreezes) and changes what is
// not a gate; creating an Environment with or without gates needs nothing
// more; and the GitOps Service's ServiceAccount writes the freeze for the panel.
func TestDutiesDoTheirWork(t *testing.T) {
	ctx := context.Background()
	d := newDuties(t)

	require.NoError(t, d.promoter.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "snap-3"}, Spec: as.SnapshotSpec{Application: "shop"}}))
	require.NoError(t, d.promoter.Create(ctx, promotion(d.ns, "promote", false)))
	require.NoError(t, d.promoter.Create(ctx, rollback(d.ns, "back")))
	require.NoError(t, d.promoter.Create(ctx, &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "pv"}, Spec: as.PromotionPreviewSpec{
		Snapshot: "snap-2", Application: "shop", TargetEnvironment: "prod"}}))
	err := d.promoter.Create(ctx, promotionApproval(d.ns, "self-approval", "prod", d.promoterName))
	assert.True(t, apierrors.IsForbidden(err), "the promoter approves: %v", err)
	err = d.promoter.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "prod-2"}})
	assert.True(t, apierrors.IsForbidden(err), "the promoter creates an Environment (an ungated way to prod's target): %v", err)

	// The approver approves as itself (the approvals policy, when installed, checks that).
	require.NoError(t, d.approver.Create(ctx, &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "ok"},
		Spec: as.PromotionApprovalSpec{Snapshot: "snap-2", Environment: "prod", Approver: as.Approver{User: d.approverName}}}), "the approver")
	err = d.approver.Create(ctx, promotion(d.ns, "approver-run", false))
	assert.True(t, apierrors.IsForbidden(err), "the approver promotes: %v", err)

	// edit: freezing tightens a gate; other fields are not gates.
	require.NoError(t, patchEnv(d.editor, d.ns, "staging", func(e *as.Environment) {
		e.Spec.Gates.Freeze = &as.FreezeSwitch{Frozen: true, Reason: "stop the line", By: d.editorName}
	}), "edit freezes staging")
	require.NoError(t, patchEnv(d.editor, d.ns, "prod", func(e *as.Environment) {
		e.Spec.DisplayName = "Production"
		e.Spec.Gates.Freeze.Reason = "INC-2"
	}), "edit changes prod's display name and freeze reason")
	require.NoError(t, d.editor.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "qa"},
		Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1}}}}), "edit creates a gated Environment")
	require.NoError(t, d.editor.Delete(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "scratch"}}), "edit deletes an ungated Environment")
	require.NoError(t, d.editor.Create(ctx, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "edit-run"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-2", Application: "shop", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}), "edit promotes")
	// ...and edit labels the forced run without re-aiming it.
	forced := &as.PromotionRun{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: "forced"}, forced))
	base := forced.DeepCopy()
	forced.Labels = map[string]string{"team": "shop"}
	require.NoError(t, d.editor.Patch(ctx, forced, client.MergeFrom(base)), "edit labels a forced run")

	// The GitOps Service's ServiceAccount unfreezes for the panel (its
	// ClusterRole in the install; a Role here).
	require.NoError(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "sidecar"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{as.GroupVersion.Group}, Resources: []string{"environments"}, Verbs: []string{"get", "patch", "update"}}}}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "sidecar"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "sidecar"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "argocd", Name: "gitops-service"}}}))
	sidecar := clientAs(t, sidecarUser, "system:serviceaccounts")
	require.Eventually(t, func() bool {
		return patchEnv(sidecar, d.ns, "prod", func(e *as.Environment) { e.Spec.Gates.Freeze = &as.FreezeSwitch{Frozen: false, By: "argocd:rita"} }) == nil
	}, 30*time.Second, 200*time.Millisecond, "the GitOps Service's ServiceAccount cannot unfreeze for the panel")
}

// TestNamespaceAdminBindsTheDutyRoles: each duty role is within what the
// aggregated admin grants, so a namespace admin may bind it (RBAC refuses a
// RoleBinding to a role with rights its creator lacks).
func TestNamespaceAdminBindsTheDutyRoles(t *testing.T) {
	ctx := context.Background()
	installDutyRBAC(t)
	ns := "duty-binds-" + rand.String(5)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	admin := "nsadmin-" + rand.String(4)
	require.NoError(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rolebindings"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}}}}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rolebindings"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rolebindings"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: admin}}}))
	editorOnly := "nseditor-" + rand.String(4)
	bindRoles(t, ns, editorOnly, roleEdit)
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rolebindings-editor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rolebindings"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editorOnly}}}))
	bindRoles(t, ns, admin, roleEdit, roleGates)
	c, e := clientAs(t, admin), clientAs(t, editorOnly)
	binding := func(role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "duty-"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "team"}}}
	}
	for _, role := range []string{rolePromoter, roleApprover, roleReleaseManager} {
		require.Eventually(t, func() bool { return c.Create(ctx, binding(role)) == nil }, 30*time.Second, 200*time.Millisecond,
			"a namespace admin cannot bind %s", role)
	}
	// edit cannot hand out the gatekeeper's rights it lacks.
	err := e.Create(ctx, binding(roleReleaseManager))
	assert.True(t, apierrors.IsForbidden(err), "edit binds the release manager: %v", err)
	for _, role := range []string{rolePromoter, roleApprover} {
		assert.NoError(t, e.Create(ctx, binding(role)), "edit binds %s", role)
	}
}
