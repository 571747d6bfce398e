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
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
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
		"snapshot of another application": {func(in *Inputs) { in.Snapshot.Spec.Application = "appb" }, ReasonSnapshotOfAnotherApplication},
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

// TestParamsRefusesHostileEnv: env names and values go into generated Argo CD
// objects; what admission should have refused is refused here too.
func TestParamsRefusesHostileEnv(t *testing.T) {
	for name, tc := range map[string]struct {
		mut  func(*Inputs)
		want string
	}{
		"NEL in an Environment value": {func(in *Inputs) {
			in.Environment.Spec.Configuration.Env[0].Value = "a\u0085metadata:\u0085  name: pwned"
		}, `Environment "dev": env[0] (LOG) value "a\u0085metadata:\u0085  name: pwned" has the control or line-break character U+0085`},
		"LS in a binding value": {func(in *Inputs) { in.Binding.Spec.Components[0].Configuration.Env[1].Value = "a\u2028b" },
			`spec.components "backend": env[1] (ONLY_BACKEND) value "a\u2028b" has the control or line-break character U+2028`},
		"PS":        {func(in *Inputs) { in.Binding.Spec.Components[0].Configuration.Env[0].Value = "\u2029" }, "U+2029"},
		"newline":   {func(in *Inputs) { in.Environment.Spec.Configuration.Env[1].Value = "a\nb" }, "U+000A"},
		"CR":        {func(in *Inputs) { in.Environment.Spec.Configuration.Env[1].Value = "a\rb" }, "U+000D"},
		"DEL":       {func(in *Inputs) { in.Environment.Spec.Configuration.Env[1].Value = "a\x7f" }, "U+007F"},
		"not UTF-8": {func(in *Inputs) { in.Environment.Spec.Configuration.Env[1].Value = "a\xff" }, "is not UTF-8"},
		"name with =": {func(in *Inputs) { in.Environment.Spec.Configuration.Env[1].Name = "A=B" },
			`env[1].name "A=B" must be printable ASCII without '='`},
		"name with NEL": {func(in *Inputs) { in.Binding.Spec.Components[0].Configuration.Env[0].Name = "A\u0085" }, "must be printable ASCII"},
		"empty name":    {func(in *Inputs) { in.Environment.Spec.Configuration.Env[1].Name = "" }, "env[1].name must have 1 to 256 characters"},
		"long name":     {func(in *Inputs) { in.Environment.Spec.Configuration.Env[1].Name = strings.Repeat("A", 257) }, "must have 1 to 256"},
		"long value": {func(in *Inputs) {
			in.Environment.Spec.Configuration.Env[1].Value = strings.Repeat("v", MaxEnvValueLen+1)
		},
			"value has 16385 bytes, at most 16384"},
		"too many": {func(in *Inputs) {
			for i := 0; i <= MaxEnv; i++ {
				in.Binding.Spec.Components[0].Configuration.Env = append(in.Binding.Spec.Components[0].Configuration.Env, as.EnvVarPair{Name: "V", Value: "1"})
			}
		}, "131 env variables, at most 128"},
	} {
		t.Run(name, func(t *testing.T) {
			in := inputs()
			tc.mut(&in)
			params, err := Params(in)
			assert.Nil(t, params)
			var ie *kernel.Refusal
			require.True(t, errors.As(err, &ie), "got %v", err)
			assert.Equal(t, ReasonInvalidEnv, ie.Reason, "the Event's and Ready's reason")
			assert.Equal(t, as.BindingReasonErrorOccurred, ie.ConditionReason(), "bindingConditions keep the seed's reason")
			assert.Contains(t, ie.Message, tc.want)
			assert.False(t, strings.ContainsAny(ie.Message, "\u0085\u2028\u2029\n\r\x7f"), "the message quotes, never carries, the characters: %q", ie.Message)
			assert.Less(t, len(ie.Message), 400, "the message is bounded")
		})
	}
	in := inputs()
	in.Environment.Spec.Configuration.Env[1].Value = "tab\tand unicode é ü 日本 🙂 and ={}[]\"'\\"
	in.Environment.Spec.Configuration.Env[1].Name = "weird.name-1 ~!"
	_, err := Params(in)
	require.Error(t, err, "a tab is a control character")
	in.Environment.Spec.Configuration.Env[1].Value = "unicode é ü 日本 🙂 and ={}[]\"'\\"
	_, err = Params(in)
	assert.NoError(t, err, "printable text of any kind is fine")
}

// TestCheck: what the binding reconciler refuses before it writes the
// ApplicationSet, the generator refuses before it answers (same function).
func TestCheck(t *testing.T) {
	valid, err := Params(inputs())
	require.NoError(t, err)
	require.NoError(t, Check(valid, false))
	for name, tc := range map[string]struct {
		mut          func(*argocd.GeneratorParams)
		allowFile    bool
		reason, want string
	}{
		"file repository":          {func(p *argocd.GeneratorParams) { p.RepoURL = "file:///etc" }, false, as.BindingReasonGitOpsRepoNotReady, "component backend: GitOps repository: repository URL \"file:///etc\" is refused"},
		"ext repository":           {func(p *argocd.GeneratorParams) { p.RepoURL = "ext::sh -c id" }, true, as.BindingReasonGitOpsRepoNotReady, "GitOps repository"},
		"option-like repository":   {func(p *argocd.GeneratorParams) { p.RepoURL = "--upload-pack=id" }, true, as.BindingReasonGitOpsRepoNotReady, "leading '-'"},
		"path leaving the repo":    {func(p *argocd.GeneratorParams) { p.Path = "a/../../b" }, false, as.BindingReasonGitOpsRepoNotReady, "no '..' segments"},
		"absolute path":            {func(p *argocd.GeneratorParams) { p.Path = "/etc" }, false, as.BindingReasonGitOpsRepoNotReady, "must be relative"},
		"option-like branch":       {func(p *argocd.GeneratorParams) { p.TargetRevision = "--output=x" }, false, as.BindingReasonGitOpsRepoNotReady, "GitOps repository branch"},
		"NEL in the path":          {func(p *argocd.GeneratorParams) { p.Path = "a\u0085b" }, false, ReasonInvalidParameter, `component backend: path "a\u0085b" has the control or line-break character U+0085`},
		"NEL in the branch":        {func(p *argocd.GeneratorParams) { p.TargetRevision = "main\u0085x" }, false, ReasonInvalidParameter, "targetRevision"},
		"LS in the repository":     {func(p *argocd.GeneratorParams) { p.RepoURL = "https://h/\u2028r" }, false, ReasonInvalidParameter, "repoURL"},
		"NEL in the image":         {func(p *argocd.GeneratorParams) { p.Image = "i\u0085:1" }, false, ReasonInvalidParameter, "image"},
		"NEL in the env":           {func(p *argocd.GeneratorParams) { p.Env = "[\"\u0085\"]" }, false, ReasonInvalidParameter, "env"},
		"control in the component": {func(p *argocd.GeneratorParams) { p.Component = "c\x1b" }, false, ReasonInvalidParameter, `component "c\x1b" has the control`},
		"replicas not a count":     {func(p *argocd.GeneratorParams) { p.Replicas = "1: x" }, false, ReasonInvalidReplicas, `replicas "1: x" is not a count`},
		"replicas too big":         {func(p *argocd.GeneratorParams) { p.Replicas = "99999999999" }, false, ReasonInvalidReplicas, "not a count"},
		"option-like image":        {func(p *argocd.GeneratorParams) { p.Image = "--help" }, false, ReasonInvalidImage, "image \"--help\" is not an image reference"},
		"image name with =":        {func(p *argocd.GeneratorParams) { p.ImageName = "a=b" }, false, ReasonInvalidImage, "imageName"},
		// Argo CD expands these in kustomize images: the tenant's path "x=--help" makes "a=b=--help".
		"image expanding the path": {func(p *argocd.GeneratorParams) { p.Image = "b${ARGOCD_APP_SOURCE_PATH}" }, false, ReasonInvalidImage, `image "b${ARGOCD_APP_SOURCE_PATH}" is not an image reference`},
		"image name expanding":     {func(p *argocd.GeneratorParams) { p.ImageName = "$ARGOCD_APP_SOURCE_PATH" }, false, ReasonInvalidImage, "imageName"},
	} {
		t.Run(name, func(t *testing.T) {
			params, err := Params(inputs())
			require.NoError(t, err)
			tc.mut(&params[0])
			err = Check(params, tc.allowFile)
			var ie *kernel.Refusal
			require.True(t, errors.As(err, &ie), "got %v", err)
			assert.Equal(t, tc.reason, ie.Reason)
			if tc.reason != as.BindingReasonGitOpsRepoNotReady {
				assert.Equal(t, as.BindingReasonErrorOccurred, ie.ConditionReason(), "bindingConditions keep the seed's reason")
			} else {
				assert.Equal(t, tc.reason, ie.ConditionReason(), "the original service's own reason")
			}
			assert.Contains(t, ie.Message, tc.want)
		})
	}
	params, err := Params(inputs())
	require.NoError(t, err)
	params[1].RepoURL = "file:///srv/git/r"
	assert.NoError(t, Check(params, true), "the admin may allow file:// repositories")
}
