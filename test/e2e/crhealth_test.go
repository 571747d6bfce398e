package e2e

import (
	"context"
	"fmt"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// A platform deploys our CRs with Argo CD (app of apps): with the health
// checks manifests/install merges into argocd-cm (the stack applies them as
// the install does), Argo CD shows each CR's real health instead of Healthy
// whatever its state. One admin Application per CR, so that the
// Application's health is its one resource's (Argo CD 3.x keeps per-resource
// health only in its resource tree).
func TestArgoCDShowsTheHealthOfOurCRs(t *testing.T) {
	ns := tenantNamespace(t)
	inner, _ := gitRepo(t, map[string]string{"app/cm.yaml": configMap("health-inner", "x")})
	crs := map[string]struct {
		manifest string
		want     string
	}{
		"gitopsdeployment-healthy": {fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: good}
spec:
  source: {repoURL: %q, path: app}
  type: automated
`, inner.URL), "Healthy"},
		// Refused by the reconciler (a namespace that is not the tenant's).
		"gitopsdeployment-refused": {`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: refused}
spec:
  source: {repoURL: "https://git.example.com/a.git", path: app}
  destination: {namespace: kube-system}
  type: automated
`, "Degraded"},
		"syncrun-refused": {`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentSyncRun
metadata: {name: orphan}
spec: {gitopsDeploymentName: no-such-deployment}
`, "Degraded"},
		"promotionrun-failed": {`apiVersion: appstudio.redhat.com/v1alpha1
kind: PromotionRun
metadata: {name: nothing-to-promote}
spec:
  application: shop
  snapshot: no-such-snapshot
  manualPromotion: {targetEnvironment: dev}
`, "Degraded"},
		"environment-healthy": {`apiVersion: appstudio.redhat.com/v1alpha1
kind: Environment
metadata: {name: dev}
spec: {displayName: Dev}
`, "Healthy"},
	}
	files := map[string]string{}
	for name, cr := range crs {
		files[name+"/cr.yaml"] = cr.manifest
	}
	repo, _ := gitRepo(t, files)
	ctx := context.Background()
	apps := map[string]*argov1alpha1.Application{}
	for name := range crs {
		app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Namespace, Name: "crs-" + name + "-" + rand.String(4)},
			Spec: argov1alpha1.ApplicationSpec{Project: "default", Source: &argov1alpha1.ApplicationSource{RepoURL: repo.URL, Path: name},
				Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: ns},
				SyncPolicy:  &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{}}}}
		require.NoError(t, k8s.Create(ctx, app))
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), app) })
		apps[name] = app
	}
	for name, cr := range crs {
		t.Run(name, func(t *testing.T) {
			got := &argov1alpha1.Application{}
			if !assert.Eventually(t, func() bool {
				return k8s.Get(ctx, client.ObjectKeyFromObject(apps[name]), got) == nil &&
					got.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && string(got.Status.Health.Status) == cr.want
			}, deployWait, poll, "Application of %s never Synced and %s", name, cr.want) {
				t.Logf("last seen: sync %s, health %+v, resources %+v", got.Status.Sync.Status, got.Status.Health, got.Status.Resources)
			}
		})
	}
	// The refused deployment is Degraded for the reason the sidecar gave.
	gd := &v1.GitOpsDeployment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "refused"}, gd))
	require.NotEmpty(t, gd.Status.Conditions)
	assert.Contains(t, gd.Status.Conditions[0].Message, v1.ErrMsgEnvironmentNeeded)
}
