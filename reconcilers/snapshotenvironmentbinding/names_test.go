//go:build !unit

package snapshotenvironmentbinding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// getParamsPath is where Argo CD's plugin generator sends its requests (its
// protocol, written out: this package does not import the generator's).
const getParamsPath = "/api/v1/getparams.execute"

// generate asks the sidecar's plugin generator for seb's parameters, as Argo
// CD's applicationset-controller does; it returns the HTTP status and, on
// success, the parameters, else the error.
func generate(t *testing.T, seb *as.SnapshotEnvironmentBinding) (int, []argocd.GeneratorParams, string) {
	t.Helper()
	setName := argocd.ApplicationSetName(string(seb.UID))
	// Argo CD asks only for an ApplicationSet that exists, and the generator
	// answers only for ours: wait for the reconciler to have written it.
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: argoNS, Name: setName}, &argov1alpha1.ApplicationSet{}) == nil
	}, wait, tick, "the binding's ApplicationSet %s was never written", setName)
	raw, err := json.Marshal(map[string]any{"applicationSetName": setName, "input": map[string]any{
		"parameters": map[string]any{argocd.GeneratorInputNamespace: seb.Namespace, argocd.GeneratorInputBinding: seb.Name}}})
	require.NoError(t, err)
	httpReq, err := http.NewRequest(http.MethodPost, generatorURL+getParamsPath, bytes.NewReader(raw))
	require.NoError(t, err)
	httpReq.Header.Set("Authorization", "Bearer "+generatorToken)
	resp, err := http.DefaultClient.Do(httpReq)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Output struct {
			Parameters []argocd.GeneratorParams `json:"parameters"`
		} `json:"output"`
		Error string `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out.Output.Parameters, out.Error
}

// adminApplication is an Argo CD Application an admin made: project default,
// none of our labels (or, with labels, a look-alike copying them).
func adminApplication(t *testing.T, name string, labels, annotations map[string]string) *argov1alpha1.Application {
	t.Helper()
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: name, Labels: labels, Annotations: annotations,
		Finalizers: []string{argov1alpha1.ResourcesFinalizerName}},
		Spec: argov1alpha1.ApplicationSpec{Project: "default",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.test/admin.git", Path: "monitoring"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: "monitoring"}}}
	require.NoError(t, k8s.Create(context.Background(), app))
	return app
}

// A binding's readable Application name held by an Application we did not
// make (an admin's, unlabelled, so not in the sidecar's cache; or a look-alike
// with the binding's labels in another project) is never generated: Argo CD
// would take that Application over and delete it with the binding (issue 21).
// The binding's own name is used; with that one held too, nothing is generated
// and the binding says why.
func TestApplicationNamesHeldByOthersAreNotTaken(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		meta func(seb *as.SnapshotEnvironmentBinding) (map[string]string, map[string]string)
	}{
		{"an admin's unlabelled Application", func(*as.SnapshotEnvironmentBinding) (map[string]string, map[string]string) { return nil, nil }},
		{"a look-alike with the binding's labels in project default", func(seb *as.SnapshotEnvironmentBinding) (map[string]string, map[string]string) {
			return ownership.Meta(ownership.KindBinding, seb.Namespace, seb.Name, string(seb.UID))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The binding is named so that its readable name is unique to this
			// test. No Argo CD runs here: nothing takes the name meanwhile.
			seb := bindingNamed(t, "b"+rand.String(6))
			readable := seb.Name + "-shop-dev-web"
			labels, annotations := tc.meta(seb)
			held := adminApplication(t, readable, labels, annotations)

			status, params, msg := generate(t, seb)
			require.Equal(t, http.StatusOK, status, msg)
			require.Len(t, params, 1)
			own := params[0].Name
			assert.NotEqual(t, readable, own, "the name of an Application we did not make was generated")
			assert.True(t, strings.HasPrefix(own, readable+"-"), own)

			// Its own name held too: nothing is generated, the binding says why.
			adminApplication(t, own, nil, nil)
			status, _, msg = generate(t, seb)
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Contains(t, msg, "were not created for this binding")
			require.NoError(t, k8s.Patch(ctx, seb, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"poke":"1"}}}`))))
			got := &as.SnapshotEnvironmentBinding{}
			require.Eventually(t, func() bool {
				if k8s.Get(ctx, client.ObjectKeyFromObject(seb), got) != nil {
					return false
				}
				c := meta.FindStatusCondition(got.Status.BindingConditions, as.BindingConditionErrorOccurred)
				return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, readable) && strings.Contains(c.Message, own)
			}, wait, tick, "the binding does not say its names are held: %+v", got.Status)

			after := &argov1alpha1.Application{}
			require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: readable}, after))
			assert.Equal(t, held.ResourceVersion, after.ResourceVersion, "the held Application was written")
		})
	}
}

// bindingNamed makes a tenant with everything a binding needs, and the
// binding named name.
func bindingNamed(t *testing.T, name string) *as.SnapshotEnvironmentBinding {
	t.Helper()
	ctx := context.Background()
	ns := "tenant-" + rand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	m := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: n} }
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: m("shop"), Spec: as.ApplicationSpec{DisplayName: "Shop"}}))
	comp := &as.Component{ObjectMeta: m("web"), Spec: as.ComponentSpec{ComponentName: "web", Application: "shop", ContainerImage: "quay.io/x/web:0"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: "https://git.example.test/gitops.git", Branch: "main", Context: "components/web/base"}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: m("dev")}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: m("snap"), Spec: as.SnapshotSpec{Application: "shop",
		Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/x/web:1"}}}}))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: m(name),
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap"}}
	require.NoError(t, k8s.Create(ctx, seb))
	return seb
}
