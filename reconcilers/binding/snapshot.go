package binding

import (
	"encoding/json"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonSnapshotReplaced: the Snapshot of the binding's spec.snapshot is not
// the one the binding was pointed at (deleted and re-created under the name).
const ReasonSnapshotReplaced = "SnapshotReplaced"

// Bound is the Snapshot seb deploys when its Snapshot is now snap: the one
// a PromotionRun pointed it at (annotation AnnotationBoundSnapshot), else the
// one recorded in its status, else (first sight of spec.snapshot: a new
// binding, one re-pointed by hand, or one from before records) snap itself.
// A record counts only while its name is spec.snapshot, so re-pointing the
// binding records the new Snapshot; a snap of another identity under the
// same name is a refusal (SnapshotReplaced): nothing is generated for it.
func Bound(seb *appstudiov1alpha1.SnapshotEnvironmentBinding, snap *appstudiov1alpha1.Snapshot) (appstudiov1alpha1.BoundSnapshot, error) {
	now := appstudiov1alpha1.BoundSnapshot{Name: snap.Name, SnapshotIdentity: snap.Identity()}
	bound, ok := promoted(seb)
	if !ok && seb.Status.Snapshot != nil && seb.Status.Snapshot.Name == seb.Spec.Snapshot && seb.Status.Snapshot.Known() {
		bound, ok = *seb.Status.Snapshot, true
	}
	if !ok {
		return now, nil
	}
	if !bound.Matches(now.SnapshotIdentity) {
		return bound, Refuse(ReasonSnapshotReplaced,
			"Snapshot %s is not the one this binding was pointed at (UID %s, content %s; now UID %s, content %s): it was deleted and re-created; what is deployed stays. Promote it with a PromotionRun, or point the binding at another Snapshot",
			snap.Name, bound.UID, bound.Digest, now.UID, now.Digest).Keeping()
	}
	return bound, nil
}

// promoted is the Snapshot a PromotionRun pointed seb at, when the
// annotation names spec.snapshot and an identity; an unreadable one is
// ignored (whoever may write it may point spec.snapshot anywhere anyway).
func promoted(seb *appstudiov1alpha1.SnapshotEnvironmentBinding) (appstudiov1alpha1.BoundSnapshot, bool) {
	var b appstudiov1alpha1.BoundSnapshot
	raw, ok := seb.Annotations[appstudiov1alpha1.AnnotationBoundSnapshot]
	if !ok || json.Unmarshal([]byte(raw), &b) != nil || b.Name != seb.Spec.Snapshot || !b.Known() {
		return appstudiov1alpha1.BoundSnapshot{}, false
	}
	return b, true
}

// IsSnapshotReplaced says whether err is Bound's refusal.
func IsSnapshotReplaced(err error) bool {
	r := kernel.AsRefusal(err)
	return r != nil && r.Reason == ReasonSnapshotReplaced
}
