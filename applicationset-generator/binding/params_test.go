package binding

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func inputs() Inputs {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "jane", Name: name} }
	return Inputs{
		Binding: &as.SnapshotEnvironmentBinding{
			ObjectMeta: meta("appa-dev-binding"),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-2",
				Components: []as.BindingComponent{{Name: "backend", Configuration: as.BindingComponentConfiguration{
					Replicas: ptr.To(3), Env: []as.EnvVarPair{{Name: "LOG", Value: "debug"}, {Name: "ONLY_BACKEND", Value: "1"}}}}}},
			Status: as.SnapshotEnvironmentBindingStatus{Components: []as.BindingComponentStatus{{Name: "backend",
				GitOpsRepository: as.BindingComponentGitOpsRepository{URL: "https://git.example.com/gitops.git", Branch: "main", Path: "components/backend/overlays/dev"}}}},
		},
		Snapshot: &as.Snapshot{ObjectMeta: meta("snap-2"), Spec: as.SnapshotSpec{Application: "appa", Components: []as.SnapshotComponent{
			{Name: "frontend", ContainerImage: "quay.io/jane/frontend@sha256:aaaa"},
			{Name: "backend", ContainerImage: "registry.local:5000/jane/backend:v2"},
		}}},
		Environment: &as.Environment{ObjectMeta: meta("dev"), Spec: as.EnvironmentSpec{Configuration: as.EnvironmentConfiguration{
			Env: []as.EnvVarPair{{Name: "LOG", Value: "info"}, {Name: "REGION", Value: "eu"}}}}},
		Components: map[string]*as.Component{
			"frontend": {ObjectMeta: meta("frontend"), Spec: as.ComponentSpec{ComponentName: "frontend", Application: "appa", ContainerImage: "quay.io/jane/frontend:latest"},
				Status: as.ComponentStatus{GitOps: as.GitOpsStatus{RepositoryURL: "https://git.example.com/gitops.git", Branch: "main", Context: "components/frontend/overlays/dev"}}},
		},
		DestinationServer: "https://kubernetes.default.svc", DestinationNamespace: "jane", Project: "gitops-tenant-x",
	}
}

func TestParamsGolden(t *testing.T) {
	params, err := Params(inputs())
	require.NoError(t, err)
	require.Len(t, params, 2)
	assert.Equal(t, "backend", params[0].Component, "sorted by component")
	assert.Equal(t, "registry.local:5000/jane/backend", params[0].ImageName, "a registry port is not a tag")
	assert.Equal(t, "quay.io/jane/frontend", params[1].ImageName, "the Component's image names what the manifests use")
	assert.Equal(t, `[{"name":"LOG","value":"debug"},{"name":"ONLY_BACKEND","value":"1"},{"name":"REGION","value":"eu"}]`, params[0].Env,
		"the binding's per-component env overrides the Environment's")
	assert.Equal(t, "components/frontend/overlays/dev", params[1].Path, "falls back to the Component's GitOps status")
	out, err := yaml.Marshal(params)
	require.NoError(t, err)
	path := filepath.Join("testdata", "params.golden.yaml")
	if *update {
		require.NoError(t, os.WriteFile(path, out, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(out))
}

func TestParamsErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		mut    func(*Inputs)
		reason string
	}{
		"snapshot of another application": {func(in *Inputs) { in.Snapshot.Spec.Application = "appb" }, as.BindingReasonErrorOccurred},
		"duplicate component config": {func(in *Inputs) {
			in.Binding.Spec.Components = append(in.Binding.Spec.Components, in.Binding.Spec.Components[0])
		}, as.BindingReasonDuplicateComponents},
		"no gitops repository": {func(in *Inputs) { delete(in.Components, "frontend") }, as.BindingReasonWaitingForComponentStatus},
	} {
		t.Run(name, func(t *testing.T) {
			in := inputs()
			tc.mut(&in)
			_, err := Params(in)
			var ie *kernel.Refusal
			require.True(t, errors.As(err, &ie), "got %v", err)
			assert.Equal(t, tc.reason, ie.Reason)
		})
	}
}

func TestAppName(t *testing.T) {
	assert.Equal(t, "b-app-dev-comp", appName("b", "app", "dev", "comp"))
	long := appName(strings.Repeat("b", 40), strings.Repeat("a", 30), "staging", "component")
	assert.LessOrEqual(t, len(long), maxAppName)
	assert.NotEqual(t, long, appName(strings.Repeat("b", 40), strings.Repeat("a", 30), "staging", "component2"), "hash keeps long names apart")
}

func TestAppNameAvoidsOtherTenants(t *testing.T) {
	seb := func(uid string) *as.SnapshotEnvironmentBinding {
		return &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "b", UID: types.UID(uid)},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "dev"}}
	}
	readable, own := appNames(seb("uid-1"), "comp")
	assert.Equal(t, "b-app-dev-comp", readable)
	assert.Regexp(t, `^b-app-dev-comp-[0-9a-f]{10}$`, own)
	_, other := appNames(seb("uid-2"), "comp")
	assert.NotEqual(t, own, other, "another binding of the same names gets another name of its own")
	_, own2 := appNames(seb("uid-1"), "comp2")
	assert.NotEqual(t, own, own2)
	_, long := appNames(&as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("b", 60), UID: "u"}}, "c")
	assert.LessOrEqual(t, len(long), maxAppName)

	for _, tc := range []struct {
		name    string
		holders map[string]Holder
		want    string
	}{
		{"both free: the original service's name", nil, readable},
		{"ours under the readable name", map[string]Holder{readable: ThisBinding}, readable},
		{"another tenant holds the readable name", map[string]Holder{readable: Other}, own},
		{"ours under its own name stays there when the readable one frees", map[string]Holder{own: ThisBinding}, own},
		{"ours under its own name, the readable one still held", map[string]Holder{readable: Other, own: ThisBinding}, own},
		{"both held by others: its own name, which Argo CD refuses (a condition)", map[string]Holder{readable: Other, own: Other}, own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, pickName(readable, own, tc.holders))
		})
	}
}
