package argocd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/applicationset/utils"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// renderApplication makes the Application Argo CD's applicationset-controller
// makes of set and one parameter set, with Argo CD's own rendering code: the
// template string by string, then the rendered templatePatch converted from
// YAML and merged the way its applyTemplatePatch does. It returns the
// Application and the rendered patch as parsed.
func renderApplication(set *argov1alpha1.ApplicationSet, params map[string]any) (*argov1alpha1.Application, map[string]any, error) {
	r := &utils.Render{}
	tmpl := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{
		Name: set.Spec.Template.Name, Namespace: set.Spec.Template.Namespace, Labels: set.Spec.Template.Labels,
		Annotations: set.Spec.Template.Annotations, Finalizers: set.Spec.Template.Finalizers,
	}, Spec: set.Spec.Template.Spec}
	app, err := r.RenderTemplateParams(tmpl, set.Spec.SyncPolicy, params, set.Spec.GoTemplate, set.Spec.GoTemplateOptions)
	if err != nil {
		return nil, nil, err
	}
	rendered, err := r.Replace(*set.Spec.TemplatePatch, params, set.Spec.GoTemplate, set.Spec.GoTemplateOptions)
	if err != nil {
		return nil, nil, err
	}
	patch, err := utils.ConvertYAMLToJSON(rendered)
	if err != nil {
		return nil, nil, err
	}
	var parsed map[string]any
	if err := json.Unmarshal([]byte(patch), &parsed); err != nil {
		return nil, nil, err
	}
	appJSON, err := json.Marshal(app)
	if err != nil {
		return nil, nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(appJSON, []byte(patch), argov1alpha1.Application{})
	if err != nil {
		return nil, nil, err
	}
	final := &argov1alpha1.Application{}
	return final, parsed, json.Unmarshal(merged, final)
}

// hostile are strings a tenant may try in any value that reaches the
// ApplicationSet's template or patch: YAML line breaks (NEL and the Unicode
// separators among them), quotes, template delimiters, escapes, indicators.
var hostile = map[string]string{
	"NEL":            "a\u0085metadata:\u0085  name: pwned\u0085  labels:\u0085    x: y",
	"LS":             "a\u2028metadata:\u2028  name: pwned",
	"PS":             "a\u2029spec:\u2029  project: default",
	"LF":             "a\nmetadata:\n  name: pwned",
	"CR":             "a\rmetadata:\r  name: pwned",
	"CRLF and tab":   "a\r\n\tname: pwned",
	"double quote":   `a" , "name": "pwned`,
	"single quote":   `a' name: 'pwned`,
	"close action":   "a}} {{ .name }}",
	"open action":    "{{ .project }}{{",
	"backslashes":    `a\\" \u0085 \n \x00 \`,
	"yaml indicator": "- &x *x !!binary | > # % @ ` : ? , [ ] { }",
	"json break":     `"}]}, {"op": "replace", "path": "/metadata/name", "value": "pwned"}, {"x": [{"a":"`,
	"C0 and DEL":     "a\x00\x01\x1b[31m\x7f",
	"C1 and BOM":     "a\u0080\u009f\ufeff\u00a0",
	"very long":      strings.Repeat("ab\u0085c: d\n", 20000),
	"plain":          "backend",
}

// TestTemplatePatchKeepsItsShape: whatever the values, the Application Argo
// CD makes of our ApplicationSet has only the keys we wrote, each with the
// value given (fails when a value is pasted into the YAML of the patch).
func TestTemplatePatchKeepsItsShape(t *testing.T) {
	seb := &appstudiov1alpha1.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "appa-dev", UID: "seb-uid-1"}}
	set := ApplicationSet("argocd", seb)
	for name, v := range hostile {
		t.Run(name, func(t *testing.T) {
			env := []appstudiov1alpha1.EnvVarPair{{Name: "N" + v, Value: "v" + v}, {Name: "LOG", Value: v}}
			envJSON, err := json.Marshal(env)
			require.NoError(t, err)
			p := GeneratorParams{Name: "name" + v, Namespace: "ns" + v, Binding: "binding" + v, Application: "app" + v,
				Environment: "environment" + v, Snapshot: "snapshot" + v, Component: "component" + v, RepoURL: "repo" + v,
				Path: "path" + v, TargetRevision: "rev" + v, DestinationServer: "server" + v, DestinationNamespace: "dns" + v,
				Project: "project" + v, Image: "image" + v, ImageName: "imageName" + v, Replicas: "3", Env: string(envJSON)}
			app, patch, err := renderApplication(set, paramsMap(t, p))
			require.NoError(t, err)

			wantPatch := `[{"op": "add", "path": "/spec/template/spec/containers/0/env", "value": ` + p.Env + `}]`
			assert.Equal(t, map[string]any{"spec": map[string]any{"source": map[string]any{"kustomize": map[string]any{
				"replicas": []any{map[string]any{"name": p.Component, "count": float64(3)}},
				"patches": []any{map[string]any{
					"target": map[string]any{"kind": "Deployment", "name": p.Component},
					"patch":  wantPatch,
				}},
			}}}}, patch, "the rendered patch has only our keys")
			var ops []struct {
				Op, Path string
				Value    []appstudiov1alpha1.EnvVarPair
			}
			require.NoError(t, json.Unmarshal([]byte(patch["spec"].(map[string]any)["source"].(map[string]any)["kustomize"].(map[string]any)["patches"].([]any)[0].(map[string]any)["patch"].(string)), &ops))
			require.Len(t, ops, 1)
			assert.Equal(t, env, ops[0].Value, "kustomize gets the env as given")

			wantLabels := map[string]string{}
			for k, l := range set.Spec.Template.Labels {
				wantLabels[k] = l
			}
			wantLabels[appstudiov1alpha1.LabelApplication] = p.Application
			wantLabels[appstudiov1alpha1.LabelComponent] = p.Component
			wantLabels[appstudiov1alpha1.LabelEnvironment] = p.Environment
			assert.Equal(t, metav1.ObjectMeta{Name: p.Name, Labels: wantLabels, Annotations: set.Spec.Template.Annotations,
				Finalizers: []string{argov1alpha1.ResourcesFinalizerName}}, app.ObjectMeta)
			assert.Equal(t, argov1alpha1.ApplicationSpec{
				Project: p.Project,
				Source: &argov1alpha1.ApplicationSource{RepoURL: p.RepoURL, Path: p.Path, TargetRevision: p.TargetRevision,
					Kustomize: &argov1alpha1.ApplicationSourceKustomize{
						Images:   argov1alpha1.KustomizeImages{argov1alpha1.KustomizeImage(p.ImageName + "=" + p.Image)},
						Replicas: argov1alpha1.KustomizeReplicas{{Name: p.Component, Count: intstr.FromInt32(3)}},
						Patches: argov1alpha1.KustomizePatches{{Patch: wantPatch,
							Target: &argov1alpha1.KustomizeSelector{KustomizeResId: argov1alpha1.KustomizeResId{KustomizeGvk: argov1alpha1.KustomizeGvk{Kind: "Deployment"}, Name: p.Component}}}},
					}},
				Destination: argov1alpha1.ApplicationDestination{Server: p.DestinationServer, Namespace: p.DestinationNamespace},
				SyncPolicy:  set.Spec.Template.Spec.SyncPolicy,
			}, app.Spec)
		})
	}
}

// TestTemplatePatchCount: the count goes in as a number whatever the
// replicas value (the generator only serves digits: binding.Check).
func TestTemplatePatchCount(t *testing.T) {
	set := ApplicationSet("argocd", &appstudiov1alpha1.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "b", UID: "u"}})
	p := GeneratorParams{Name: "n", Component: "c", Env: "[]", Image: "i", ImageName: "i"}
	for replicas, want := range map[string]any{"2": float64(2), "0x10": float64(0), "1\u0085metadata:\u0085  name: pwned": float64(0), "1\n  x: y": float64(0)} {
		t.Run(fmt.Sprintf("%q", replicas), func(t *testing.T) {
			p.Replicas = replicas
			app, patch, err := renderApplication(set, paramsMap(t, p))
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"spec": map[string]any{"source": map[string]any{"kustomize": map[string]any{
				"replicas": []any{map[string]any{"name": "c", "count": want}},
			}}}}, patch)
			assert.Equal(t, "n", app.Name)
		})
	}
	p.Replicas = ""
	app, patch, err := renderApplication(set, paramsMap(t, p))
	require.NoError(t, err)
	assert.Nil(t, patch, "no overrides, no patch")
	assert.Nil(t, app.Spec.Source.Kustomize.Replicas)
	assert.Nil(t, app.Spec.Source.Kustomize.Patches)
}
