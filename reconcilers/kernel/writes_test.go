package kernel

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The events of our own writes are dropped; everyone else's, resyncs and
// deletes pass, also for an object we once wrote.
func TestOthersChanges(t *testing.T) {
	at := func(uid, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	w := NewWrites()
	p := w.OthersChanges()
	w.wrote(at("a", "2"))

	for _, tc := range []struct {
		name string
		pass bool
		got  bool
	}{
		{"create at our version", false, p.Create(event.CreateEvent{Object: at("a", "2")})},
		{"update to our version", false, p.Update(event.UpdateEvent{ObjectOld: at("a", "1"), ObjectNew: at("a", "2")})},
		{"update by someone else after ours", true, p.Update(event.UpdateEvent{ObjectOld: at("a", "2"), ObjectNew: at("a", "3")})},
		{"resync at our version", true, p.Update(event.UpdateEvent{ObjectOld: at("a", "2"), ObjectNew: at("a", "2")})},
		{"delete at our version", true, p.Delete(event.DeleteEvent{Object: at("a", "2")})},
		{"create of an object we never wrote", true, p.Create(event.CreateEvent{Object: at("b", "2")})},
		{"update of an object we never wrote", true, p.Update(event.UpdateEvent{ObjectOld: at("b", "1"), ObjectNew: at("b", "2")})},
	} {
		if tc.got != tc.pass {
			t.Errorf("%s: passed %v, want %v", tc.name, tc.got, tc.pass)
		}
	}

	// A later write of ours replaces the version remembered.
	w.wrote(at("a", "4"))
	if !p.Update(event.UpdateEvent{ObjectOld: at("a", "1"), ObjectNew: at("a", "2")}) {
		t.Error("the version of an earlier write of ours still dropped an event")
	}
	if p.Update(event.UpdateEvent{ObjectOld: at("a", "3"), ObjectNew: at("a", "4")}) {
		t.Error("the version of our latest write passed")
	}
}
