package kernel

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sameStatus lets a patch be skipped only when the statuses are identical;
// anything it cannot tell goes by the patch.
func TestSameStatus(t *testing.T) {
	at := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	now := time.Now() // with a monotonic clock reading, which Round(0) drops
	ns := func(phase corev1.NamespacePhase, conds ...corev1.NamespaceCondition) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1"}, Status: corev1.NamespaceStatus{Phase: phase, Conditions: conds}}
	}
	relabelled := ns(corev1.NamespaceActive)
	relabelled.Labels = map[string]string{"other": "change"}
	for _, tc := range []struct {
		name string
		a, b client.Object
		want bool
	}{
		{"identical", ns(corev1.NamespaceActive), ns(corev1.NamespaceActive), true},
		{"only metadata differs", ns(corev1.NamespaceActive), relabelled, true},
		{"a value differs", ns(corev1.NamespaceActive), ns(corev1.NamespaceTerminating), false},
		{"a condition added", ns(corev1.NamespaceActive), ns(corev1.NamespaceActive, corev1.NamespaceCondition{Type: "T"}), false},
		{"the same instant, one with a monotonic clock reading", ns(corev1.NamespaceActive, corev1.NamespaceCondition{Type: "T", LastTransitionTime: metav1.NewTime(now)}),
			ns(corev1.NamespaceActive, corev1.NamespaceCondition{Type: "T", LastTransitionTime: metav1.NewTime(now.Round(0))}), false},
		{"the same time read back", ns(corev1.NamespaceActive, corev1.NamespaceCondition{Type: "T", LastTransitionTime: metav1.NewTime(at)}),
			ns(corev1.NamespaceActive, corev1.NamespaceCondition{Type: "T", LastTransitionTime: metav1.NewTime(at)}), true},
		{"no status field", &corev1.Secret{}, &corev1.Secret{}, false},
		{"different types", ns(corev1.NamespaceActive), &corev1.Pod{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameStatus(tc.a, tc.b); got != tc.want {
				t.Errorf("sameStatus = %v, want %v", got, tc.want)
			}
		})
	}
}
