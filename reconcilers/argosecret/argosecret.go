// Package argosecret keeps the Secrets a tenant CR owns in the Argo CD
// namespace (cluster Secrets of ManagedEnvironments, repository Secrets of
// RepositoryCredentials): found by name and owner UID, written only when they
// changed, deleted only when ours and exactly the version read. A Secret of the
// same name that is not ours is a collision and is never touched. Fetch, Sync
// and Finalize are the control flow both reconcilers share.
package argosecret

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
)

// Store is one kind of owned Secret. Client's cache must hold our Secrets of
// the Argo CD namespace; APIReader reads past it.
type Store struct {
	Client    client.Client
	APIReader client.Reader
	Namespace string
	// Kind is the owner kind label (ownership.Kind...).
	Kind string
	// Index is the name of the field index by owner (see IndexAndWatch).
	Index string
}

// IndexAndWatch indexes the Store's Secrets by owner and returns a handler
// that enqueues the owner of a changed or deleted Secret, so edits by anyone
// else are put back.
func (s Store) IndexAndWatch(ctx context.Context, mgr ctrl.Manager) (handler.EventHandler, error) {
	err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Secret{}, s.Index, func(o client.Object) []string {
		if owner := s.OwnerOf(o); owner != nil {
			return []string{owner.String()}
		}
		return nil
	})
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if owner := s.OwnerOf(o); owner != nil {
			return []reconcile.Request{{NamespacedName: *owner}}
		}
		return nil
	}), err
}

// Controller starts the registration of the reconciler of the tenant CRs
// whose Secrets s keeps: the CRs (changes of spec and metadata only: our own
// status writes need no other look, the requeues cover the rest), our
// Secrets (one edited or deleted by someone else is put back) and the
// tenants' Secrets of type typ, watched without their data, which users maps
// to the CRs naming them (a fixed or rotated Secret is used at once).
func (s Store) Controller(ctx context.Context, mgr ctrl.Manager, name string, cr client.Object, typ corev1.SecretType, users handler.MapFunc) (*builder.Builder, error) {
	onSecret, err := s.IndexAndWatch(ctx, mgr)
	if err != nil {
		return nil, err
	}
	tenantSecrets, err := tenantsecret.Watch(mgr, typ, users)
	if err != nil {
		return nil, err
	}
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		For(cr, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.Secret{}, onSecret).
		WatchesRawSource(tenantSecrets), nil
}

// OwnerOf returns the CR a Secret of this Store was made for, or nil.
func (s Store) OwnerOf(o client.Object) *types.NamespacedName {
	if owner, ok := ownership.Owner(o, s.Kind); ok {
		return &owner
	}
	return nil
}

// Current returns the Secret name of the owner with uid, or nil. collided says
// a Secret of that name exists and is not ours.
func (s Store) Current(ctx context.Context, name string, uid types.UID) (current *corev1.Secret, collided bool, err error) {
	sec := &corev1.Secret{}
	if err := s.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if !s.ours(sec, uid) {
		return nil, true, nil
	}
	return sec, false, nil
}

// ours says whether sec is this Store's Secret for the owner with uid.
func (s Store) ours(sec client.Object, uid types.UID) bool {
	return ownership.IsOwnedBy(sec.GetLabels(), s.Kind, string(uid))
}

// Write creates desired, or brings current (ours, as cached) to it: only the
// type, data, labels and annotations desired sets are written, with
// server-side apply, so what others add is kept; nothing is sent when current
// already has them. collided says the name is taken by a Secret that is not
// ours.
func (s Store) Write(ctx context.Context, current, desired *corev1.Secret) (collided bool, err error) {
	uid := types.UID(desired.Labels[ownership.LabelOwnerUID])
	owned := kernel.Owned{Client: s.Client, APIReader: s.APIReader, Ours: func(o client.Object) bool { return s.ours(o, uid) }}
	err = owned.Apply(ctx, current, desired)
	var notOurs *kernel.NotOursError
	if errors.As(err, &notOurs) {
		return true, nil
	}
	return false, err
}

// Fetch reads the owner CR of key into obj. A CR that is gone takes its
// Secrets with it (found is false); a live one, those of an earlier CR of
// the same name.
func (s Store) Fetch(ctx context.Context, key types.NamespacedName, obj client.Object) (found bool, err error) {
	if err := s.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, s.DeleteFor(ctx, key, ownership.AnyUID)
		}
		return false, err
	}
	if obj.GetDeletionTimestamp().IsZero() {
		return true, s.DeleteFor(ctx, key, ownership.OtherUID(obj.GetUID()))
	}
	return true, nil
}

// Sync brings owner's Secret in line: deleted while refusal says why Argo CD
// may not have it, else written from desired (given the tenant's AppProject)
// once finalizer is on owner. collided: the name is taken by a Secret that
// is not ours.
func (s Store) Sync(ctx context.Context, owner client.Object, finalizer string, current *corev1.Secret, refusal *kernel.Refusal,
	desired func(project string) *corev1.Secret) (collided bool, err error) {
	if refusal != nil {
		if current != nil {
			if err := s.Delete(ctx, current); err != nil {
				return false, err
			}
			ctrl.LoggerFrom(ctx).Info("deleted an Argo CD Secret Argo CD may no longer use", "secret", current.Name, "reason", refusal.Reason)
		}
		return false, nil
	}
	ns := &corev1.Namespace{}
	if err := s.Client.Get(ctx, types.NamespacedName{Name: owner.GetNamespace()}, ns); err != nil {
		return false, fmt.Errorf("reading namespace %s: %w", owner.GetNamespace(), err)
	}
	if err := kernel.AddFinalizer(ctx, s.Client, owner, finalizer); err != nil {
		return false, err
	}
	return s.Write(ctx, current, desired(argocd.ProjectName(string(ns.UID))))
}

// Finalize deletes owner's Secrets, then lets owner go.
func (s Store) Finalize(ctx context.Context, owner client.Object, finalizer string) error {
	if err := s.DeleteFor(ctx, client.ObjectKeyFromObject(owner), ownership.AnyUID); err != nil {
		return err
	}
	return kernel.RemoveFinalizer(ctx, s.Client, owner, finalizer)
}

// DeleteFor deletes the Secrets made for the CR key whose owner UID satisfies match.
func (s Store) DeleteFor(ctx context.Context, key types.NamespacedName, match func(types.UID) bool) error {
	var list corev1.SecretList
	if err := s.Client.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{s.Index: key.String()}); err != nil {
		return fmt.Errorf("listing the Secrets of %s: %w", key, err)
	}
	for _, sec := range s.selected(list.Items, match) {
		if err := s.Delete(ctx, sec); err != nil {
			return err
		}
	}
	return nil
}

// selected are the Secrets of this Store in list whose owner UID satisfies match.
func (s Store) selected(list []corev1.Secret, match func(types.UID) bool) []*corev1.Secret {
	var out []*corev1.Secret
	for i := range list {
		sec := &list[i]
		if uid := types.UID(sec.Labels[ownership.LabelOwnerUID]); s.ours(sec, uid) && match(uid) {
			out = append(out, sec)
		}
	}
	return out
}

// Delete deletes exactly the Secret read (UID precondition), nothing newer.
func (s Store) Delete(ctx context.Context, sec *corev1.Secret) error {
	if err := s.Client.Delete(ctx, sec, client.Preconditions{UID: &sec.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s: %w", sec.Name, err)
	}
	return nil
}
