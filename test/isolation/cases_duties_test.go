//go:build !unit

package isolation

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// applyShippedRoles creates the ClusterRoles of manifests/rbac/<file> as shipped.
func applyShippedRoles(t *testing.T, files ...string) {
	t.Helper()
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	for _, f := range files {
		file, err := os.Open(filepath.Join(root, "manifests", "rbac", f))
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(file, 4096)
		for {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			if len(u.Object) == 0 {
				continue
			}
			if err := k8s.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
			}
		}
		require.NoError(t, file.Close())
	}
}

// TestHostileTenantCannotLiftItsGates (issue 33, item 3): a tenant user with
// the shipped roles that let it promote (the aggregated edit's rules and
// gitops-service-promoter), held by the freeze and an approval gate of its
// own prod, tries every way past them with the shipped policies installed:
// each is refused, and the sidecar keeps the run waiting. In the neighbour
// tenant's namespace RBAC refuses it all.
func TestHostileTenantCannotLiftItsGates(t *testing.T) {
	ctx := context.Background()
	applyShippedRoles(t, "tenant_roles.yaml", "duty_roles.yaml")
	installPolicy(t, "admission-environment-gates.yaml")
	installPolicy(t, "admission-promotion-force.yaml")
	mallory := "mallory-" + rand.String(4)
	ns, other := "duties-"+rand.String(5), "duties-"+rand.String(5)
	for _, n := range []string{ns, other} {
		require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
		require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "app"}, Spec: as.ApplicationSpec{DisplayName: "app"}}))
		require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "snap"},
			Spec: as.SnapshotSpec{Application: "app", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/x/fe:v1"}}}}))
		require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "prod"},
			Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{
				Freeze:    &as.FreezeSwitch{Frozen: true, Reason: "INC-7"},
				Approvals: &as.ApprovalGate{Required: 1, Users: []string{"rita"}}}}}))
		require.NoError(t, k8s.Create(ctx, &as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "app.prod"},
			Spec: as.PromotionHistorySpec{Application: "app", Environment: "prod"}}))
	}
	for _, role := range []string{"gitops-service-tenant-edit", "gitops-service-promoter"} {
		require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: mallory}}}))
	}
	asMallory := impersonating(t, mallory)

	// Her promotion into prod waits for the freeze.
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-prod"},
		Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	require.Eventually(t, func() bool { return asMallory.Create(ctx, run) == nil }, wait, tick, "mallory cannot promote in her namespace")
	held := func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return c != nil && c.Reason == as.WaitingReasonFrozen && len(r.Status.EnvironmentStatus) == 0
	}
	stack.WaitFor(t, k8s, run, wait, "held by the freeze", held)

	patchEnv := func(n, patch string) error { return patchEnvAt(asMallory, n, "prod", patch) }
	// Once the policy is in the API server's cache (a probe Environment she
	// unfroze before then is frozen again), her unfreeze is refused by it.
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}}}}))
	var err error
	require.Eventually(t, func() bool {
		if err = patchEnvAt(asMallory, ns, "probe", `{"spec":{"gates":{"freeze":{"frozen":false}}}}`); err == nil {
			require.NoError(t, patchEnvAt(k8s, ns, "probe", `{"spec":{"gates":{"freeze":{"frozen":true}}}}`))
		}
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
	}, wait, tick, "the policy never refused mallory's unfreeze: %v", err)

	for n, wantPolicy := range map[string]bool{ns: true, other: false} {
		ways := map[string]func() error{
			"unfreeze":         func() error { return patchEnv(n, `{"spec":{"gates":{"freeze":{"frozen":false}}}}`) },
			"remove the gates": func() error { return patchEnv(n, `{"spec":{"gates":null}}`) },
			"approvals by any": func() error { return patchEnv(n, `{"spec":{"gates":{"approvals":{"users":null}}}}`) },
			"delete prod": func() error {
				return asMallory.Delete(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "prod"}})
			},
			"release the hold": func() error {
				return asMallory.Patch(ctx, &as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "app.prod"}},
					client.RawPatch(types.MergePatchType, []byte(`{"spec":{"releasedAt":"`+time.Now().UTC().Format(time.RFC3339)+`"}}`)))
			},
			"force": func() error {
				return asMallory.Create(ctx, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: n, GenerateName: "forced-"},
					Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Force: true}}})
			},
		}
		for way, try := range ways {
			err := try()
			require.Error(t, err, "mallory in %s: %s", n, way)
			assert.True(t, apierrors.IsForbidden(err), "mallory in %s: %s: %v", n, way, err)
			if !wantPolicy {
				assert.NotContains(t, err.Error(), "ValidatingAdmissionPolicy", "RBAC, not the policy, refuses mallory in %s: %s", n, way)
			}
		}
		env := &as.Environment{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: n, Name: "prod"}, env))
		require.NotNil(t, env.Spec.Gates)
		assert.True(t, env.Spec.Gates.Freeze != nil && env.Spec.Gates.Freeze.Frozen, "%s/prod unfrozen", n)
		assert.True(t, env.Spec.Gates.Approvals != nil && len(env.Spec.Gates.Approvals.Users) == 1, "%s/prod's approvals loosened", n)
		h := &as.PromotionHistory{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: n, Name: "app.prod"}, h))
		assert.Nil(t, h.Spec.ReleasedAt, "%s: hold released", n)
	}
	// The sidecar keeps her run out of prod.
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && !held(got)
	}, 3*time.Second, tick, "the run left the freeze")
}

// patchEnvAt merge-patches Environment ns/name as c.
func patchEnvAt(c client.Client, ns, name, patch string) error {
	return c.Patch(context.Background(), &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.RawPatch(types.MergePatchType, []byte(patch)))
}
