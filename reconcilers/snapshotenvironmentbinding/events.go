package snapshotenvironmentbinding

import (
	"maps"
	"reflect"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// applicationChanged says whether an Application's update changes anything a
// binding's pass reads of it: its metadata (our labels, annotations,
// finalizers, deletion), its spec (the project, what was generated) or what
// the binding's status mirrors (sync and health status, revision, Argo CD's
// sync error). Argo CD rewrites the rest of the status on every comparison
// of every Application (reconciledAt, resources, summary), and each of those
// writes reran the binding's whole pass (issue 38: bindings at N=1,000).
func applicationChanged(old, cur *argov1alpha1.Application) bool {
	return !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
		!equality.Semantic.DeepEqual(old.Finalizers, cur.Finalizers) ||
		!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		// reflect: the destination has an unexported field; a nil taken
		// for an empty list only costs a pass.
		!reflect.DeepEqual(old.Spec, cur.Spec) ||
		old.Status.Sync.Status != cur.Status.Sync.Status || old.Status.Health.Status != cur.Status.Health.Status ||
		old.Status.Sync.Revision != cur.Status.Sync.Revision ||
		argocd.SyncError(old) != argocd.SyncError(cur)
}

// applicationUpdates lets through the Application updates applicationChanged
// says a binding must see (creates and deletes all pass).
func applicationUpdates() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*argov1alpha1.Application)
		cur, ok2 := e.ObjectNew.(*argov1alpha1.Application)
		return !ok1 || !ok2 || applicationChanged(old, cur)
	}}
}

// notOwnStatusWrites lets through every binding event but the updates our own
// status writes made (statusWrites; a few per binding while Argo CD syncs its
// Applications): they change nothing to do, and each reran the whole pass.
// Anyone else's write, a status edit included, is looked at (and the status
// put back), as the GitOpsDeployment reconciler does.
func (r *Reconciler) notOwnStatusWrites() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() && !r.statusWrites.Wrote(e.ObjectNew)
	}}
}
