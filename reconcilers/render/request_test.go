package render

import (
	"encoding/json"
	"errors"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

func params(replicas, env string) argocd.GeneratorParams {
	return argocd.GeneratorParams{
		Application: "appa", Binding: "b", Component: "web", DestinationNamespace: "target", DestinationServer: "https://remote?managedEnvironment=u",
		Env: env, Environment: "staging", Image: "quay.io/x/web:v2", ImageName: "quay.io/x/web", Name: "b-appa-staging-web", Namespace: "tenant",
		Path: "components/web", Project: "tenant-project", Replicas: replicas, RepoURL: "https://git.example.com/r.git", Snapshot: "snap", TargetRevision: "main",
	}
}

func TestGeneratedApplication(t *testing.T) {
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "b", UID: "uid"}}
	tests := []struct {
		name string
		p    argocd.GeneratorParams
		want argov1alpha1.ApplicationSourceKustomize
	}{
		{name: "image only", p: params("", "[]"),
			want: argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{"quay.io/x/web=quay.io/x/web:v2"}}},
		{name: "replicas", p: params("3", "[]"),
			want: argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{"quay.io/x/web=quay.io/x/web:v2"},
				Replicas: argov1alpha1.KustomizeReplicas{{Name: "web", Count: intstr.FromInt32(3)}}}},
		{name: "env as a JSON patch of the Deployment", p: params("", `[{"name":"A","value":"b"}]`),
			want: argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{"quay.io/x/web=quay.io/x/web:v2"},
				Patches: argov1alpha1.KustomizePatches{{Target: &argov1alpha1.KustomizeSelector{KustomizeResId: argov1alpha1.KustomizeResId{KustomizeGvk: argov1alpha1.KustomizeGvk{Kind: "Deployment"}, Name: "web"}},
					Patch: `[{"op": "add", "path": "/spec/template/spec/containers/0/env", "value": [{"name":"A","value":"b"}]}]`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, err := GeneratedApplication("argocd", seb, tt.p)
			require.NoError(t, err)
			assert.Equal(t, "b-appa-staging-web", app.Name)
			assert.Equal(t, "argocd", app.Namespace)
			assert.Equal(t, "tenant-project", app.Spec.Project)
			src := app.Spec.GetSource()
			assert.Equal(t, "https://git.example.com/r.git", src.RepoURL)
			assert.Equal(t, "components/web", src.Path)
			assert.Equal(t, "main", src.TargetRevision)
			assert.Equal(t, argov1alpha1.ApplicationDestination{Server: "https://remote?managedEnvironment=u", Namespace: "target"}, app.Spec.Destination)
			require.NotNil(t, src.Kustomize)
			// Argo CD's renderer leaves empty lists and maps, as in the
			// Applications it generates: compared as the API stores them.
			want, _ := json.Marshal(tt.want)
			got, _ := json.Marshal(src.Kustomize)
			assert.JSONEq(t, string(want), string(got))
		})
	}
}

func TestManifestRequest(t *testing.T) {
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "b", UID: "uid"}}
	app, err := GeneratedApplication("argocd", seb, params("", "[]"))
	require.NoError(t, err)
	repo := &argov1alpha1.Repository{Repo: "https://git.example.com/r.git", Project: "tenant-project", Username: "u", Password: "p"}
	proj := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "tenant-project"}, Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"https://git.example.com/r.git"}}}
	kopts := &argov1alpha1.KustomizeOptions{BuildOptions: "--enable-helm"}
	req := ManifestRequest(app, repo, proj, Settings{AppLabelKey: "app.kubernetes.io/instance", TrackingMethod: "annotation", InstallationID: "id",
		KustomizeOptions: kopts, KubeVersion: "v1.32.13", APIVersions: []string{"apps/v1", "v1"}})
	assert.Same(t, repo, req.Repo, "the project's repository with its credentials, as Argo CD's database gave it")
	assert.Equal(t, "main", req.Revision)
	assert.Equal(t, "b-appa-staging-web", req.AppName)
	assert.Equal(t, "target", req.Namespace)
	assert.Equal(t, "app.kubernetes.io/instance", req.AppLabelKey)
	assert.Equal(t, "annotation", req.TrackingMethod)
	assert.Equal(t, "id", req.InstallationID)
	assert.Same(t, kopts, req.KustomizeOptions)
	assert.Equal(t, "v1.32.13", req.KubeVersion)
	assert.Equal(t, []string{"apps/v1", "v1"}, req.ApiVersions)
	assert.Equal(t, "tenant-project", req.ProjectName)
	assert.Equal(t, []string{"https://git.example.com/r.git"}, req.ProjectSourceRepos)
	assert.False(t, req.HasMultipleSources)
	require.NotNil(t, req.ApplicationSource)
	assert.Equal(t, app.Spec.GetSource(), *req.ApplicationSource)
	assert.False(t, req.NoCache, "previews use the repo-server's cache as the controller does")
}

func TestUnavailableIsTransient(t *testing.T) {
	assert.True(t, unavailable(grpcstatus.Error(codes.Unavailable, "connection refused")))
	assert.True(t, unavailable(grpcstatus.Error(codes.DeadlineExceeded, "timeout")))
	assert.False(t, unavailable(grpcstatus.Error(codes.Unknown, "kustomize build failed")), "the repo-server's answer is the component's result")
	assert.False(t, unavailable(errors.New("the repository's credentials cannot be read")))
	assert.False(t, unavailable(nil))
}
