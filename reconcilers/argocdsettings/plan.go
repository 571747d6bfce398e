package argocdsettings

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Plan is what one apply to a ConfigMap sends, and what is not as we want it.
type Plan struct {
	// Apply are the keys our apply sends (and so owns afterwards).
	Apply map[string]string
	// Missing are our keys the ConfigMap lacks.
	Missing []string
	// Different are our keys set to another value.
	Different []string
	// Theirs are the Different keys another manager owns: an admin's or
	// another tool's choice (a tuned applicationset parameter), which we
	// leave as it is and report; never taken over.
	Theirs []string
	// UpToDate: the ConfigMap holds every key as we want it and we own exactly
	// those keys; no apply is needed.
	UpToDate bool
}

// PlanFor decides our apply to current (which exists) for want: every key
// that is absent, equal (shared ownership with whoever set it too) or already
// ours. Keys of an earlier version of ours that want no longer has are left
// out, so the apply removes them unless someone else owns them too.
func PlanFor(current *corev1.ConfigMap, want map[string]string) Plan {
	owned := OwnedKeys(current.ManagedFields, FieldManager)
	p := Plan{Apply: map[string]string{}}
	for _, k := range sortedKeys(want) {
		have, ok := current.Data[k]
		switch {
		case !ok:
			p.Missing = append(p.Missing, k)
			p.Apply[k] = want[k]
		case have == want[k]:
			p.Apply[k] = want[k]
		case owned[k]:
			p.Different = append(p.Different, k)
			p.Apply[k] = want[k]
		default:
			p.Different = append(p.Different, k)
			p.Theirs = append(p.Theirs, k)
		}
	}
	p.UpToDate = len(p.Missing) == 0 && len(p.Different) == 0 && len(owned) == len(want)
	for k := range owned {
		if _, ok := want[k]; !ok {
			p.UpToDate = false
		}
	}
	return p
}

// OwnedKeys are the data keys manager owns by apply in managedFields.
func OwnedKeys(fields []metav1.ManagedFieldsEntry, manager string) map[string]bool {
	out := map[string]bool{}
	for _, f := range fields {
		if f.Manager != manager || f.Operation != metav1.ManagedFieldsOperationApply || f.FieldsV1 == nil {
			continue
		}
		var set map[string]map[string]json.RawMessage
		if err := json.Unmarshal(f.FieldsV1.Raw, &set); err != nil {
			continue
		}
		for k := range set["f:data"] {
			if key, ok := strings.CutPrefix(k, "f:"); ok {
				out[key] = true
			}
		}
	}
	return out
}

// HasManager says whether manager owns anything of the object.
func HasManager(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
