package binding

import (
	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// GeneratedSuffix ends the name of the binding a PromotionRun creates for an
// (application, Environment) that has none: <app>-<env>-generated-binding.
const GeneratedSuffix = "-generated-binding"

// GeneratedName is the binding a PromotionRun creates for app in env when
// there is none (and the one a PromotionPreview previews then).
func GeneratedName(app, env string) string { return app + "-" + env + GeneratedSuffix }

// Of is the binding that deploys app in env among bindings (one namespace's):
// the oldest one for the pair, or nil. Any other of the pair is a duplicate,
// which the binding reconciler refuses (Duplicate).
func Of(bindings []appstudiov1alpha1.SnapshotEnvironmentBinding, app, env string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	var seb *appstudiov1alpha1.SnapshotEnvironmentBinding
	for i := range bindings {
		b := &bindings[i]
		if b.Spec.Application == app && b.Spec.Environment == env && (seb == nil || kernel.Older(b, seb)) {
			seb = b
		}
	}
	return seb
}

// Duplicate is the binding that deploys seb's pair instead of seb (Of), or
// nil when seb is that one. bindings may lack seb (a cache behind its creation).
func Duplicate(bindings []appstudiov1alpha1.SnapshotEnvironmentBinding, seb *appstudiov1alpha1.SnapshotEnvironmentBinding) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	if o := Of(bindings, seb.Spec.Application, seb.Spec.Environment); o != nil && o.UID != seb.UID && kernel.Older(o, seb) {
		return o
	}
	return nil
}
