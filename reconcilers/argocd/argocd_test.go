package argocd

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got, as YAML, with testdata/<name>.golden.yaml.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	out, err := yaml.Marshal(got)
	require.NoError(t, err)
	path := filepath.Join("testdata", name+".golden.yaml")
	if *update {
		require.NoError(t, os.WriteFile(path, out, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./reconcilers/argocd -update")
	assert.Equal(t, string(want), string(out), "translation changed: review, then run go test ./reconcilers/argocd -update")
}

func deployment(mutate func(*v1.GitOpsDeployment)) *v1.GitOpsDeployment {
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: "jane", UID: "5b0d2a0e-0000-4000-8000-000000000001"},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://git.example.com/jane/apps.git", Path: "guestbook"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	if mutate != nil {
		mutate(gd)
	}
	return gd
}

func TestApplication(t *testing.T) {
	local := Target{Server: LocalServer, Namespace: "jane", Project: ProjectName("ns-uid")}
	cases := map[string]struct {
		gd     *v1.GitOpsDeployment
		target Target
	}{
		"application-automated": {gd: deployment(nil), target: local},
		"application-manual":    {gd: deployment(func(gd *v1.GitOpsDeployment) { gd.Spec.Type = v1.GitOpsDeploymentSpecTypeManual }), target: local},
		"application-manual-createnamespace": {gd: deployment(func(gd *v1.GitOpsDeployment) {
			gd.Spec.Type = v1.GitOpsDeploymentSpecTypeManual
			gd.Spec.Source.TargetRevision = "v1.2.0"
			gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
		}), target: local},
		"application-automated-remote": {gd: deployment(func(gd *v1.GitOpsDeployment) {
			gd.Spec.Destination = v1.ApplicationDestination{Environment: "staging", Namespace: "team-a"}
			gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
		}), target: Target{Server: ClusterServer("https://api.staging.example.com:6443", "env-uid"), Namespace: "team-a", Project: ProjectName("ns-uid")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			app := Application("argocd", tc.gd, tc.target)
			assert.Equal(t, "gitopsdepl-"+string(tc.gd.UID), app.Name, "clients look Applications up by this name")
			assert.True(t, ownership.IsOwnedBy(app.Labels, ownership.KindGitOpsDeployment, string(tc.gd.UID)))
			assert.False(t, ownership.IsOwnedBy(app.Labels, ownership.KindGitOpsDeployment, "other-uid"))
			golden(t, name, app)
		})
	}
}

func TestAppProject(t *testing.T) {
	p := AppProject("argocd", Tenant{
		Namespace: "jane", UID: "ns-uid",
		Repos: []string{"https://b.example.com/x.git", "https://a.example.com/y.git", "https://b.example.com/x.git", ""},
		Destinations: []Destination{
			{Server: ClusterServer("https://api.two.example.com:6443", "e2"), Namespace: "*"},
			{Server: ClusterServer("https://api.one.example.com:6443", "e1"), Namespace: "team-a"},
		},
		Subjects: []string{"jane", "team-jane"},
	})
	assert.Equal(t, "gitops-tenant-ns-uid", p.Name)
	assert.Empty(t, p.Spec.ClusterResourceWhitelist, "a tenant must never create cluster-scoped resources")
	for _, d := range p.Spec.Destinations {
		assert.NotEqual(t, "*", d.Server)
		if d.Server == LocalServer {
			assert.Equal(t, "jane", d.Namespace, "the only local destination is the tenant's own namespace")
		}
	}
	require.Len(t, p.Spec.Roles, 1)
	for _, pol := range p.Spec.Roles[0].Policies {
		assert.Contains(t, pol, ", gitops-tenant-ns-uid/*, allow", "a tenant role reaches only its own project's Applications")
	}
	golden(t, "appproject", p)

	noOne := AppProject("argocd", Tenant{Namespace: "jane", UID: "ns-uid"})
	assert.Empty(t, noOne.Spec.Roles, "nobody mapped: no role")
}

func TestParseSubjects(t *testing.T) {
	valid, invalid := ParseSubjects(" team-b, alice ,, alice,role:admin,proj:x:y,a\nb,\"q\",#c,dev@example.com,Org:Team Name")
	assert.Equal(t, []string{"Org:Team Name", "alice", "dev@example.com", "team-b"}, valid)
	assert.Equal(t, []string{"role:admin", "proj:x:y", "a\nb", "\"q\"", "#c"}, invalid)
	valid, invalid = ParseSubjects("")
	assert.Empty(t, valid)
	assert.Empty(t, invalid)
}

func TestTenantRBACPolicy(t *testing.T) {
	assert.Empty(t, TenantRBACPolicy(nil))
	assert.Equal(t, "p, role:gitops-service-tenant, extensions, invoke, gitops-service, allow\n"+
		"g, alice, role:gitops-service-tenant\n"+
		"g, team-b, role:gitops-service-tenant\n",
		TenantRBACPolicy([]string{"team-b", "alice", "role:admin", "alice"}))
}

func TestMirrorStatus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "application-with-status.yaml"))
	require.NoError(t, err)
	app := &argov1alpha1.Application{}
	require.NoError(t, yaml.Unmarshal(raw, app))
	st := MirrorStatus(app, ServerNames{LocalServer: "", ClusterServer("https://api.one.example.com:6443", "e1"): "staging"}, nil)
	assert.Equal(t, v1.SyncStatusCodeSynced, st.Sync.Status)
	assert.Equal(t, v1.HealthStatusHealthy, st.Health.Status)
	assert.Equal(t, "staging", st.ReconciledState.Destination.Name)
	golden(t, "status-mirrored", st)

	empty := MirrorStatus(&argov1alpha1.Application{}, nil, nil)
	assert.Nil(t, empty.OperationState)
	assert.Empty(t, empty.ReconciledState.Source.RepoURL, "nothing compared yet: no reconciledState")
}

func TestApplicationSet(t *testing.T) {
	seb := &appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "appa-dev", UID: "seb-uid-1"},
		Spec:       appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-1"},
	}
	set := ApplicationSet("argocd", seb)
	assert.Equal(t, "seb-seb-uid-1", set.Name)
	assert.True(t, ownership.IsOwnedBy(set.Labels, ownership.KindBinding, "seb-uid-1"))
	assert.True(t, ownership.IsOwnedBy(set.Spec.Template.Labels, ownership.KindBinding, "seb-uid-1"), "generated Applications are marked as ours too")
	golden(t, "applicationset", set)
}
