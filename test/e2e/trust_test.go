package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// adminApplication is an Application an admin made in project default (no
// labels of ours, Argo CD's resources finalizer), removed when the test ends.
func adminApplication(t *testing.T, name string, labels, annotations map[string]string) *argov1alpha1.Application {
	t.Helper()
	repo, _ := gitRepo(t, map[string]string{"admin/cm.yaml": configMap("admin", "x")})
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Namespace, Name: name, Labels: labels, Annotations: annotations,
		Finalizers: []string{argov1alpha1.ResourcesFinalizerName}},
		Spec: argov1alpha1.ApplicationSpec{Project: "default", Source: &argov1alpha1.ApplicationSource{RepoURL: repo.URL, Path: "admin"},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "admin-" + rand.String(5)}}}
	require.NoError(t, k8s.Create(context.Background(), app))
	t.Cleanup(func() {
		ctx := context.Background()
		cur := &argov1alpha1.Application{}
		if k8s.Get(ctx, client.ObjectKeyFromObject(app), cur) == nil {
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Finalizers = nil
			_ = k8s.Patch(ctx, cur, patch)
			_ = k8s.Delete(ctx, cur)
		}
	})
	return app
}

// Issue 21 defect 2, against the real applicationset-controller: an admin's
// Application named as a binding's Application would be (project default, no
// labels of ours) is neither taken over (spec, labels, owner, finalizers) nor
// deleted with the binding; the binding deploys under its own names.
func TestBindingLeavesAnAdminsApplicationAlone(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	admin := adminApplication(t, "appa-dev-appa-dev-frontend", nil, nil)
	appWithComponents(t, ns, "overlays/dev")
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}, Spec: as.EnvironmentSpec{DisplayName: "Dev"}}))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-1"}}
	require.NoError(t, k8s.Create(ctx, seb))
	got := waitBinding(t, seb, "all components deployed", func(b *as.SnapshotEnvironmentBinding) bool {
		return meta.IsStatusConditionTrue(b.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed) &&
			len(b.Status.GitOpsDeployments) == 2
	})
	for _, d := range got.Status.GitOpsDeployments {
		assert.NotEqual(t, admin.Name, d.GitOpsDeployment, "the binding took the admin's Application's name")
	}
	same := func(what string) {
		now := &argov1alpha1.Application{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(admin), now), "the admin's Application is gone %s", what)
		assert.Equal(t, admin.Spec, now.Spec, "the admin's Application's spec changed %s", what)
		assert.Empty(t, now.Labels, "labels added to the admin's Application %s", what)
		assert.Empty(t, now.OwnerReferences, "an owner set on the admin's Application %s", what)
		assert.Equal(t, admin.Finalizers, now.Finalizers, "the admin's Application's finalizers changed %s", what)
		assert.True(t, now.DeletionTimestamp.IsZero(), "the admin's Application is being deleted %s", what)
	}
	same("while the binding deploys")

	require.NoError(t, k8s.Delete(ctx, seb))
	waitDeleted(t, seb)
	time.Sleep(3 * time.Second) // Argo CD's turn after the ApplicationSet went
	same("after the binding was deleted")
}

// Issue 21 defect 3, through the real argocd-server: a look-alike of a
// tenant's Application (every label and annotation, the owner's UID) in
// project default gets nothing of the tenant's deployment.
func TestUIPanelRefusesLookAlikes(t *testing.T) {
	ns := tenantNamespace(t)
	repo, _ := gitRepo(t, map[string]string{"app/cm.yaml": configMap("panel", "x")})
	gd := deploy(t, ns, "victim", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	var app *argov1alpha1.Application
	require.Eventually(t, func() bool {
		var apps argov1alpha1.ApplicationList
		require.NoError(t, k8s.List(context.Background(), &apps, client.InNamespace(argo.Namespace), client.MatchingLabels{ownership.LabelOwnerUID: string(gd.UID)}))
		if len(apps.Items) == 1 {
			app = &apps.Items[0]
		}
		return app != nil
	}, deployWait, poll, "no Application for the deployment")
	var status int
	var body map[string]any
	require.Eventually(t, func() bool {
		status, body = callPanelAPI(t, app.Name, app.Spec.Project)
		return status == http.StatusOK
	}, informerWait, poll, "the panel's API never answered for the tenant's own Application: %d %v", status, body)

	look := adminApplication(t, "look-alike-"+rand.String(5), app.Labels,
		map[string]string{ownership.AnnotationOwnerName: app.Annotations[ownership.AnnotationOwnerName]})
	// argocd-server refuses (401) until its informer has the new Application;
	// then it forwards, and our backend answers (JSON with kind or error).
	require.Eventually(t, func() bool {
		status, body = callPanelAPI(t, look.Name, "default")
		return body["kind"] != nil || body["error"] != nil
	}, informerWait, poll, "the panel's API never answered for the look-alike: %d %v", status, body)
	assert.Equal(t, http.StatusNotFound, status, "%v", body)
	assert.Nil(t, body["kind"], "the look-alike got the tenant's deployment: %v", body)
	assert.NotContains(t, body, "namespace")
}
