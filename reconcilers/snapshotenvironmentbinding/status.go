package snapshotenvironmentbinding

import (
	"fmt"
	"sort"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// bindingStatus is what a binding's status says after a pass.
type bindingStatus struct {
	// errorOccurred is the ErrorOccurred condition; nil for a binding that
	// never failed (it gets none).
	errorOccurred *metav1.Condition
	// deployed mirrors the binding's Applications, by component name.
	deployed []as.BindingStatusGitOpsDeployment
	// allDeployed is the AllComponentsDeployed condition; nil while refused
	// (the last one stays).
	allDeployed *metav1.Condition
}

// decideStatus is seb's status given this pass's refusal (nil: the
// ApplicationSet is written), the Applications labelled for seb in Argo CD's
// namespace (apps; look-alikes outside the tenant's project, whose namespace
// has UID tenantUID, are not shown) and the number of components the binding
// deploys (its Snapshot's).
func decideStatus(seb *as.SnapshotEnvironmentBinding, refusal *kernel.Refusal, apps []argov1alpha1.Application, tenantUID string, components int) bindingStatus {
	var out bindingStatus
	cond := metav1.Condition{Type: as.BindingConditionErrorOccurred, Status: metav1.ConditionFalse,
		Reason: as.BindingConditionErrorOccurred + "Resolved", ObservedGeneration: seb.Generation}
	if refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, refusal.ConditionReason(), refusal.Message
	}
	// A binding that never failed gets no ErrorOccurred condition.
	if refusal != nil || meta.FindStatusCondition(seb.Status.BindingConditions, cond.Type) != nil {
		out.errorOccurred = &cond
	}
	synced := 0
	var syncErrors []string
	for _, a := range tenantproject.ByOwner(apps, ownership.KindBinding, string(seb.UID), seb.Namespace, tenantUID) {
		if e := argocd.SyncError(&a); e != "" {
			syncErrors = append(syncErrors, fmt.Sprintf("component %s: %s", a.Labels[as.LabelComponent], e))
		}
		out.deployed = append(out.deployed, as.BindingStatusGitOpsDeployment{
			ComponentName:                a.Labels[as.LabelComponent],
			GitOpsDeployment:             a.Name,
			GitOpsDeploymentSyncStatus:   string(a.Status.Sync.Status),
			GitOpsDeploymentHealthStatus: string(a.Status.Health.Status),
			GitOpsDeploymentCommitID:     a.Status.Sync.Revision,
		})
		if a.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced {
			synced++
		}
	}
	sort.Slice(out.deployed, func(i, j int) bool { return out.deployed[i].ComponentName < out.deployed[j].ComponentName })
	if refusal != nil {
		return out
	}
	all := metav1.Condition{Type: as.ComponentDeploymentConditionAllComponentsDeployed, ObservedGeneration: seb.Generation,
		Message: fmt.Sprintf("%d of %d components deployed", synced, components)}
	switch {
	case len(syncErrors) > 0:
		// What Argo CD refused (e.g. the project fence) is shown, not only "unsynced".
		sort.Strings(syncErrors)
		all.Status, all.Reason = metav1.ConditionFalse, as.ComponentDeploymentConditionErrorOccurred
		all.Message += "; SyncError: " + strings.Join(syncErrors, "; ")
	case synced == components && components > 0:
		all.Status, all.Reason = metav1.ConditionTrue, as.ComponentDeploymentConditionCommitsSynced
	default:
		all.Status, all.Reason = metav1.ConditionFalse, as.ComponentDeploymentConditionCommitsUnsynced
	}
	out.allDeployed = &all
	return out
}
