package generator

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
)

// ServerParams answers the plugin protocol through the binding domain: the
// request names the binding (namespace + name) and the ApplicationSet it
// comes for; binding.Answer decides, from the cache c and, for what the cache
// does not show yet, uncached. allowFile is the admin's switch for file://
// repositories.
func ServerParams(c, uncached client.Reader, argoNamespace string, allowFile bool) ParamsFunc {
	return func(ctx context.Context, req Request) ([]argocd.GeneratorParams, error) {
		ns, _ := req.Input.Parameters[argocd.GeneratorInputNamespace].(string)
		name, _ := req.Input.Parameters[argocd.GeneratorInputBinding].(string)
		if ns == "" || name == "" {
			return nil, fmt.Errorf("%w: input.parameters must name the binding (namespace, binding)", ErrBadRequest)
		}
		params, err := binding.Answer(ctx, c, uncached, argoNamespace, req.ApplicationSetName, ns, name, allowFile)
		var wrong *binding.RequestError
		if errors.As(err, &wrong) {
			return nil, fmt.Errorf("%w: %s", ErrBadRequest, wrong.Message)
		}
		return params, err
	}
}

// Served answers only for bindings in namespaces serves accepts (the tenants
// of this sidecar's Argo CD instance): a request about another instance's
// tenant is refused, with no data. nil serves: params as it is.
func Served(params ParamsFunc, serves func(ctx context.Context, namespace string) bool) ParamsFunc {
	if serves == nil {
		return params
	}
	return func(ctx context.Context, req Request) ([]argocd.GeneratorParams, error) {
		ns, _ := req.Input.Parameters[argocd.GeneratorInputNamespace].(string)
		if ns != "" && !serves(ctx, ns) {
			return nil, fmt.Errorf("%w: namespace %s is not served by this Argo CD instance", ErrBadRequest, ns)
		}
		return params(ctx, req)
	}
}
