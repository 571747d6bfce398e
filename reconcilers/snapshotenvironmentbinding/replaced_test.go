//go:build !unit

package snapshotenvironmentbinding_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

const inputHash = "managed-gitops.redhat.com/generator-input-hash"

// recorded waits until the binding's status records Snapshot name with the
// UID uid and returns the binding.
func recorded(t *testing.T, seb *as.SnapshotEnvironmentBinding, name string, uid string) *as.SnapshotEnvironmentBinding {
	t.Helper()
	got := &as.SnapshotEnvironmentBinding{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(seb), got) == nil &&
			got.Status.Snapshot != nil && got.Status.Snapshot.Name == name && got.Status.Snapshot.UID == uid
	}, wait, tick, "the binding never recorded Snapshot %s (UID %s): %+v", name, uid, got.Status.Snapshot)
	return got
}

// recreate deletes Snapshot snap and creates it again with image for web.
func recreate(t *testing.T, snap *as.Snapshot, image string) *as.Snapshot {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8s.Delete(ctx, snap))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(snap), &as.Snapshot{}))
	}, wait, tick)
	again := &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: snap.Namespace, Name: snap.Name},
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: image}}}}
	require.NoError(t, k8s.Create(ctx, again))
	return again
}

// replaced waits until the binding refuses its Snapshot as replaced:
// Ready False SnapshotReplaced, the seed's ErrorOccurred saying so.
func replaced(t *testing.T, seb *as.SnapshotEnvironmentBinding) {
	t.Helper()
	waitReady(t, seb, metav1.ConditionFalse, "SnapshotReplaced")
	got := &as.SnapshotEnvironmentBinding{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(seb), got))
	c := meta.FindStatusCondition(got.Status.BindingConditions, as.BindingConditionErrorOccurred)
	require.NotNil(t, c, "no ErrorOccurred: %+v", got.Status)
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Contains(t, c.Message, "is not the one this binding was pointed at")
}

// A binding deploys the Snapshot it was pointed at, not whatever carries its
// name later: deleted and re-created with another image, the binding says
// SnapshotReplaced (Warning Event), its ApplicationSet is not written and the
// plugin generator answers Argo CD with an error (Argo CD keeps the
// Applications). Re-pointing the binding, or a PromotionRun's record of the
// new one, deploys it; a record of the old one refuses it again.
func TestReplacedSnapshotIsNotDeployed(t *testing.T) {
	ctx := context.Background()
	seb := binding(t)
	snap := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: seb.Namespace, Name: "snap"}, snap))
	recorded(t, seb, "snap", string(snap.UID))
	code, params, msg := generate(t, seb)
	require.Equal(t, http.StatusOK, code, msg)
	require.Len(t, params, 1)
	require.Equal(t, "quay.io/x/web:1", params[0].Image)
	set := applicationSet(t, seb)
	hash := set.Annotations[inputHash]
	require.NotEmpty(t, hash)

	// Same name, another image: nothing of it reaches Argo CD.
	again := recreate(t, snap, "quay.io/x/web:evil")
	replaced(t, seb)
	code, params, msg = generate(t, seb)
	require.Equal(t, http.StatusBadRequest, code, "the generator answered for a replaced Snapshot: %v", params)
	require.Empty(t, params)
	require.Contains(t, msg, "is not the one this binding was pointed at")
	require.Eventually(t, func() bool {
		var events corev1.EventList
		require.NoError(t, k8s.List(ctx, &events, client.InNamespace(seb.Namespace)))
		for _, e := range events.Items {
			if e.InvolvedObject.UID == seb.UID && e.Type == corev1.EventTypeWarning && e.Reason == "SnapshotReplaced" {
				return true
			}
		}
		return false
	}, wait, tick, "no Warning Event SnapshotReplaced")
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(set), set))
	require.Equal(t, hash, set.Annotations[inputHash], "the ApplicationSet was written for the replaced Snapshot")
	got := recorded(t, seb, "snap", string(snap.UID)) // still the old one

	// Same name and content again (a third UID): still another Snapshot.
	third := recreate(t, again, "quay.io/x/web:1")
	replaced(t, seb)
	code, _, _ = generate(t, seb)
	require.Equal(t, http.StatusBadRequest, code)

	// A PromotionRun that gated the third records it with spec.snapshot:
	// deployed.
	rec, err := json.Marshal(as.BoundSnapshot{Name: "snap", SnapshotIdentity: third.Identity()})
	require.NoError(t, err)
	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations = map[string]string{as.AnnotationBoundSnapshot: string(rec)}
	require.NoError(t, k8s.Patch(ctx, got, patch))
	recorded(t, seb, "snap", string(third.UID))
	waitReady(t, seb, metav1.ConditionUnknown, "Progressing")
	code, params, msg = generate(t, seb)
	require.Equal(t, http.StatusOK, code, msg)
	require.Equal(t, "quay.io/x/web:1", params[0].Image)

	// The PromotionRun's record holds against the next replacement, whatever
	// the status says.
	recreate(t, third, "quay.io/x/web:evil")
	replaced(t, seb)

	// Re-pointed (a new name): the new Snapshot is recorded and deployed.
	next := &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: seb.Namespace, Name: "snap-2"},
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/x/web:2"}}}}
	require.NoError(t, k8s.Create(ctx, next))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(seb), got))
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.Snapshot = "snap-2"
	require.NoError(t, k8s.Patch(ctx, got, patch))
	recorded(t, seb, "snap-2", string(next.UID))
	waitReady(t, seb, metav1.ConditionUnknown, "Progressing")
	code, params, msg = generate(t, seb)
	require.Equal(t, http.StatusOK, code, msg)
	require.Equal(t, "quay.io/x/web:2", params[0].Image)
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(set), set) == nil && set.Annotations[inputHash] != hash
	}, wait, tick, "the ApplicationSet was not written for the re-pointed binding")
}
