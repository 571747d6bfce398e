package kernel

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MapListed is a watch mapping for links that may stand on either side (a
// claim naming its target, a target naming its claim): it enqueues the
// objects of newList's kind, in the namespace of the object that changed,
// that match it. A list error is logged, never dropped silently; the next
// event or requeue covers the miss.
func MapListed[S, T client.Object](c client.Reader, newList func() client.ObjectList, match func(changed S, item T) bool) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		changed, ok := obj.(S)
		if !ok {
			return nil
		}
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing for a watch mapping", "list", fmt.Sprintf("%T", list), "changed", client.ObjectKeyFromObject(obj))
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if item, ok := o.(T); ok && match(changed, item) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
			}
			return nil
		})
		return out
	}
}
