package tenant

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Argo CD's status writes bump an Application's generation (no status
// subresource) but change nothing a tenant's project depends on.
func TestApplicationUpdatesThatConcernTheTenant(t *testing.T) {
	base := &argov1alpha1.Application{}
	base.Generation = 1
	base.Labels = map[string]string{"managed-by": "gitops-service"}
	base.Spec.Project = "p"
	base.Spec.Source = &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/a.git"}
	p := specOrLabelsChanged()
	changed := func(mut func(a *argov1alpha1.Application)) bool {
		a := base.DeepCopy()
		mut(a)
		return p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: a})
	}
	assert.False(t, changed(func(a *argov1alpha1.Application) {
		a.Generation = 2
		a.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
		a.Status.Health.Status = "Healthy"
		a.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "abc"}}
	}), "status and operation only")
	assert.True(t, changed(func(a *argov1alpha1.Application) {
		a.Generation = 2
		a.Spec.Source.RepoURL = "https://git.example.com/b.git"
	}), "repository")
	assert.True(t, changed(func(a *argov1alpha1.Application) { a.Spec.Project = "q" }), "project")
	assert.True(t, changed(func(a *argov1alpha1.Application) { a.Labels = nil }), "labels")
	assert.False(t, p.Create(event.CreateEvent{Object: base}), "creates")
}
