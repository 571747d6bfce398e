package argocd

import (
	"encoding/json"
	"testing"

	"github.com/argoproj/argo-cd/v2/applicationset/utils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// renderSet renders the ApplicationSet's template and template patch the way
// Argo CD does (Go template, missingkey=error) from one parameter set.
func renderSet(params map[string]any) error {
	set := ApplicationSet("argocd", &appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "appa-dev", UID: "seb-uid-1"},
	})
	tmpl, err := yaml.Marshal(set.Spec.Template)
	if err != nil {
		return err
	}
	// Argo CD's own renderer: Go templates with its sprig functions.
	r := &utils.Render{}
	for _, text := range []string{string(tmpl), *set.Spec.TemplatePatch} {
		if _, err := r.Replace(text, params, set.Spec.GoTemplate, set.Spec.GoTemplateOptions); err != nil {
			return err
		}
	}
	return nil
}

func paramsMap(t *testing.T, p GeneratorParams) map[string]any {
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// TestGeneratorContract: every key the ApplicationSet's template reads, in
// each of its branches, is one GeneratorParams produces.
func TestGeneratorContract(t *testing.T) {
	plain := GeneratorParams{Name: "n", Namespace: "jane", Binding: "b", Application: "a", Environment: "e", Snapshot: "s",
		Component: "c", RepoURL: "https://git.example.com/r.git", Path: "p", TargetRevision: "main",
		DestinationServer: LocalServer, DestinationNamespace: "jane", Project: "proj", Image: "i:1", ImageName: "i", Env: "[]"}
	overrides := plain
	overrides.Replicas, overrides.Env = "2", `[{"name":"A","value":"1"}]`
	for name, p := range map[string]GeneratorParams{"no overrides": plain, "overrides": overrides} {
		t.Run(name, func(t *testing.T) {
			m := paramsMap(t, p)
			require.NoError(t, renderSet(m))
			// The check can fail: without any key the template reads, rendering does.
			for key := range m {
				without := paramsMap(t, p)
				delete(without, key)
				assert.Equal(t, templateReads(key), renderSet(without) != nil, "does the template read %q?", key)
			}
		})
	}
	assert.Error(t, renderSet(map[string]any{}), "an empty parameter set must not render")
}

// templateReads lists the keys of GeneratorParams that the template need
// not read: the generator answers them for people reading Argo CD's view of
// the ApplicationSet, and the binding reconciler reads them back.
func templateReads(key string) bool {
	switch key {
	case "namespace", "binding", "snapshot":
		return false
	}
	return true
}
