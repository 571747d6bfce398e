package generator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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
		if err != nil {
			return nil, err
		}
		return params, admitted(ctx, c, uncached, argoNamespace, ns, params)
	}
}

// admitted refuses an answer naming a repository the tenant's AppProject
// does not list (yet): the binding reconciler puts one there only once the
// tenant may read it (tenantproject.Access), and Argo CD would otherwise
// render one it allows the project through a project-scoped Secret (the
// tenant's credentials, even ones the repository refused) from another
// tenant's checkout. Argo CD keeps the Applications as they are on an error.
func admitted(ctx context.Context, c, uncached client.Reader, argoNamespace, namespace string, params []argocd.GeneratorParams) error {
	if len(params) == 0 {
		return nil
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: argoNamespace, Name: argocd.ProjectName(string(ns.UID))}
	missing := func(project *argov1alpha1.AppProject) string {
		for _, p := range params {
			if !slices.Contains(project.Spec.SourceRepos, p.RepoURL) {
				return p.RepoURL
			}
		}
		return ""
	}
	project := &argov1alpha1.AppProject{}
	err := c.Get(ctx, key, project)
	if err == nil && missing(project) == "" {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// The cache may not show the binding reconciler's last write yet.
	if err := uncached.Get(ctx, key, project); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if repo := missing(project); repo != "" {
		return fmt.Errorf("%w: repository %s is not allowed for namespace %s (yet): the SnapshotEnvironmentBinding's status says why", ErrBadRequest, repo, namespace)
	}
	return nil
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
