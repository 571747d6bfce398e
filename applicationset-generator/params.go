package generator

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// ServerParams answers the plugin protocol from the cache: the request names
// the binding (namespace + name) and must come for that binding's own
// ApplicationSet, one of ours in Argo CD's namespace (where the binding's
// Applications go). What it serves passes the binding reconciler's check
// (allowFile: the admin's switch for file:// repositories), so an
// ApplicationSet the reconciler stopped updating gets nothing it refuses.
// uncached reads what the cache does not show yet: an ApplicationSet (Argo CD
// may ask as soon as the reconciler created it) and the holders of the
// Application names the binding may take.
func ServerParams(c, uncached client.Reader, argoNamespace string, allowFile bool) ParamsFunc {
	return func(ctx context.Context, req Request) ([]argocd.GeneratorParams, error) {
		ns, _ := req.Input.Parameters[argocd.GeneratorInputNamespace].(string)
		name, _ := req.Input.Parameters[argocd.GeneratorInputBinding].(string)
		if ns == "" || name == "" {
			return nil, fmt.Errorf("%w: input.parameters must name the binding (namespace, binding)", ErrBadRequest)
		}
		seb := &appstudiov1alpha1.SnapshotEnvironmentBinding{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, seb); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%w: SnapshotEnvironmentBinding %s/%s not found", ErrBadRequest, ns, name)
			}
			return nil, err
		}
		if err := ours(ctx, c, uncached, argoNamespace, req.ApplicationSetName, seb); err != nil {
			return nil, err
		}
		in, err := binding.Resolve(ctx, c, uncached, argoNamespace, seb)
		if err != nil {
			return nil, err
		}
		params, err := binding.Params(in)
		if err != nil {
			return nil, err
		}
		if err := binding.Check(params, allowFile); err != nil {
			return nil, err
		}
		return params, nil
	}
}

// ours says why the ApplicationSet named setName is not the one we made for
// seb (named for its UID, in Argo CD's namespace, with our labels for seb),
// or nil. Argo CD names only the ApplicationSet, not its namespace.
func ours(ctx context.Context, c, uncached client.Reader, argoNamespace, setName string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding) error {
	notOurs := fmt.Errorf("%w: ApplicationSet %q is not the one of SnapshotEnvironmentBinding %s/%s", ErrBadRequest, setName, seb.Namespace, seb.Name)
	if setName != argocd.ApplicationSetName(string(seb.UID)) {
		return notOurs
	}
	set := &argov1alpha1.ApplicationSet{}
	key := types.NamespacedName{Namespace: argoNamespace, Name: setName}
	if err := kernel.GetConfirmed(ctx, c, uncached, key, set); err != nil {
		if apierrors.IsNotFound(err) {
			return notOurs
		}
		return err
	}
	owner, ok := ownership.Owner(set, ownership.KindBinding)
	if !ok || set.Labels[ownership.LabelOwnerUID] != string(seb.UID) || owner != client.ObjectKeyFromObject(seb) {
		return notOurs
	}
	return nil
}
