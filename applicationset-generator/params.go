package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// BindingInputs is everything one binding's parameters are computed from,
// already read (and checked to be in the binding's namespace) by the caller.
type BindingInputs struct {
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
}

// InputError is a problem with the user's objects; its Reason is the SEB
// bindingConditions reason.
type InputError struct {
	Reason  string
	Message string
}

func (e *InputError) Error() string { return e.Message }

// maxAppName keeps generated Application names usable as Argo CD's tracking
// label value (63 characters).
const maxAppName = 63

// ComponentParams returns one parameter set per component of the Snapshot,
// sorted by component name. Every value is a string, ready for the
// ApplicationSet template.
func ComponentParams(in BindingInputs) ([]map[string]any, error) {
	seb, snap := in.Binding, in.Snapshot
	if snap.Spec.Application != seb.Spec.Application {
		return nil, &InputError{Reason: appstudiov1alpha1.BindingReasonErrorOccurred,
			Message: fmt.Sprintf("Snapshot %q is of Application %q, not of the binding's Application %q", snap.Name, snap.Spec.Application, seb.Spec.Application)}
	}
	config := map[string]appstudiov1alpha1.BindingComponentConfiguration{}
	for _, c := range seb.Spec.Components {
		if _, dup := config[c.Name]; dup {
			return nil, &InputError{Reason: appstudiov1alpha1.BindingReasonDuplicateComponents,
				Message: fmt.Sprintf("component %q is listed twice in spec.components", c.Name)}
		}
		config[c.Name] = c.Configuration
	}
	repos := map[string]appstudiov1alpha1.BindingComponentGitOpsRepository{}
	for _, c := range seb.Status.Components {
		repos[c.Name] = c.GitOpsRepository
	}
	comps := append([]appstudiov1alpha1.SnapshotComponent(nil), snap.Spec.Components...)
	sort.Slice(comps, func(i, j int) bool { return comps[i].Name < comps[j].Name })
	out := make([]map[string]any, 0, len(comps))
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
			return nil, &InputError{Reason: appstudiov1alpha1.BindingReasonWaitingForComponentStatus,
				Message: fmt.Sprintf("component %q has no GitOps repository yet (neither the binding's status.components nor the Component's status.gitops)", sc.Name)}
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
		out = append(out, map[string]any{
			"name":                 appName(seb.Name, seb.Spec.Application, seb.Spec.Environment, sc.Name),
			"namespace":            seb.Namespace,
			"binding":              seb.Name,
			"application":          seb.Spec.Application,
			"environment":          seb.Spec.Environment,
			"snapshot":             snap.Name,
			"component":            sc.Name,
			"repoURL":              repo.URL,
			"path":                 repo.Path,
			"targetRevision":       repo.Branch,
			"destinationServer":    in.DestinationServer,
			"destinationNamespace": in.DestinationNamespace,
			"project":              in.Project,
			"image":                sc.ContainerImage,
			"imageName":            imageName,
			"replicas":             replicas,
			"env":                  string(env),
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

// appName is the original service's child name, <binding>-<app>-<env>-<component>,
// cut and suffixed with a hash when too long.
func appName(binding, app, env, component string) string {
	name := strings.Join([]string{binding, app, env, component}, "-")
	if len(name) <= maxAppName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:10]
	return strings.TrimRight(name[:maxAppName-len(suffix)-1], "-.") + "-" + suffix
}
