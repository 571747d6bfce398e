package binding

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	managedgitopsv1alpha1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Generate is the parameter sets of seb's components, read as Resolve reads
// and checked: the plugin generator's answer and what the reconciler writes
// the ApplicationSet for, so an ApplicationSet left from before a refusal gets
// nothing the reconciler would refuse. It sets seb.Status.Snapshot to the
// Snapshot deployed (Bound): only the one the binding was pointed at.
func Generate(ctx context.Context, c, api client.Reader, argoNamespace string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding, allowFile bool) ([]argocd.GeneratorParams, error) {
	in, err := Resolve(ctx, c, api, argoNamespace, seb)
	if err != nil {
		return nil, err
	}
	bound, err := Bound(seb, in.Snapshot)
	if err != nil {
		return nil, err
	}
	seb.Status.Snapshot = &bound
	params, err := Params(in)
	if err != nil {
		return nil, err
	}
	if err := Check(params, allowFile); err != nil {
		return nil, err
	}
	return params, nil
}

// RequestError: a plugin request names no binding, or comes for an
// ApplicationSet not made for the binding it names (the requester's mistake).
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

// Answer is Generate's answer to a plugin request for the binding
// namespace/name, coming for the ApplicationSet setName, when that is the
// binding's own (ours, in argoNamespace); else a *RequestError. api reads what
// the cache c may not show yet: an ApplicationSet just created, the holders of
// the names the binding's Applications may take.
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
	params, err := Generate(ctx, c, api, argoNamespace, seb, allowFile)
	if IsSnapshotReplaced(err) {
		// The cache may not show the PromotionRun's or the reconciler's
		// last record yet: decide on the binding as it is.
		if err := api.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, seb); err != nil {
			return nil, err // an error keeps the Applications; an empty answer would delete them
		}
		return Generate(ctx, c, api, argoNamespace, seb, allowFile)
	}
	return params, err
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

// Resolve reads everything a binding's parameters come from, through c (the
// cache). Every reference is looked up in the binding's own namespace only,
// and the Applications holding the names its Applications may take in
// argoNamespace (a name the cache says is free through api, past the cache:
// see holders). Missing or unusable inputs are a *kernel.Refusal (a condition
// for the user); anything else is transient.
func Resolve(ctx context.Context, c, api client.Reader, argoNamespace string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding) (Inputs, error) {
	in := Inputs{Binding: seb, Components: map[string]*appstudiov1alpha1.Component{}}
	ns := seb.Namespace
	get := func(name string, obj client.Object, what string) error {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			// what is one of our kind names: the reason stays bounded.
			return Refuse(what+"NotFound", "%s %q not found in namespace %q", what, name, ns)
		}
		return err
	}
	if err := get(seb.Spec.Application, &appstudiov1alpha1.Application{}, "Application"); err != nil {
		return in, err
	}
	in.Snapshot = &appstudiov1alpha1.Snapshot{}
	if err := get(seb.Spec.Snapshot, in.Snapshot, "Snapshot"); err != nil {
		return in, err
	}
	in.Environment = &appstudiov1alpha1.Environment{}
	if err := get(seb.Spec.Environment, in.Environment, "Environment"); err != nil {
		return in, err
	}
	var comps appstudiov1alpha1.ComponentList
	if err := c.List(ctx, &comps, client.InNamespace(ns)); err != nil {
		return in, err
	}
	for i := range comps.Items {
		comp := &comps.Items[i]
		if comp.Spec.Application == seb.Spec.Application {
			in.Components[comp.Name] = comp
		}
	}
	tenant := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: ns}, tenant); err != nil {
		return in, err
	}
	in.Project = argocd.ProjectName(string(tenant.UID))
	var err error
	if in.Holders, err = holders(ctx, c, api, argoNamespace, string(tenant.UID), seb, in.Snapshot.Spec.Components); err != nil {
		return in, err
	}
	in.DestinationServer, in.DestinationNamespace, err = destination(ctx, c, in.Environment)
	return in, err
}

// destination is where an Environment deploys: its own ManagedEnvironment's
// cluster when it has credentials or deploys through a DeploymentTargetClaim,
// else the tenant's namespace on this cluster.
func destination(ctx context.Context, c client.Reader, env *appstudiov1alpha1.Environment) (string, string, error) {
	var apiURL, ns string
	switch {
	case env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName != "":
		dt, err := claimTarget(ctx, c, env)
		if err != nil {
			return "", "", err
		}
		apiURL, ns = dt.Spec.KubernetesClusterCredentials.APIURL, dt.Spec.KubernetesClusterCredentials.DefaultNamespace
	case env.HasCredentials():
		apiURL, ns = env.Spec.UnstableConfigurationFields.APIURL, env.Spec.UnstableConfigurationFields.TargetNamespace
	default:
		return argocd.LocalServer, env.Namespace, nil
	}
	me := &managedgitopsv1alpha1.GitOpsDeploymentManagedEnvironment{}
	err := c.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: ownership.ManagedEnvironmentName(env.Name)}, me)
	if apierrors.IsNotFound(err) {
		me = nil
	} else if err != nil {
		return "", "", err
	}
	return managedDestination(env, me, apiURL, ns)
}

// claimTarget is the DeploymentTarget bound to the Environment's claim, in
// the Environment's namespace; a claim not Bound (or Lost) is an input error,
// which leaves what is deployed alone.
func claimTarget(ctx context.Context, c client.Reader, env *appstudiov1alpha1.Environment) (*appstudiov1alpha1.DeploymentTarget, error) {
	name := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	claim := &appstudiov1alpha1.DeploymentTargetClaim{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, Refuse(ReasonDeploymentTargetClaimNotFound,
				"DeploymentTargetClaim %q of Environment %q not found", name, env.Name)
		}
		return nil, err
	}
	if claim.Status.Phase != appstudiov1alpha1.DeploymentTargetClaimPhaseBound {
		return nil, Refuse(ReasonDeploymentTargetClaimNotBound,
			"DeploymentTargetClaim %q of Environment %q is %s, not Bound", name, env.Name, claim.Status.Phase)
	}
	dt := &appstudiov1alpha1.DeploymentTarget{}
	err := c.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: claim.Spec.TargetName}, dt)
	if apierrors.IsNotFound(err) || (err == nil && dt.Spec.ClaimRef != claim.Name) {
		return nil, Refuse(ReasonDeploymentTargetNotFound,
			"DeploymentTarget %q of DeploymentTargetClaim %q not found", claim.Spec.TargetName, name)
	}
	return dt, err
}

// managedDestination is where an Environment with a cluster deploys: the
// Argo CD cluster of the ManagedEnvironment made for it (me, nil when there is
// none) and namespace ns (default: the Environment's). A ManagedEnvironment of
// that name that this Environment does not control, that still has another
// apiURL, or whose connection is not verified for its current spec is not used.
func managedDestination(env *appstudiov1alpha1.Environment, me *managedgitopsv1alpha1.GitOpsDeploymentManagedEnvironment, apiURL, ns string) (string, string, error) {
	if me == nil || !metav1.IsControlledBy(me, env) || !me.DeletionTimestamp.IsZero() || me.Spec.APIURL != apiURL || !connected(me) {
		return "", "", Refuse(ReasonManagedEnvironmentNotConnected,
			"the cluster of Environment %q is not connected yet (GitOpsDeploymentManagedEnvironment %q): see the status of both", env.Name, ownership.ManagedEnvironmentName(env.Name))
	}
	if ns == "" {
		ns = env.Namespace
	}
	return argocd.ClusterServer(me.Spec.APIURL, string(me.UID)), ns, nil
}

// connected says whether the ManagedEnvironment reconciler verified me's
// current spec.
func connected(me *managedgitopsv1alpha1.GitOpsDeploymentManagedEnvironment) bool {
	c := meta.FindStatusCondition(me.Status.Conditions, managedgitopsv1alpha1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == me.Generation
}
