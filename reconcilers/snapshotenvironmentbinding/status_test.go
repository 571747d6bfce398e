package snapshotenvironmentbinding

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

const tenantUID = "tenant-uid"

// app is an Application generated for seb's component, in the tenant's
// project, with Argo CD's sync and health status.
func app(seb *as.SnapshotEnvironmentBinding, component string, sync argov1alpha1.SyncStatusCode, healthStatus string) argov1alpha1.Application {
	labels, annotations := ownership.Meta(ownership.KindBinding, seb.Namespace, seb.Name, string(seb.UID))
	labels[as.LabelComponent] = component
	a := argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: seb.Name + "-" + component, Labels: labels, Annotations: annotations},
		Spec:       argov1alpha1.ApplicationSpec{Project: argocd.ProjectName(tenantUID)},
	}
	a.Status.Sync = argov1alpha1.SyncStatus{Status: sync, Revision: "rev-" + component}
	a.Status.Health.Status = health.HealthStatusCode(healthStatus)
	return a
}

// withSyncError gives a Argo CD's SyncError condition.
func withSyncError(a argov1alpha1.Application, msg string) argov1alpha1.Application {
	a.Status.Conditions = []argov1alpha1.ApplicationCondition{{Type: argov1alpha1.ApplicationConditionSyncError, Message: msg}}
	return a
}

func TestDecideStatus(t *testing.T) {
	seb := func(failedBefore bool) *as.SnapshotEnvironmentBinding {
		s := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "shop-dev", UID: "seb-uid", Generation: 3}}
		if failedBefore {
			s.Status.BindingConditions = []metav1.Condition{{Type: as.BindingConditionErrorOccurred, Status: metav1.ConditionTrue,
				Reason: as.BindingReasonErrorOccurred, Message: `Snapshot "snap" not found`}}
		}
		return s
	}
	fine, failed := seb(false), seb(true)
	resolved := &metav1.Condition{Type: as.BindingConditionErrorOccurred, Status: metav1.ConditionFalse, Reason: "ErrorOccurredResolved", ObservedGeneration: 3}
	all := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: as.ComponentDeploymentConditionAllComponentsDeployed, Status: status, Reason: reason, Message: msg, ObservedGeneration: 3}
	}
	deployed := func(component, sync, health string) as.BindingStatusGitOpsDeployment {
		return as.BindingStatusGitOpsDeployment{ComponentName: component, GitOpsDeployment: "shop-dev-" + component,
			GitOpsDeploymentSyncStatus: sync, GitOpsDeploymentHealthStatus: health, GitOpsDeploymentCommitID: "rev-" + component}
	}
	lookAlike := app(fine, "evil", argov1alpha1.SyncStatusCodeSynced, "Healthy")
	lookAlike.Spec.Project = "default"
	otherBinding := app(fine, "other", argov1alpha1.SyncStatusCodeSynced, "Healthy")
	otherBinding.Labels[ownership.LabelOwnerUID] = "another-seb-uid"
	otherTenant := app(fine, "theirs", argov1alpha1.SyncStatusCodeSynced, "Healthy")
	otherTenant.Spec.Project = argocd.ProjectName("another-tenant-uid")

	tests := []struct {
		name       string
		seb        *as.SnapshotEnvironmentBinding
		refusal    *kernel.Refusal
		apps       []argov1alpha1.Application
		components int
		want       bindingStatus
	}{
		{
			name: "new binding, nothing generated yet: no ErrorOccurred condition, not deployed", seb: fine, components: 2,
			want: bindingStatus{allDeployed: all(metav1.ConditionFalse, as.ComponentDeploymentConditionCommitsUnsynced, "0 of 2 components deployed")},
		},
		{
			name: "every component synced, listed by component name", seb: fine, components: 2,
			apps: []argov1alpha1.Application{app(fine, "web", argov1alpha1.SyncStatusCodeSynced, "Healthy"), app(fine, "api", argov1alpha1.SyncStatusCodeSynced, "Progressing")},
			want: bindingStatus{
				deployed:    []as.BindingStatusGitOpsDeployment{deployed("api", "Synced", "Progressing"), deployed("web", "Synced", "Healthy")},
				allDeployed: all(metav1.ConditionTrue, as.ComponentDeploymentConditionCommitsSynced, "2 of 2 components deployed"),
			},
		},
		{
			name: "one component out of sync", seb: fine, components: 2,
			apps: []argov1alpha1.Application{app(fine, "web", argov1alpha1.SyncStatusCodeSynced, "Healthy"), app(fine, "api", argov1alpha1.SyncStatusCodeOutOfSync, "Missing")},
			want: bindingStatus{
				deployed:    []as.BindingStatusGitOpsDeployment{deployed("api", "OutOfSync", "Missing"), deployed("web", "Synced", "Healthy")},
				allDeployed: all(metav1.ConditionFalse, as.ComponentDeploymentConditionCommitsUnsynced, "1 of 2 components deployed"),
			},
		},
		{
			name: "a Snapshot component not generated yet", seb: fine, components: 2,
			apps: []argov1alpha1.Application{app(fine, "web", argov1alpha1.SyncStatusCodeSynced, "Healthy")},
			want: bindingStatus{
				deployed:    []as.BindingStatusGitOpsDeployment{deployed("web", "Synced", "Healthy")},
				allDeployed: all(metav1.ConditionFalse, as.ComponentDeploymentConditionCommitsUnsynced, "1 of 2 components deployed"),
			},
		},
		{
			name: "a Snapshot without components is not deployed", seb: fine, components: 0,
			want: bindingStatus{allDeployed: all(metav1.ConditionFalse, as.ComponentDeploymentConditionCommitsUnsynced, "0 of 0 components deployed")},
		},
		{
			name: "Argo CD's sync errors are shown, sorted by component", seb: fine, components: 2,
			apps: []argov1alpha1.Application{
				withSyncError(app(fine, "web", argov1alpha1.SyncStatusCodeOutOfSync, "Missing"), "namespace kube-system is not permitted"),
				withSyncError(app(fine, "api", argov1alpha1.SyncStatusCodeSynced, "Healthy"), "one resource refused"),
			},
			want: bindingStatus{
				deployed: []as.BindingStatusGitOpsDeployment{deployed("api", "Synced", "Healthy"), deployed("web", "OutOfSync", "Missing")},
				allDeployed: all(metav1.ConditionFalse, as.ComponentDeploymentConditionErrorOccurred,
					"1 of 2 components deployed; SyncError: component api: one resource refused; component web: namespace kube-system is not permitted"),
			},
		},
		{
			name: "look-alikes (another project, another binding, another tenant's project) are not shown", seb: fine, components: 1,
			apps: []argov1alpha1.Application{lookAlike, otherBinding, otherTenant, app(fine, "web", argov1alpha1.SyncStatusCodeSynced, "Healthy")},
			want: bindingStatus{
				deployed:    []as.BindingStatusGitOpsDeployment{deployed("web", "Synced", "Healthy")},
				allDeployed: all(metav1.ConditionTrue, as.ComponentDeploymentConditionCommitsSynced, "1 of 1 components deployed"),
			},
		},
		{
			name: "refused: ErrorOccurred says why, the Applications are still mirrored, AllComponentsDeployed stays as it was", seb: fine, components: 1,
			refusal: kernel.Refuse(as.BindingReasonGitOpsRepoNotReady, "component web: GitOps repository: bad"),
			apps:    []argov1alpha1.Application{app(fine, "web", argov1alpha1.SyncStatusCodeSynced, "Healthy")},
			want: bindingStatus{
				errorOccurred: &metav1.Condition{Type: as.BindingConditionErrorOccurred, Status: metav1.ConditionTrue, Reason: as.BindingReasonGitOpsRepoNotReady,
					Message: "component web: GitOps repository: bad", ObservedGeneration: 3},
				deployed: []as.BindingStatusGitOpsDeployment{deployed("web", "Synced", "Healthy")},
			},
		},
		{
			name: "failed before, fine now: ErrorOccurred resolved", seb: failed, components: 1,
			apps: []argov1alpha1.Application{app(failed, "web", argov1alpha1.SyncStatusCodeSynced, "Healthy")},
			want: bindingStatus{
				errorOccurred: resolved,
				deployed:      []as.BindingStatusGitOpsDeployment{deployed("web", "Synced", "Healthy")},
				allDeployed:   all(metav1.ConditionTrue, as.ComponentDeploymentConditionCommitsSynced, "1 of 1 components deployed"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, decideStatus(tc.seb, tc.refusal, tc.apps, tenantUID, tc.components))
		})
	}
}
