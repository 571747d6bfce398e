package kernel

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Ensure is the create-or-update-only-if-ours path for what we own outside
// the Argo CD namespace (tenant namespaces, tenant clusters; Owned.Apply is
// the one for Argo CD's objects): obj, named, is created with mutate applied,
// or the existing object of its name, read through reader (the API server
// where the cache does not hold that kind), is brought in line with mutate
// and updated when that changed it. An existing object that ours rejects is
// never touched: *NotOursError.
func Ensure(ctx context.Context, reader client.Reader, c client.Client, obj client.Object, ours func(client.Object) bool, mutate func()) error {
	if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		mutate()
		return c.Create(ctx, obj)
	}
	if !ours(obj) {
		kind := ""
		if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
			kind = gvk.Kind
		}
		return &NotOursError{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	}
	before := obj.DeepCopyObject()
	mutate()
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	return c.Update(ctx, obj)
}
