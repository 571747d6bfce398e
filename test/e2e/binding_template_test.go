package e2e

import (
	"context"
	"encoding/json"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// TestBindingTemplateKeepsHostileValuesInPlace (issue 21): a configuration
// value must not rewrite the Application Argo CD generates for a binding.
// Env values with YAML line breaks are refused at admission; the values a
// tenant may give (quotes, template delimiters, JSON and YAML syntax) reach
// the Deployment as given; and Argo CD itself, given our ApplicationSet's
// template with an env value carrying NEL, makes the Application we named with
// the labels we wrote (on the old template it made one named by the payload).
func TestBindingTemplateKeepsHostileValuesInPlace(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	pwned := "pwned-" + rand.String(6)
	// A well-formed takeover on the old template: the rest of the patch
	// line lands in an annotation's value.
	nel := "a\u0085metadata:\u0085  name: " + pwned + "\u0085  labels:\u0085    " + ownership.LabelOwnerUID + ": x\u0085  annotations:\u0085    rest: x"

	t.Run("admission refuses line breaks in env", func(t *testing.T) {
		for _, v := range []string{nel, "a\u2028b", "a\u2029b", "a\nb", "a\x00"} {
			err := k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "hostile-"},
				Spec: as.EnvironmentSpec{DisplayName: "x", Configuration: as.EnvironmentConfiguration{Env: []as.EnvVarPair{{Name: "A", Value: v}}}}})
			assert.True(t, apierrors.IsInvalid(err), "Environment env %q: %v", v, err)
			err = k8s.Create(ctx, &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "hostile-"},
				Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap",
					Components: []as.BindingComponent{{Name: "backend", Configuration: as.BindingComponentConfiguration{Env: []as.EnvVarPair{{Name: "A", Value: v}}}}}}})
			assert.True(t, apierrors.IsInvalid(err), "binding env %q: %v", v, err)
		}
	})

	t.Run("admitted values reach the Deployment as given", func(t *testing.T) {
		appWithComponents(t, ns, "overlays/dev")
		tricky := map[string]string{
			"QUOTES":   `a"b'c`,
			"ACTIONS":  "}}{{ .name }}{{",
			"JSON":     `"}]}, {"op": "replace", "path": "/metadata/name", "value": "` + pwned + `"}, {"x": [{"a":"`,
			"YAML":     "- &x *x !!binary | > # % @ : ? , [ ] { }",
			"ESCAPES":  `\\ \n \u0085 \x00`,
			"UNICODE":  "é 日本 🙂",
			"TAB_FREE": "  leading and trailing blanks  ",
		}
		var env []as.EnvVarPair
		for k, v := range tricky {
			env = append(env, as.EnvVarPair{Name: k, Value: v})
		}
		require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}}))
		require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
		seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-dev"},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-1",
				Components: []as.BindingComponent{{Name: "backend", Configuration: as.BindingComponentConfiguration{Replicas: ptr.To(2), Env: env}}}}}
		require.NoError(t, k8s.Create(ctx, seb))
		require.Eventually(t, func() bool {
			be, err := deployment(ns, "backend")
			return err == nil && be.Spec.Template.Spec.Containers[0].Image == "quay.io/example/backend:v1" && len(envOf(be)) == len(tricky)
		}, deployWait, poll, "the binding's backend was not deployed with its env")
		be, _ := deployment(ns, "backend")
		assert.Equal(t, tricky, envOf(be))
		assert.Equal(t, int32(2), *be.Spec.Replicas)
		assertNoApplicationNamed(t, pwned)
	})

	t.Run("Argo CD renders NEL in the template as a value", func(t *testing.T) {
		repo, _ := gitRepo(t, componentFiles("backend"))
		env, err := json.Marshal([]as.EnvVarPair{{Name: "LOG", Value: nel}})
		require.NoError(t, err)
		p := argocd.GeneratorParams{Name: "hostile-" + rand.String(6), Namespace: ns, Binding: "b", Application: "appa", Environment: "dev",
			Snapshot: "s", Component: "backend", RepoURL: repo.URL, Path: "components/backend/base", TargetRevision: "main",
			DestinationServer: argocd.LocalServer, DestinationNamespace: ns, Project: "default", Image: "quay.io/example/backend:v1",
			ImageName: "quay.io/example/backend", Replicas: "2", Env: string(env)}
		element, err := json.Marshal(p)
		require.NoError(t, err)
		// Our template and patch, fed by a list generator (the plugin serves
		// no such value) and without our labels (the sidecar leaves it alone).
		set := argocd.ApplicationSet(argo.Namespace, &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b", UID: "e2e-template"}})
		set.Name, set.Labels, set.Annotations = "e2e-template-"+rand.String(6), nil, nil
		for k := range set.Spec.Template.Labels {
			if _, ours := ownershipLabels[k]; ours {
				delete(set.Spec.Template.Labels, k)
			}
		}
		set.Spec.Template.Annotations, set.Spec.Template.Finalizers, set.Spec.Template.Spec.SyncPolicy = nil, nil, nil
		set.Spec.SyncPolicy = &argov1alpha1.ApplicationSetSyncPolicy{PreserveResourcesOnDeletion: true}
		set.Spec.Generators = []argov1alpha1.ApplicationSetGenerator{{List: &argov1alpha1.ListGenerator{Elements: []apiextensionsv1.JSON{{Raw: element}}}}}
		require.NoError(t, k8s.Create(ctx, set))
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), set) })

		app := &argov1alpha1.Application{}
		named := func(name string) bool {
			return k8s.Get(ctx, client.ObjectKey{Namespace: argo.Namespace, Name: name}, app) == nil
		}
		// Whichever name Argo CD gives it (on the old template: the payload's).
		require.Eventually(t, func() bool { return named(p.Name) || named(pwned) }, deployWait, poll, "Argo CD made no Application")
		assertNoApplicationNamed(t, pwned)
		require.True(t, named(p.Name), "no Application %s", p.Name)
		assert.Equal(t, map[string]string{as.LabelApplication: "appa", as.LabelComponent: "backend", as.LabelEnvironment: "dev"}, app.Labels)
		require.NotNil(t, app.Spec.Source.Kustomize)
		k := app.Spec.Source.Kustomize
		assert.Equal(t, argov1alpha1.KustomizeImages{"quay.io/example/backend=quay.io/example/backend:v1"}, k.Images)
		require.Len(t, k.Replicas, 1)
		assert.Equal(t, "backend", k.Replicas[0].Name)
		assert.Equal(t, "2", k.Replicas[0].Count.String())
		require.Len(t, k.Patches, 1)
		var ops []struct {
			Op, Path string
			Value    []as.EnvVarPair
		}
		require.NoError(t, json.Unmarshal([]byte(k.Patches[0].Patch), &ops), "patch: %q", k.Patches[0].Patch)
		require.Len(t, ops, 1)
		assert.Equal(t, []as.EnvVarPair{{Name: "LOG", Value: nel}}, ops[0].Value, "the env value, NEL and all, is one value")
		assert.Equal(t, "/spec/template/spec/containers/0/env", ops[0].Path)
	})
}

var ownershipLabels = map[string]bool{ownership.LabelManagedBy: true, ownership.LabelTenantNS: true, ownership.LabelOwnerKind: true, ownership.LabelOwnerUID: true}

func assertNoApplicationNamed(t *testing.T, name string) {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: argo.Namespace, Name: name}, &argov1alpha1.Application{})
	assert.True(t, apierrors.IsNotFound(err), "an Application named by the payload: %v", err)
}
