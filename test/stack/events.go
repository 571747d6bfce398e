package stack

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitForEvent fails t unless, within the given time, an Event of type typ
// about obj appears whose reason is reason (any when empty) and whose message
// contains msgPart.
func WaitForEvent(t testing.TB, c client.Reader, obj client.Object, typ, reason, msgPart string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var events corev1.EventList
		if err := c.List(context.Background(), &events, client.InNamespace(obj.GetNamespace())); err == nil {
			for _, e := range events.Items {
				if e.InvolvedObject.UID == obj.GetUID() && e.Type == typ && (reason == "" || e.Reason == reason) && strings.Contains(e.Message, msgPart) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event %s %q for %s/%s within %s", typ, reason, msgPart, obj.GetNamespace(), obj.GetName(), within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
