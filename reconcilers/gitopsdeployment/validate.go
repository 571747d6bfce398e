package gitopsdeployment

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// check refuses a spec that no amount of waiting can make deployable: the
// checks of validate, then the repository URL and revision.
func check(gd *v1.GitOpsDeployment, allowFileRepositories bool) *kernel.Refusal {
	if reason, msg := validate(gd); msg != "" {
		return refuse(reason, "%s", msg)
	}
	if msg := argocd.CheckRepoURL(gd.Spec.Source.RepoURL, allowFileRepositories); msg != "" {
		return refuse(ReasonInvalidSource, "spec.source.repoURL: %s", msg)
	}
	if msg := argocd.CheckRevision(gd.Spec.Source.TargetRevision); msg != "" {
		return refuse(ReasonInvalidSource, "spec.source.targetRevision: %s", msg)
	}
	return nil
}

// target is where the deployment goes: the local cluster (only the
// deployment's own namespace) or env, the ManagedEnvironment of the same
// namespace it names (nil when not found), once that is connected.
func target(gd *v1.GitOpsDeployment, env *v1.GitOpsDeploymentManagedEnvironment) (argocd.Target, *kernel.Refusal) {
	ns := gd.Spec.Destination.Namespace
	if ns == "" {
		ns = gd.Namespace
	}
	if gd.Spec.Destination.Environment == "" {
		return argocd.Target{Server: argocd.LocalServer, Namespace: ns}, nil
	}
	if env == nil || !meta.IsStatusConditionTrue(env.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded) {
		// Waiting for another object, but the original service reports it
		// as an error (ErrorOccurred and a Warning Event), which clients
		// match on: a Refusal that looks again at the waiting interval, as
		// the environment's event may have come before this deployment was
		// cached.
		reason := ReasonManagedEnvironmentNotConnected
		if env == nil {
			reason = ReasonManagedEnvironmentNotFound
		}
		return argocd.Target{}, refuse(reason, "%s", v1.ErrMsgManagedEnvUnresolved).Retry(kernel.WaitingRetry)
	}
	return argocd.Target{Server: argocd.ClusterServer(env.Spec.APIURL, string(env.UID)), Namespace: ns}, nil
}

// refuse is a user-facing error in the original service's shape: the
// ErrorOccurred condition keeps its reason ErrorOccurred, the Warning Event
// and Ready say which failure it is (reason, one of the Reason* constants).
func refuse(reason, format string, args ...any) *kernel.Refusal {
	return kernel.Refuse(reason, format, args...).InCondition(string(v1.GitOpsDeploymentReasonErrorOccurred))
}

// validate returns the reason and message of the first problem in a
// GitOpsDeployment's spec that no amount of waiting can fix, or "" when the
// spec is acceptable. The messages are the original service's, which
// clients match on.
func validate(gd *v1.GitOpsDeployment) (reason, msg string) {
	switch {
	case gd.Spec.Source.Path == "":
		return ReasonInvalidSource, v1.ErrMsgPathEmpty
	case gd.Spec.Source.Path == "/":
		return ReasonInvalidSource, v1.ErrMsgPathRoot
	case argocd.CheckPath(gd.Spec.Source.Path) != "":
		return ReasonInvalidSource, "spec.source." + argocd.CheckPath(gd.Spec.Source.Path)
	case gd.Spec.Type != v1.GitOpsDeploymentSpecTypeAutomated && gd.Spec.Type != v1.GitOpsDeploymentSpecTypeManual:
		return ReasonInvalidType, v1.ErrMsgTypeInvalid
	}
	if gd.Spec.SyncPolicy != nil {
		for _, o := range gd.Spec.SyncPolicy.SyncOptions {
			if o != v1.SyncOptionCreateNamespaceTrue && o != v1.SyncOptionCreateNamespaceFalse {
				return ReasonInvalidSyncPolicy, fmt.Sprintf("unsupported sync option %q: only %q and %q are supported", o, v1.SyncOptionCreateNamespaceTrue, v1.SyncOptionCreateNamespaceFalse)
			}
		}
	}
	dest := gd.Spec.Destination
	if dest.Environment == "" && dest.Namespace != "" && dest.Namespace != gd.Namespace {
		// The local cluster is shared by every tenant: without a ManagedEnvironment a
		// deployment may only reach its own namespace.
		return ReasonInvalidDestination, fmt.Sprintf("%s: spec.destination.namespace %q is not the GitOpsDeployment's own namespace %q, and a GitOpsDeployment without spec.destination.environment may only deploy to its own namespace",
			v1.ErrMsgEnvironmentNeeded, dest.Namespace, gd.Namespace)
	}
	return "", ""
}
