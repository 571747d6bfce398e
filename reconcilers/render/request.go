package render

import (
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-cd/v2/applicationset/utils"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// GeneratedApplication is the Application Argo CD's applicationset-controller
// generates for one component: our ApplicationSet of the binding
// (argocd.ApplicationSet) rendered with the component's parameters by Argo
// CD's own template renderer, its templatePatch applied as Argo CD applies it
// (a strategic merge patch that cannot change the project).
func GeneratedApplication(argoNamespace string, seb *as.SnapshotEnvironmentBinding, p argocd.GeneratorParams) (*argov1alpha1.Application, error) {
	set := argocd.ApplicationSet(argoNamespace, seb)
	tmpl := &argov1alpha1.Application{}
	tmpl.Name = set.Spec.Template.Name
	tmpl.Labels = set.Spec.Template.Labels
	tmpl.Annotations = set.Spec.Template.Annotations
	tmpl.Finalizers = set.Spec.Template.Finalizers
	tmpl.Spec = set.Spec.Template.Spec
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	params := map[string]any{}
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, err
	}
	r := &utils.Render{}
	app, err := r.RenderTemplateParams(tmpl, nil, params, set.Spec.GoTemplate, set.Spec.GoTemplateOptions)
	if err != nil {
		return nil, fmt.Errorf("rendering the Application template: %w", err)
	}
	if set.Spec.TemplatePatch != nil {
		patch, err := r.Replace(*set.Spec.TemplatePatch, params, set.Spec.GoTemplate, set.Spec.GoTemplateOptions)
		if err != nil {
			return nil, fmt.Errorf("rendering the template patch: %w", err)
		}
		if app, err = applyPatch(app, patch); err != nil {
			return nil, err
		}
	}
	app.Namespace = argoNamespace
	return app, nil
}

func applyPatch(app *argov1alpha1.Application, patch string) (*argov1alpha1.Application, error) {
	patchJSON, err := utils.ConvertYAMLToJSON(patch)
	if err != nil {
		return nil, fmt.Errorf("the template patch: %w", err)
	}
	if patchJSON == "null" || patchJSON == "" {
		// An empty patch (no overrides) changes nothing.
		return app, nil
	}
	appJSON, err := json.Marshal(app)
	if err != nil {
		return nil, err
	}
	out, err := strategicpatch.StrategicMergePatch(appJSON, []byte(patchJSON), argov1alpha1.Application{})
	if err != nil {
		return nil, fmt.Errorf("applying the template patch: %w", err)
	}
	patched := &argov1alpha1.Application{}
	if err := json.Unmarshal(out, patched); err != nil {
		return nil, err
	}
	patched.Spec.Project = app.Spec.Project
	return patched, nil
}

// Settings are what Argo CD's settings (argocd-cm) give every manifest
// request and the diff.
type Settings struct {
	AppLabelKey        string
	TrackingMethod     string
	InstallationID     string
	KustomizeOptions   *argov1alpha1.KustomizeOptions
	HelmOptions        *argov1alpha1.HelmOptions
	EnabledSourceTypes map[string]bool
	KubeVersion        string
	APIVersions        []string
}

// ManifestRequest is the request the application controller sends the
// repo-server for app's (single) source: the repository with the project's
// credentials (repo, from Argo CD's database for the project), the project's
// source repositories, the destination namespace, and the settings.
// Helm repositories of the project are not passed: our Applications are
// kustomize and plain directories only.
func ManifestRequest(app *argov1alpha1.Application, repo *argov1alpha1.Repository, proj *argov1alpha1.AppProject, s Settings) *apiclient.ManifestRequest {
	src := app.Spec.GetSource()
	return &apiclient.ManifestRequest{
		Repo:               repo,
		Revision:           src.TargetRevision,
		AppLabelKey:        s.AppLabelKey,
		AppName:            app.InstanceName(app.Namespace),
		Namespace:          app.Spec.Destination.Namespace,
		ApplicationSource:  &src,
		KustomizeOptions:   s.KustomizeOptions,
		KubeVersion:        s.KubeVersion,
		ApiVersions:        s.APIVersions,
		TrackingMethod:     s.TrackingMethod,
		EnabledSourceTypes: s.EnabledSourceTypes,
		HelmOptions:        s.HelmOptions,
		HasMultipleSources: app.Spec.HasMultipleSources(),
		ProjectName:        proj.Name,
		ProjectSourceRepos: proj.Spec.SourceRepos,
		InstallationID:     s.InstallationID,
	}
}
