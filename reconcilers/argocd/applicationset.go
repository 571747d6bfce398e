package argocd

import (
	"encoding/json"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Names tying the ApplicationSets to our plugin generator.
const (
	// GeneratorConfigMap is the ConfigMap (Argo CD namespace) that tells Argo CD
	// where our plugin generator listens and which Secret holds its token.
	GeneratorConfigMap = "gitops-service-generator"
	// ApplicationSetNamePrefix + the binding's UID names its ApplicationSet.
	ApplicationSetNamePrefix = "seb-"
	// generatorRequeueSeconds is a safety net only: the sidecar asks for a refresh
	// whenever an input changes.
	generatorRequeueSeconds = 1800
)

// GeneratorParams is one parameter set our plugin generator returns, one per
// component of a binding: the template of ApplicationSet reads these keys
// (missingkey=error), reconcilers/binding fills them and the binding
// reconciler reads them back. Every value is a string. The fields stand in
// the order of their keys, so their JSON is that of a map of the same keys.
type GeneratorParams struct {
	Application          string `json:"application"`
	Binding              string `json:"binding"`
	Component            string `json:"component"`
	DestinationNamespace string `json:"destinationNamespace"`
	DestinationServer    string `json:"destinationServer"`
	// Env is the component's env, a JSON list of {name, value}, "[]" for none.
	Env         string `json:"env"`
	Environment string `json:"environment"`
	// Image is the Snapshot's image; ImageName the name the manifests use.
	Image     string `json:"image"`
	ImageName string `json:"imageName"`
	// Name is the generated Application's.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Path      string `json:"path"`
	Project   string `json:"project"`
	// Replicas is a number, or "" to leave the manifests' count.
	Replicas       string `json:"replicas"`
	RepoURL        string `json:"repoURL"`
	Snapshot       string `json:"snapshot"`
	TargetRevision string `json:"targetRevision"`
}

// The plugin generator's input: which binding an ApplicationSet is for.
const (
	GeneratorInputNamespace = "namespace"
	GeneratorInputBinding   = "binding"
)

// ApplicationSetName is the ApplicationSet of a binding.
func ApplicationSetName(bindingUID string) string { return ApplicationSetNamePrefix + bindingUID }

// ApplicationSet translates a SnapshotEnvironmentBinding into the ApplicationSet
// that deploys its components: one Application per parameter set our plugin
// generator returns, with the Snapshot's image, the replicas and the env applied
// as kustomize overrides.
func ApplicationSet(argoNamespace string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding) *argov1alpha1.ApplicationSet {
	labels, annotations := ownership.Meta(ownership.KindBinding, seb.Namespace, seb.Name, string(seb.UID))
	appLabels := map[string]string{
		appstudiov1alpha1.LabelApplication: "{{.application}}",
		appstudiov1alpha1.LabelComponent:   "{{.component}}",
		appstudiov1alpha1.LabelEnvironment: "{{.environment}}",
	}
	for k, v := range labels {
		appLabels[k] = v
	}
	input := argov1alpha1.PluginParameters{
		GeneratorInputNamespace: jsonString(seb.Namespace),
		GeneratorInputBinding:   jsonString(seb.Name),
	}
	return &argov1alpha1.ApplicationSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ApplicationSetName(string(seb.UID)),
			Namespace:   argoNamespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: argov1alpha1.ApplicationSetSpec{
			GoTemplate:        true,
			GoTemplateOptions: []string{"missingkey=error"},
			Generators: []argov1alpha1.ApplicationSetGenerator{{Plugin: &argov1alpha1.PluginGenerator{
				ConfigMapRef:        argov1alpha1.PluginConfigMapRef{Name: GeneratorConfigMap},
				Input:               argov1alpha1.PluginInput{Parameters: input},
				RequeueAfterSeconds: ptr.To[int64](generatorRequeueSeconds),
			}}},
			Template: argov1alpha1.ApplicationSetTemplate{
				ApplicationSetTemplateMeta: argov1alpha1.ApplicationSetTemplateMeta{
					Name:        "{{.name}}",
					Labels:      appLabels,
					Annotations: annotations,
					// Deleting the binding deletes what it deployed.
					Finalizers: []string{argov1alpha1.ResourcesFinalizerName},
				},
				Spec: argov1alpha1.ApplicationSpec{
					Project: "{{.project}}",
					Source: &argov1alpha1.ApplicationSource{
						RepoURL:        "{{.repoURL}}",
						Path:           "{{.path}}",
						TargetRevision: "{{.targetRevision}}",
						Kustomize:      &argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{"{{.imageName}}={{.image}}"}},
					},
					Destination: argov1alpha1.ApplicationDestination{Server: "{{.destinationServer}}", Namespace: "{{.destinationNamespace}}"},
					SyncPolicy:  syncPolicy(true, nil),
				},
			},
			TemplatePatch: ptr.To(componentOverrides),
		},
	}
}

// componentOverrides adds the optional per-component overrides: replicas, and
// the env (a JSON list) of the component's Deployment, named like the
// component. Nothing at all is emitted without overrides, so the template's
// kustomize images stay untouched. Argo CD parses the rendered patch as YAML,
// so no value is pasted as it is: strings go in as quoted scalars (sprig's
// quote escapes every character that is not printable, NEL and the line
// separators among them) and the count as a number.
const componentOverrides = `{{- if or .replicas (ne .env "[]") }}
spec:
  source:
    kustomize:
{{- if .replicas }}
      replicas:
      - name: {{ .component | quote }}
        count: {{ .replicas | atoi }}
{{- end }}
{{- if ne .env "[]" }}
      patches:
      - target:
          kind: Deployment
          name: {{ .component | quote }}
        patch: {{ printf "[{\"op\": \"add\", \"path\": \"/spec/template/spec/containers/0/env\", \"value\": %s}]" .env | quote }}
{{- end }}
{{- end }}
`

func jsonString(s string) apiextensionsv1.JSON {
	raw, _ := json.Marshal(s)
	return apiextensionsv1.JSON{Raw: raw}
}
