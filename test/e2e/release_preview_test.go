package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// TestReleasePreviewAndRenderHash: one PromotionPreview previews a Snapshot
// into every Environment of the path (staging, then prod) with the real Argo
// CD's repo-server, a render hash per component; what prod renders then
// changes, so a promotion into prod (which requires a preview) waits and
// says why; a new preview lets it apply.
func TestReleasePreviewAndRenderHash(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	repo, _ := gitRepo(t, componentFiles("web"))
	removeBindingsAfter(t, ns)
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa"}, Spec: as.ApplicationSpec{DisplayName: "App A"}}))
	comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: as.ComponentSpec{ComponentName: "web", Application: "appa", ContainerImage: "quay.io/example/web:placeholder"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: repo.URL, Branch: "main", Context: "components/web/base"}
	require.NoError(t, k8s.Status().Update(ctx, comp))

	kc, err := remote(t).KubeconfigFor(remoteAdminTokenFor(t))
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, credentialsSecret(ns, "remote-creds", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
	onRemote := func(target string) *as.UnstableEnvironmentConfiguration {
		return &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
			APIURL: remoteKube.URL, TargetNamespace: remoteNamespace(t, target), ClusterCredentialsSecret: "remote-creds"}}
	}
	for _, e := range []*as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{DisplayName: "Staging", DeploymentStrategy: as.DeploymentStrategyManual,
			UnstableConfigurationFields: onRemote("staging")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: as.EnvironmentSpec{DisplayName: "Prod", ParentEnvironment: "staging", DeploymentStrategy: as.DeploymentStrategyManual,
			UnstableConfigurationFields: onRemote("prod"), Preview: &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: 10 * time.Minute}}}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, e))
	}
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-2"}, Spec: as.SnapshotSpec{Application: "appa",
		Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/example/web:v2"}}}}))

	release := func(name string) *as.PromotionPreview {
		t.Helper()
		pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: as.PromotionPreviewSpec{Snapshot: "snap-2", Application: "appa", AllEnvironments: true}}
		require.NoError(t, k8s.Create(ctx, pp))
		got := waitPreview(t, pp, "completed", func(p *as.PromotionPreview) bool { return p.Status.CompletedAt != nil })
		require.Len(t, got.Status.Environments, 2, "status: %+v", got.Status)
		assert.Equal(t, "staging", got.Status.Environments[0].Name, "the path's order")
		assert.Equal(t, "prod", got.Status.Environments[1].Name)
		for _, e := range got.Status.Environments {
			assert.Empty(t, e.Error, e.Name)
			assert.True(t, e.Clean, "%s: %+v", e.Name, e)
			if assert.Len(t, e.Components, 1, e.Name) {
				web := e.Components[0]
				assert.Equal(t, 1, web.Added, "%s: the Deployment: %+v", e.Name, web)
				assert.True(t, strings.HasPrefix(web.RenderHash, "sha256:") && len(web.RenderHash) == 71, "%s: %q", e.Name, web.RenderHash)
				assert.Regexp(t, `\n\+ +(- )?image: quay.io/example/web:v2\n`, e.Diff, e.Name)
			}
		}
		assert.True(t, got.Status.Clean)
		assert.Empty(t, got.Status.Components, "per Environment only")
		return got
	}
	first := release("release-1")
	prodHash := func(p *as.PromotionPreview) string { return p.Status.Environments[1].Components[0].RenderHash }

	// What prod renders changes after the preview: its parameters (an env
	// var of every component). A new commit on the branch would change it
	// too, but only once Argo CD's repo-server resolves the branch again
	// (it keeps a branch's refs for --revision-cache-expiration, 3 minutes
	// by default): the render at apply is what Argo CD would apply.
	prod := &as.Environment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, prod))
	prod.Spec.Configuration.Env = []as.EnvVarPair{{Name: "REGION", Value: "eu"}}
	require.NoError(t, k8s.Update(ctx, prod))

	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-2-to-prod"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-2", Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	require.NoError(t, k8s.Create(ctx, run))
	got := waitPromotion(t, run, "waiting for a new preview", func(r *as.PromotionRun) bool { return waitingCondition(r, as.WaitingReasonPreviewOutdated) != nil })
	c := waitingCondition(got, as.WaitingReasonPreviewOutdated)
	assert.Contains(t, c.Message, "component web renders differently than when it was previewed", c.Message)
	assert.Contains(t, c.Message, "preview it again", c.Message)
	var sebs as.SnapshotEnvironmentBindingList
	require.NoError(t, k8s.List(ctx, &sebs, client.InNamespace(ns)))
	for _, b := range sebs.Items {
		assert.NotEqual(t, "prod", b.Spec.Environment, "nothing applied in prod while the render differs from the preview")
	}

	second := release("release-2")
	assert.NotEqual(t, prodHash(first), prodHash(second), "prod renders differently now")
	assert.Equal(t, first.Status.Environments[0].Components[0].RenderHash, second.Status.Environments[0].Components[0].RenderHash, "staging renders as before")
	assert.Contains(t, second.Status.Environments[1].Diff, "REGION", "the new parameter shows in prod's diff")
	waitPromotion(t, run, "Success after the new preview", promotionSucceeded)
}
