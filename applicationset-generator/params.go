package generator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/applicationset-generator/binding"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// ServerParams answers the plugin protocol from the cache: the request names
// the binding (namespace + name) and must come for that binding's own
// ApplicationSet. Argo CD's namespace is where the binding's Applications go.
func ServerParams(c, api client.Reader, argoNamespace string) ParamsFunc {
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
		if req.ApplicationSetName != argocd.ApplicationSetName(string(seb.UID)) {
			return nil, fmt.Errorf("%w: ApplicationSet %q is not the one of SnapshotEnvironmentBinding %s/%s", ErrBadRequest, req.ApplicationSetName, ns, name)
		}
		in, err := binding.Resolve(ctx, c, api, argoNamespace, seb)
		if err != nil {
			return nil, err
		}
		return binding.Params(in)
	}
}
