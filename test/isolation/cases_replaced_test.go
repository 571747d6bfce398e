//go:build !unit

package isolation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/test/stack"
)

// TestAReplacedSnapshotIsNotDeployedByTheBinding (issue 33): the release
// manager approves Snapshot snap into prod and a PromotionRun points prod's
// binding at it; a developer, who may create and delete Snapshots but not
// write bindings, deletes snap and creates it again with another image. The
// binding refuses it (SnapshotReplaced) and what the plugin generator would
// answer Argo CD is that refusal, not the new image.
func TestAReplacedSnapshotIsNotDeployedByTheBinding(t *testing.T) {
	ctx := context.Background()
	installApprovalPolicies(t)
	rm, dev := "rm-"+rand.String(4), "dev-"+rand.String(4)
	ns := gateTenant(t, rm)
	mayWriteSnapshots(t, ns, dev)
	asRM, asDev := impersonating(t, rm), impersonating(t, dev)

	snap := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap"}, snap))
	approval := &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"},
		Spec: as.PromotionApprovalSpec{Snapshot: "snap", SnapshotIdentity: snap.Identity(), Environment: "prod", Approver: as.Approver{User: rm}}}
	require.Eventually(t, func() bool { return asRM.Create(ctx, approval.DeepCopy()) == nil }, wait, tick, "the release manager cannot approve")
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-prod"},
		Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	require.NoError(t, k8s.Create(ctx, run))

	// The run binds prod to the approved Snapshot, and says which one.
	var seb *as.SnapshotEnvironmentBinding
	require.Eventually(t, func() bool {
		var list as.SnapshotEnvironmentBindingList
		require.NoError(t, k8s.List(ctx, &list, client.InNamespace(ns)))
		if len(list.Items) != 1 || list.Items[0].Status.Snapshot == nil {
			return false
		}
		seb = &list.Items[0]
		return true
	}, wait, tick, "the PromotionRun never bound prod")
	require.Equal(t, "snap", seb.Spec.Snapshot)
	require.Contains(t, seb.Annotations[as.AnnotationBoundSnapshot], string(snap.UID))
	require.Equal(t, string(snap.UID), seb.Status.Snapshot.UID)

	// The developer may not point the binding anywhere...
	hijack := seb.DeepCopy()
	hijack.Annotations[as.AnnotationBoundSnapshot] = `{"name":"snap"}`
	assert.True(t, apierrors.IsForbidden(asDev.Update(ctx, hijack)), "the developer wrote the binding")
	// ...but replaces its Snapshot.
	require.Eventually(t, func() bool {
		err := asDev.Delete(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"}})
		return err == nil || apierrors.IsNotFound(err)
	}, wait, tick, "the developer cannot delete the Snapshot")
	require.Eventually(t, func() bool {
		return asDev.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
			Spec: as.SnapshotSpec{Application: "app", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/evil/fe:latest"}}}}) == nil
	}, wait, tick, "the developer cannot create the Snapshot again")

	got := stack.WaitFor(t, k8s, seb, wait, "Ready False SnapshotReplaced", func(b *as.SnapshotEnvironmentBinding) bool {
		c := meta.FindStatusCondition(b.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == binding.ReasonSnapshotReplaced
	})
	assert.Equal(t, string(snap.UID), got.Status.Snapshot.UID, "the binding's record followed the replacement")
	// The plugin generator's decision (as it answers Argo CD) is the refusal.
	params, err := binding.Generate(ctx, k8s, k8s, argoNS, got, false)
	assert.True(t, binding.IsSnapshotReplaced(err), "the generator would answer %v, %v", params, err)
	assert.Empty(t, params)
}
