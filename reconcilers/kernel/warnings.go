package kernel

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/gitops-service/gitops-service/reconcilers/metrics"
)

// Warning emits a Warning Event and counts it in
// gitops_service_warning_events_total{kind, reason}: every refusal and error
// the reconcilers report passes here, so the counter is incremented in one
// place. Nothing else emits a Warning Event.
func Warning(rec record.EventRecorder, obj runtime.Object, reason, msg string) {
	rec.Event(obj, corev1.EventTypeWarning, reason, msg)
	metrics.WarningEvents.WithLabelValues(kindOf(obj), metrics.Reason(reason)).Inc()
}

// kindOf is obj's kind: its TypeMeta's, else its Go type's name (our API
// types are named after their kinds; typed objects often lack TypeMeta).
func kindOf(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// ObjectEvents records the Events of one object no reconciler owns (the
// sidecar's own Pod): its Warnings pass through Warning like every other.
// A nil *ObjectEvents records nothing (no Pod known, e.g. outside a cluster).
type ObjectEvents struct {
	Recorder record.EventRecorder
	Object   runtime.Object
}

// Normal records a Normal Event.
func (e *ObjectEvents) Normal(reason, msg string) {
	if e != nil {
		e.Recorder.Event(e.Object, corev1.EventTypeNormal, reason, msg)
	}
}

// Warning records a Warning Event, counted.
func (e *ObjectEvents) Warning(reason, msg string) {
	if e != nil {
		Warning(e.Recorder, e.Object, reason, msg)
	}
}
