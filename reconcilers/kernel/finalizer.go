package kernel

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// AddFinalizer adds name to obj on the server before anything that must be
// cleaned up is written. Only the finalizers and resourceVersion of obj
// change in memory: the status being computed is kept.
func AddFinalizer(ctx context.Context, c client.Client, obj client.Object, name string) error {
	if controllerutil.ContainsFinalizer(obj, name) {
		return nil
	}
	return patchFinalizers(ctx, c, obj, func(o client.Object) { controllerutil.AddFinalizer(o, name) })
}

// RemoveFinalizer releases obj once what name guarded is gone; an object
// already deleted is not an error.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, name string) error {
	if !controllerutil.ContainsFinalizer(obj, name) {
		return nil
	}
	err := patchFinalizers(ctx, c, obj, func(o client.Object) { controllerutil.RemoveFinalizer(o, name) })
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func patchFinalizers(ctx context.Context, c client.Client, obj client.Object, change func(client.Object)) error {
	written := obj.DeepCopyObject().(client.Object)
	patch := client.MergeFrom(obj)
	change(written)
	if err := c.Patch(ctx, written, patch); err != nil {
		return fmt.Errorf("patching the finalizers of %s: %w", obj.GetName(), err)
	}
	obj.SetFinalizers(written.GetFinalizers())
	obj.SetResourceVersion(written.GetResourceVersion())
	return nil
}
