package gitopsdeployment

import (
	"fmt"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// validate returns the message of the first problem in a GitOpsDeployment's spec
// that no amount of waiting can fix, or "" when the spec is acceptable. The
// messages are the original service's, which clients match on.
func validate(gd *v1.GitOpsDeployment) string {
	switch {
	case gd.Spec.Source.Path == "":
		return v1.ErrMsgPathEmpty
	case gd.Spec.Source.Path == "/":
		return v1.ErrMsgPathRoot
	case argocd.CheckPath(gd.Spec.Source.Path) != "":
		return "spec.source." + argocd.CheckPath(gd.Spec.Source.Path)
	case gd.Spec.Type != v1.GitOpsDeploymentSpecTypeAutomated && gd.Spec.Type != v1.GitOpsDeploymentSpecTypeManual:
		return v1.ErrMsgTypeInvalid
	}
	if gd.Spec.SyncPolicy != nil {
		for _, o := range gd.Spec.SyncPolicy.SyncOptions {
			if o != v1.SyncOptionCreateNamespaceTrue && o != v1.SyncOptionCreateNamespaceFalse {
				return fmt.Sprintf("unsupported sync option %q: only %q and %q are supported", o, v1.SyncOptionCreateNamespaceTrue, v1.SyncOptionCreateNamespaceFalse)
			}
		}
	}
	dest := gd.Spec.Destination
	if dest.Environment == "" && dest.Namespace != "" && dest.Namespace != gd.Namespace {
		// The local cluster is shared by every tenant: without a ManagedEnvironment a
		// deployment may only reach its own namespace.
		return fmt.Sprintf("%s: spec.destination.namespace %q is not the GitOpsDeployment's own namespace %q, and a GitOpsDeployment without spec.destination.environment may only deploy to its own namespace",
			v1.ErrMsgEnvironmentNeeded, dest.Namespace, gd.Namespace)
	}
	return ""
}
