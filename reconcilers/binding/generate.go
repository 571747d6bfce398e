package binding

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Generate is the parameter sets of seb's components: what the plugin
// generator answers Argo CD and what the binding reconciler checks before it
// writes the ApplicationSet, so an ApplicationSet left from before a refusal
// gets nothing the reconciler would refuse. Reads as Resolve; problems with
// the user's objects are a *kernel.Refusal, anything else transient.
func Generate(ctx context.Context, c, api client.Reader, argoNamespace string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding, allowFile bool) ([]argocd.GeneratorParams, error) {
	in, err := Resolve(ctx, c, api, argoNamespace, seb)
	if err != nil {
		return nil, err
	}
	params, err := Params(in)
	if err != nil {
		return nil, err
	}
	if err := Check(params, allowFile); err != nil {
		return nil, err
	}
	return params, nil
}

// RequestError is a plugin request that names no binding, or comes for an
// ApplicationSet that is not the one made for the binding it names: the
// requester's mistake, answered without computing anything.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

// Answer is the answer to a plugin request for the binding namespace/name
// that comes for the ApplicationSet setName: Generate's, when that is the
// binding's own ApplicationSet (one of ours in argoNamespace, where the
// binding's Applications go), else a *RequestError. api reads what the cache
// c does not show yet: an ApplicationSet (Argo CD may ask as soon as the
// reconciler created it) and the holders of the names the binding may take.
func Answer(ctx context.Context, c, api client.Reader, argoNamespace, setName, namespace, name string, allowFile bool) ([]argocd.GeneratorParams, error) {
	seb := &appstudiov1alpha1.SnapshotEnvironmentBinding{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, seb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &RequestError{fmt.Sprintf("SnapshotEnvironmentBinding %s/%s not found", namespace, name)}
		}
		return nil, err
	}
	if err := requestedBy(ctx, c, api, argoNamespace, setName, seb); err != nil {
		return nil, err
	}
	return Generate(ctx, c, api, argoNamespace, seb, allowFile)
}

// requestedBy says why the ApplicationSet named setName is not the one we
// made for seb (named for its UID, in Argo CD's namespace, with our labels for
// seb), or nil. Argo CD names only the ApplicationSet, not its namespace.
func requestedBy(ctx context.Context, c, api client.Reader, argoNamespace, setName string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding) error {
	notOurs := &RequestError{fmt.Sprintf("ApplicationSet %q is not the one of SnapshotEnvironmentBinding %s/%s", setName, seb.Namespace, seb.Name)}
	if setName != argocd.ApplicationSetName(string(seb.UID)) {
		return notOurs
	}
	set := &argov1alpha1.ApplicationSet{}
	if err := kernel.GetConfirmed(ctx, c, api, types.NamespacedName{Namespace: argoNamespace, Name: setName}, set); err != nil {
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
