package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// A Snapshot deleted and re-created under the name a binding deploys, with
// other images, never reaches Argo CD through the binding (issue 33): the
// binding says SnapshotReplaced, Argo CD asked again (a forced refresh) gets
// the plugin generator's error and keeps the Applications and what they
// deployed; a PromotionRun of the new Snapshot deploys it.
func TestReplacedSnapshotKeepsWhatIsDeployed(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	appWithComponents(t, ns, "overlays/dev")
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}, Spec: as.EnvironmentSpec{DisplayName: "Dev"}}))
	s1 := snapshotOf(ns, "s1", "v1")
	require.NoError(t, k8s.Create(ctx, s1))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "s1"}}
	require.NoError(t, k8s.Create(ctx, seb))
	runs := func(tag string) bool {
		for _, c := range []string{"frontend", "backend"} {
			d, err := deployment(ns, c)
			if err != nil || !running(d, "quay.io/example/"+c+":"+tag) {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool { return runs("v1") }, deployWait, poll, "s1 (v1) was not deployed")
	waitBinding(t, seb, "all components deployed, s1 recorded", func(b *as.SnapshotEnvironmentBinding) bool {
		return meta.IsStatusConditionTrue(b.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed) &&
			b.Status.Snapshot != nil && b.Status.Snapshot.Name == "s1" && b.Status.Snapshot.UID == string(s1.UID)
	})
	apps := func() map[string]argov1alpha1.Application {
		var list argov1alpha1.ApplicationList
		require.NoError(t, k8s.List(ctx, &list, client.InNamespace(argo.Namespace), client.MatchingLabels{ownership.LabelOwnerUID: string(seb.UID)}))
		out := map[string]argov1alpha1.Application{}
		for _, a := range list.Items {
			out[a.Name] = a
		}
		return out
	}
	before := apps()
	require.Len(t, before, 2)

	// s1 again, with other images.
	require.NoError(t, k8s.Delete(ctx, s1))
	require.Eventually(t, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(s1), &as.Snapshot{})) }, deployWait, poll)
	evil := snapshotOf(ns, "s1", "evil")
	require.NoError(t, k8s.Create(ctx, evil))
	got := waitBinding(t, seb, "Ready False SnapshotReplaced", func(b *as.SnapshotEnvironmentBinding) bool {
		c := meta.FindStatusCondition(b.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "SnapshotReplaced"
	})
	assert.Equal(t, string(s1.UID), got.Status.Snapshot.UID, "the binding's record follows the replacement")

	// Argo CD asked again: the generator refuses, Argo CD reports it on the
	// ApplicationSet and changes nothing.
	set := &argov1alpha1.ApplicationSet{}
	key := types.NamespacedName{Namespace: argo.Namespace, Name: argocd.ApplicationSetName(string(seb.UID))}
	require.NoError(t, k8s.Get(ctx, key, set))
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"argocd.argoproj.io/application-set-refresh": "true"}}})
	require.NoError(t, err)
	require.NoError(t, k8s.Patch(ctx, set, client.RawPatch(types.MergePatchType, patch)))
	require.Eventually(t, func() bool {
		if k8s.Get(ctx, key, set) != nil {
			return false
		}
		for _, c := range set.Status.Conditions {
			// The generator's refusal, as Argo CD relays it (no other error).
			if c.Type == argov1alpha1.ApplicationSetConditionErrorOccurred && c.Status == argov1alpha1.ApplicationSetConditionStatusTrue &&
				strings.Contains(c.Message, "is not the one this binding was pointed at") {
				t.Logf("Argo CD: %s", c.Message)
				return true
			}
		}
		return false
	}, deployWait, poll, "Argo CD never reported the generator's refusal: %+v", set.Status.Conditions)
	require.Never(t, func() bool {
		now := apps()
		if len(now) != len(before) {
			return true
		}
		for name, a := range now {
			if b, ok := before[name]; !ok || b.UID != a.UID || a.Spec.Source == nil || b.Spec.Source == nil ||
				!assert.ObjectsAreEqual(b.Spec.Source.Kustomize, a.Spec.Source.Kustomize) {
				return true
			}
		}
		return !runs("v1")
	}, 30*time.Second, time.Second, "the replaced Snapshot changed the Applications or what runs")

	// A PromotionRun of the new s1 (no gate on dev) records it: deployed.
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "promote-new-s1"}, Spec: as.PromotionRunSpec{
		Snapshot: "s1", Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "dev"}}}
	require.NoError(t, k8s.Create(ctx, run))
	waitPromotion(t, run, "Success", promotionSucceeded)
	require.True(t, runs("evil"), "the promoted Snapshot does not run")
	waitBinding(t, seb, "the new s1 recorded", func(b *as.SnapshotEnvironmentBinding) bool {
		return b.Status.Snapshot != nil && b.Status.Snapshot.UID == string(evil.UID) && b.Annotations[as.AnnotationBoundSnapshot] != ""
	})
}
