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
// that match it.
func MapListed[S, T client.Object](c client.Reader, newList func() client.ObjectList, match func(changed S, item T) bool) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		changed, ok := obj.(S)
		if !ok {
			return nil
		}
		return Listed(ctx, c, newList(), func(item T) bool { return match(changed, item) }, client.InNamespace(obj.GetNamespace()))
	}
}

// Listed is a watch mapping's requests: the items of list (listed with opts)
// that keep says to enqueue. A list error is logged, never dropped silently;
// the next event or requeue covers the miss.
func Listed[T client.Object](ctx context.Context, c client.Reader, list client.ObjectList, keep func(T) bool, opts ...client.ListOption) []reconcile.Request {
	if err := c.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing for a watch mapping", "list", fmt.Sprintf("%T", list))
		return nil
	}
	var out []reconcile.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if item, ok := o.(T); ok && keep(item) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
		}
		return nil
	})
	return out
}
