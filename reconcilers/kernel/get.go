package kernel

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GetConfirmed reads key through the cache; an object the cache does not
// have is looked for on the API server (api), as the cache may lag a create
// or, for objects the cache filters out, never have it.
func GetConfirmed(ctx context.Context, cache, api client.Reader, key client.ObjectKey, obj client.Object) error {
	err := cache.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = api.Get(ctx, key, obj)
	}
	return err
}
