package snapshotenvironmentbinding

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// A binding's pass runs again for what it reads of its Applications, not
// for Argo CD's rewrites of the rest of their status.
func TestApplicationChanged(t *testing.T) {
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "shop-dev", UID: "seb-uid"}}
	base := app(seb, "web", argov1alpha1.SyncStatusCodeOutOfSync, "Progressing")
	cases := map[string]struct {
		change func(a *argov1alpha1.Application)
		want   bool
	}{
		"nothing": {func(*argov1alpha1.Application) {}, false},
		"reconciledAt, resources, summary, comparedTo": {func(a *argov1alpha1.Application) {
			now := metav1.NewTime(time.Unix(1700000000, 0))
			a.Status.ReconciledAt = &now
			a.Status.Resources = []argov1alpha1.ResourceStatus{{Kind: "Deployment", Name: "web"}}
			a.Status.Summary.Images = []string{"quay.io/web:2"}
			a.Status.Sync.ComparedTo.Source.Path = "web"
		}, false},
		"an operation running": {func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Phase: synccommon.OperationRunning}
		}, false},
		"sync status":     {func(a *argov1alpha1.Application) { a.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced }, true},
		"health":          {func(a *argov1alpha1.Application) { a.Status.Health.Status = "Healthy" }, true},
		"revision":        {func(a *argov1alpha1.Application) { a.Status.Sync.Revision = "rev-2" }, true},
		"sync error":      {func(a *argov1alpha1.Application) { *a = withSyncError(*a, "denied") }, true},
		"refused by sync": {func(a *argov1alpha1.Application) { a.Status.OperationState = failedSync("forbidden") }, true},
		"a label":         {func(a *argov1alpha1.Application) { a.Labels["x"] = "y" }, true},
		"an annotation":   {func(a *argov1alpha1.Application) { a.Annotations["x"] = "y" }, true},
		"finalizers":      {func(a *argov1alpha1.Application) { a.Finalizers = []string{"f"} }, true},
		"deletion": {func(a *argov1alpha1.Application) {
			now := metav1.Now()
			a.DeletionTimestamp = &now
		}, true},
		"spec": {func(a *argov1alpha1.Application) { a.Spec.Project = "default" }, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cur := base.DeepCopy()
			c.change(cur)
			if got := applicationChanged(&base, cur); got != c.want {
				t.Errorf("applicationChanged = %v, want %v", got, c.want)
			}
			if got := applicationUpdates().Update(event.UpdateEvent{ObjectOld: &base, ObjectNew: cur}); got != c.want {
				t.Errorf("the predicate lets it through: %v, want %v", got, c.want)
			}
		})
	}
	if !applicationUpdates().Create(event.CreateEvent{Object: &base}) || !applicationUpdates().Delete(event.DeleteEvent{Object: &base}) {
		t.Error("creates and deletes must pass")
	}
}

// failedSync is an operation in which Argo CD refused a resource.
func failedSync(msg string) *argov1alpha1.OperationState {
	return &argov1alpha1.OperationState{Phase: synccommon.OperationFailed, SyncResult: &argov1alpha1.SyncOperationResult{
		Resources: argov1alpha1.ResourceResults{{Kind: "Deployment", Name: "web", Status: synccommon.ResultCodeSyncFailed, Message: msg}}}}
}
