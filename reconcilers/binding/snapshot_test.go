package binding

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func TestBound(t *testing.T) {
	snap := func(uid, image string) *as.Snapshot {
		return &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "s1", UID: types.UID("uid-" + uid)}, Spec: as.SnapshotSpec{Application: "pay",
			Components: []as.SnapshotComponent{{Name: "web", ContainerImage: image}}}}
	}
	first, again, other := snap("1", "quay.io/pay/web:a"), snap("2", "quay.io/pay/web:b"), snap("3", "quay.io/pay/web:a")
	rec := func(s *as.Snapshot) *as.BoundSnapshot {
		return &as.BoundSnapshot{Name: s.Name, SnapshotIdentity: s.Identity()}
	}
	annotated := func(b *as.BoundSnapshot) map[string]string {
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		return map[string]string{as.AnnotationBoundSnapshot: string(raw)}
	}
	renamed := func(b *as.BoundSnapshot, name string) *as.BoundSnapshot { c := *b; c.Name = name; return &c }
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		status      *as.BoundSnapshot
		live        *as.Snapshot
		want        *as.BoundSnapshot // nil: SnapshotReplaced
	}{
		{name: "first sight records the live Snapshot", live: first, want: rec(first)},
		{name: "the recorded one deploys", status: rec(first), live: first, want: rec(first)},
		{name: "re-created with other content is refused", status: rec(first), live: again},
		{name: "re-created with the same content is refused too (another UID)", status: rec(first), live: other},
		{name: "a record of another name (re-pointed) records the live one", status: renamed(rec(first), "s0"), live: again, want: rec(again)},
		{name: "a PromotionRun's record wins over the status", annotations: annotated(rec(again)), status: rec(first), live: again, want: rec(again)},
		{name: "a PromotionRun's record refuses a replacement", annotations: annotated(rec(first)), live: again},
		{name: "a PromotionRun's record of another name does not count", annotations: annotated(renamed(rec(first), "s0")), status: rec(first), live: again},
		{name: "an unreadable annotation does not count", annotations: map[string]string{as.AnnotationBoundSnapshot: "{"}, status: rec(first), live: again},
		{name: "an empty status record is first sight", status: &as.BoundSnapshot{Name: "s1"}, live: again, want: rec(again)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations},
				Spec: as.SnapshotEnvironmentBindingSpec{Application: "pay", Environment: "prod", Snapshot: "s1"}, Status: as.SnapshotEnvironmentBindingStatus{Snapshot: tc.status}}
			got, err := Bound(seb, tc.live)
			if tc.want == nil {
				require.Error(t, err)
				assert.True(t, IsSnapshotReplaced(err), "%v", err)
				assert.True(t, kernel.AsRefusal(err).Keep, "a replacement keeps what is deployed")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, *tc.want, got)
		})
	}
}
