// Package binding is a SnapshotEnvironmentBinding's domain: the inputs it is
// resolved from, the parameters of each of its components and which plugin
// requests get them (Generate, Answer). The plugin generator (an HTTP adapter)
// serves them to Argo CD and the binding reconciler checks them before it
// writes the ApplicationSet.
package binding

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Inputs is everything one binding's parameters are computed from,
// already read (and checked to be in the binding's namespace) by the caller.
type Inputs struct {
	Binding     *appstudiov1alpha1.SnapshotEnvironmentBinding
	Snapshot    *appstudiov1alpha1.Snapshot
	Environment *appstudiov1alpha1.Environment
	// Components of the binding's namespace, by name.
	Components map[string]*appstudiov1alpha1.Component
	// DestinationServer and DestinationNamespace are where the Environment deploys.
	DestinationServer    string
	DestinationNamespace string
	// Project is the tenant's AppProject.
	Project string
	// Holders says who has an Application of the names the components'
	// Applications may take (absent: nobody).
	Holders map[string]Holder
}

// maxAppName keeps generated Application names usable as Argo CD's tracking
// label value (63 characters).
const maxAppName = 63

// Params returns one parameter set per component of the Snapshot, sorted by
// component name. A problem with the user's objects is a *kernel.Refusal
// whose reason is a bindingConditions reason.
func Params(in Inputs) ([]argocd.GeneratorParams, error) {
	seb, snap := in.Binding, in.Snapshot
	if snap.Spec.Application != seb.Spec.Application {
		return nil, Refuse(ReasonSnapshotOfAnotherApplication,
			"Snapshot %q is of Application %q, not of the binding's Application %q", snap.Name, snap.Spec.Application, seb.Spec.Application)
	}
	config := map[string]appstudiov1alpha1.BindingComponentConfiguration{}
	for _, c := range seb.Spec.Components {
		if _, dup := config[c.Name]; dup {
			return nil, kernel.Refuse(appstudiov1alpha1.BindingReasonDuplicateComponents,
				"component %q is listed twice in spec.components", c.Name)
		}
		config[c.Name] = c.Configuration
	}
	if err := checkEnv(fmt.Sprintf("Environment %q", in.Environment.Name), in.Environment.Spec.Configuration.Env); err != nil {
		return nil, err
	}
	for _, c := range seb.Spec.Components {
		if err := checkEnv(fmt.Sprintf("spec.components %q", c.Name), c.Configuration.Env); err != nil {
			return nil, err
		}
	}
	repos := map[string]appstudiov1alpha1.BindingComponentGitOpsRepository{}
	for _, c := range seb.Status.Components {
		repos[c.Name] = c.GitOpsRepository
	}
	comps := append([]appstudiov1alpha1.SnapshotComponent(nil), snap.Spec.Components...)
	sort.Slice(comps, func(i, j int) bool { return comps[i].Name < comps[j].Name })
	out := make([]argocd.GeneratorParams, 0, len(comps))
	for _, sc := range comps {
		comp := in.Components[sc.Name]
		repo, ok := repos[sc.Name]
		if !ok && comp != nil && comp.Status.GitOps.RepositoryURL != "" {
			repo = appstudiov1alpha1.BindingComponentGitOpsRepository{
				URL: comp.Status.GitOps.RepositoryURL, Branch: comp.Status.GitOps.Branch, Path: comp.Status.GitOps.Context,
			}
			ok = true
		}
		if !ok || repo.URL == "" {
			return nil, kernel.Refuse(appstudiov1alpha1.BindingReasonWaitingForComponentStatus,
				"component %q has no GitOps repository yet (neither the binding's status.components nor the Component's status.gitops)", sc.Name)
		}
		cfg := config[sc.Name]
		replicas := ""
		if cfg.Replicas != nil {
			replicas = strconv.Itoa(*cfg.Replicas)
		}
		env, err := json.Marshal(mergeEnv(in.Environment.Spec.Configuration.Env, cfg.Env))
		if err != nil {
			return nil, err
		}
		imageName := imageRepository(sc.ContainerImage)
		if comp != nil && comp.Spec.ContainerImage != "" {
			imageName = imageRepository(comp.Spec.ContainerImage)
		}
		readable, own := appNames(seb, sc.Name)
		out = append(out, argocd.GeneratorParams{
			Name:                 pickName(readable, own, in.Holders),
			Namespace:            seb.Namespace,
			Binding:              seb.Name,
			Application:          seb.Spec.Application,
			Environment:          seb.Spec.Environment,
			Snapshot:             snap.Name,
			Component:            sc.Name,
			RepoURL:              repo.URL,
			Path:                 repo.Path,
			TargetRevision:       repo.Branch,
			DestinationServer:    in.DestinationServer,
			DestinationNamespace: in.DestinationNamespace,
			Project:              in.Project,
			Image:                sc.ContainerImage,
			ImageName:            imageName,
			Replicas:             replicas,
			Env:                  string(env),
		})
	}
	return out, nil
}

// mergeEnv returns the Environment's variables overridden, by name, by the
// binding's per-component ones, sorted by name.
func mergeEnv(envWide, component []appstudiov1alpha1.EnvVarPair) []appstudiov1alpha1.EnvVarPair {
	byName := map[string]string{}
	for _, e := range envWide {
		byName[e.Name] = e.Value
	}
	for _, e := range component {
		byName[e.Name] = e.Value
	}
	out := make([]appstudiov1alpha1.EnvVarPair, 0, len(byName))
	for n, v := range byName {
		out = append(out, appstudiov1alpha1.EnvVarPair{Name: n, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// imageRepository strips the tag or digest of an image reference.
func imageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}
