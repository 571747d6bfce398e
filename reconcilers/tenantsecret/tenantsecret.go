// Package tenantsecret watches the tenants' Secrets of one type, so that a
// reconciler acts at once when a Secret its CRs name is created or changed,
// without caching the Secrets' data: the cache keeps their metadata only, and
// the data is read uncached when it is used (Read).
package tenantsecret

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Watch adds to mgr a cache of the Secrets of type typ in all namespaces
// (metadata only) and returns the source that maps each of their changes with
// users (typically: the CRs of the Secret's namespace that name it).
func Watch(mgr ctrl.Manager, typ corev1.SecretType, users handler.MapFunc) (source.Source, error) {
	secrets, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {
			Field:     fields.OneTermEqualSelector("type", string(typ)),
			Transform: metadataOnly,
		}},
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(secrets); err != nil {
		return nil, err
	}
	return source.Kind(secrets, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, s *corev1.Secret) []reconcile.Request {
		return users(ctx, s)
	})), nil
}

// metadataOnly keeps a Secret's metadata in the cache, not its data.
func metadataOnly(o any) (any, error) {
	if s, ok := o.(*corev1.Secret); ok {
		s.Data, s.StringData, s.ManagedFields = nil, nil, nil
	}
	return o, nil
}

// Read reads the Secret a tenant's CR names, only from the CR's namespace and
// with reader (uncached): a name no Secret can have, or no such Secret, is
// the refusal notFound.
func Read(ctx context.Context, reader client.Reader, namespace, name string, notFound *kernel.Refusal) (*corev1.Secret, error) {
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, notFound
	}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	return secret, nil
}
