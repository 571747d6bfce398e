package kernel

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusPatcher writes one object's status once per reconcile, and only when
// it changed since the object was read.
type StatusPatcher struct {
	client client.Client
	before client.Object
	lock   bool
}

// NewStatusPatcher remembers obj as read.
func NewStatusPatcher(c client.Client, obj client.Object) *StatusPatcher {
	return &StatusPatcher{client: c, before: obj.DeepCopyObject().(client.Object)}
}

// WithOptimisticLock makes the write fail with a conflict when the object
// changed on the server since we last read or wrote it (for a status that
// decides something only one reconcile may decide, e.g. which run is active).
func (p *StatusPatcher) WithOptimisticLock() *StatusPatcher {
	p.lock = true
	return p
}

// Patch writes obj's status as a merge patch of what changed, and nothing
// else. Meant to be deferred: a write error lands in *errp unless it already
// holds one. A deleted object is not an error.
func (p *StatusPatcher) Patch(ctx context.Context, obj client.Object, errp *error) {
	if err := p.patch(ctx, obj); err != nil && *errp == nil {
		*errp = err
	}
}

func (p *StatusPatcher) patch(ctx context.Context, obj client.Object) error {
	data, err := client.MergeFrom(p.before).Data(obj)
	if err != nil {
		return fmt.Errorf("computing the status patch: %w", err)
	}
	var diff map[string]json.RawMessage
	if err := json.Unmarshal(data, &diff); err != nil {
		return fmt.Errorf("computing the status patch: %w", err)
	}
	status, changed := diff["status"]
	if !changed {
		return nil
	}
	body := map[string]any{"status": status}
	if p.lock {
		// The version last read or written by us (e.g. by AddFinalizer).
		body["metadata"] = map[string]string{"resourceVersion": obj.GetResourceVersion()}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("computing the status patch: %w", err)
	}
	if err := p.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, raw)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating status: %w", err)
	}
	p.before = obj.DeepCopyObject().(client.Object)
	return nil
}
