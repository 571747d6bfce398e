package isolation

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// Issue 21: names in the Argo CD namespace held by objects we did not make
// (an admin's, without our labels; a look-alike with forged labels in another
// project), and look-alike Applications wherever labels are trusted. Each
// test has tenants of its own; the look-alikes go when it ends, as the
// matrix's fence check counts every labelled Application as ours.

// holders are the two kinds of object we did not make that may hold a name:
// an admin's (no labels of ours) and a look-alike (our labels for owner, in
// project default).
var holders = []struct {
	name   string
	labels func(kind, ns, owner, uid string) map[string]string
}{
	{"unlabelled", func(string, string, string, string) map[string]string { return nil }},
	{"look-alike", func(kind, ns, owner, uid string) map[string]string {
		l, _ := ownership.Meta(kind, ns, owner, uid)
		return l
	}},
}

// held is an Application in project default we did not make, with labels.
func held(t *testing.T, name string, labels map[string]string, ann map[string]string) *argov1alpha1.Application {
	t.Helper()
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: name, Labels: labels, Annotations: ann},
		Spec: argov1alpha1.ApplicationSpec{Project: "default",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/admin/look-alike.git", Path: "monitoring"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: "monitoring"}}}
	create(t, app)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), app) })
	return app
}

// untouched asserts obj is as it was (same resourceVersion: nothing wrote it).
func untouched(t *testing.T, before client.Object) {
	t.Helper()
	now := before.DeepCopyObject().(client.Object)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(before), now), "%T %s was deleted", before, before.GetName())
	assert.Equal(t, before.GetResourceVersion(), now.GetResourceVersion(), "%T %s was written", before, before.GetName())
}

func freshTenant(t *testing.T, prefix string) tenantEnv {
	t.Helper()
	e := tenantEnv{NS: prefix + "-" + rand.String(5), Neighbour: neighbourNS}
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.NS}})
	return e
}

func waitFor(t *testing.T, obj client.Object, w want) {
	t.Helper()
	if !assert.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj) == nil && w.matches(obj)
	}, wait, tick, "%T %s: no %s", obj, obj.GetName(), w) {
		t.Fatalf("last seen conditions: %+v", conditionsOf(obj))
	}
}

func poke(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"poke":"`+rand.String(6)+`"}}}`))))
}

func TestNamesHeldByObjectsWeDidNotMake(t *testing.T) {
	ctx := context.Background()
	for _, h := range holders {
		// gitopsdepl-<uid>: the deployment is refused first (so nothing is
		// written), the name is taken, then the deployment is fixed.
		t.Run("GitOpsDeployment Application/"+h.name, func(t *testing.T) {
			t.Parallel()
			e := freshTenant(t, "trust-gd")
			gd := deployment(e, "app", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = "file:///etc" })
			create(t, gd)
			waitFor(t, gd, errorOccurred("", "spec.source.repoURL"))
			_, ann := ownership.Meta(ownership.KindGitOpsDeployment, e.NS, gd.Name, string(gd.UID))
			squat := held(t, argocd.ApplicationName(string(gd.UID)), h.labels(ownership.KindGitOpsDeployment, e.NS, gd.Name, string(gd.UID)), ann)
			require.NoError(t, k8s.Patch(ctx, gd, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"source":{"repoURL":"`+tenantRepo+`"}}}`))))
			waitFor(t, gd, errorOccurred("", "name collision"))
			untouched(t, squat)
			// Deleted (without our finalizer): the squatter stays.
			require.NoError(t, k8s.Delete(ctx, gd))
			require.Eventually(t, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(gd), gd)) }, wait, tick)
			time.Sleep(2 * time.Second) // the reconciler's turn after the delete
			untouched(t, squat)
		})
		// A binding's readable Application name, then its own one too.
		t.Run("binding Applications/"+h.name, func(t *testing.T) {
			t.Parallel()
			e := freshTenant(t, "trust-seb")
			appStudioTenant(t, e, "shop", nil)
			seb := &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, "b"), Spec: as.SnapshotEnvironmentBindingSpec{
				Application: "shop", Environment: "shop", Snapshot: "shop"}}
			create(t, seb)
			readable := "b-shop-shop-shop-web"
			_, ann := ownership.Meta(ownership.KindBinding, e.NS, seb.Name, string(seb.UID))
			first := held(t, readable, h.labels(ownership.KindBinding, e.NS, seb.Name, string(seb.UID)), ann)
			params, err := answer(ctx, seb)
			require.NoError(t, err)
			require.Len(t, params, 1)
			own := params[0].Name
			assert.NotEqual(t, readable, own, "the generator names an Application we did not make")
			second := held(t, own, nil, nil)
			poke(t, seb)
			waitFor(t, seb, errorOccurred(as.BindingReasonErrorOccurred, "were not created for this binding"))
			params, err = answer(ctx, seb)
			require.NoError(t, err)
			assert.Empty(t, params, "parameters for a binding whose names are both held")
			untouched(t, first)
			untouched(t, second)
		})
	}
	// managed-env-<uid>: the environment waits for its credentials Secret
	// (nothing is written without them), the name is taken, then they come.
	t.Run("ManagedEnvironment cluster Secret/unlabelled", func(t *testing.T) {
		t.Parallel()
		e := freshTenant(t, "trust-me")
		me := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(e.NS, "cluster"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL: kube.Config.Host, ClusterCredentialsSecret: "creds", Namespaces: []string{e.NS}}}
		create(t, me)
		squat := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ClusterSecretName(string(me.UID)),
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"name": "admin-cluster", "server": "https://admin.example.com"}}
		create(t, squat)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), squat) })
		create(t, &corev1.Secret{ObjectMeta: om(e.NS, "creds"), Type: v1.ManagedEnvironmentSecretType,
			StringData: map[string]string{"kubeconfig": namespacedKubeconfig(t, e.NS)}})
		waitFor(t, me, want{Type: v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: metav1.ConditionFalse,
			Reason: v1.ManagedEnvironmentReasonClusterSecretNameCollision, Msg: "was not created by the GitOps Service"})
		untouched(t, squat)
	})
	// seb-<uid>: the binding waits for its Snapshot, the name is taken, then
	// the Snapshot comes.
	t.Run("binding ApplicationSet/unlabelled", func(t *testing.T) {
		t.Parallel()
		e := freshTenant(t, "trust-set")
		appStudioTenant(t, e, "shop", nil)
		seb := &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, "b"), Spec: as.SnapshotEnvironmentBindingSpec{
			Application: "shop", Environment: "shop", Snapshot: "later"}}
		create(t, seb)
		waitFor(t, seb, errorOccurred("", `Snapshot "later" not found`))
		set := &argov1alpha1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ApplicationSetName(string(seb.UID))},
			Spec: argov1alpha1.ApplicationSetSpec{
				Generators: []argov1alpha1.ApplicationSetGenerator{{List: &argov1alpha1.ListGenerator{}}},
				Template: argov1alpha1.ApplicationSetTemplate{ApplicationSetTemplateMeta: argov1alpha1.ApplicationSetTemplateMeta{Name: "admin"},
					Spec: argov1alpha1.ApplicationSpec{Project: "default", Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: "monitoring"}}}}}
		create(t, set)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), set) })
		create(t, &as.Snapshot{ObjectMeta: om(e.NS, "later"), Spec: as.SnapshotSpec{Application: "shop",
			Components: []as.SnapshotComponent{{Name: "shop-web", ContainerImage: "quay.io/x/web:2"}}}})
		waitFor(t, seb, errorOccurred("", "was not created by the GitOps Service"))
		untouched(t, set)
	})
}

// Look-alikes: our labels naming a tenant's real CR (its UID is no secret to
// whoever may create an Application in project default), in project default.
func TestLookAlikesAreNotTrusted(t *testing.T) {
	ctx := context.Background()
	const evil = "https://git.example.com/evil/look-alike.git"
	lookAlike := func(t *testing.T, kind string, owner client.Object, extra map[string]string, status argov1alpha1.ApplicationStatus) *argov1alpha1.Application {
		l, a := ownership.Meta(kind, owner.GetNamespace(), owner.GetName(), string(owner.GetUID()))
		for k, v := range extra {
			l[k] = v
		}
		app := held(t, "look-alike-"+rand.String(6), l, a)
		// Applications have no status subresource: one update writes both.
		app.Spec.Source.RepoURL, app.Status = evil, status
		require.NoError(t, k8s.Update(ctx, app))
		return app
	}
	synced := argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced},
		Health: argov1alpha1.HealthStatus{Status: "Healthy"}}

	t.Run("tenant project and panel", func(t *testing.T) {
		t.Parallel()
		e := freshTenant(t, "trust-look")
		gd := deployment(e, "web", nil)
		create(t, gd)
		app := &argov1alpha1.Application{}
		require.Eventually(t, func() bool {
			return k8s.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}, app) == nil
		}, wait, tick, "no Application for the tenant's deployment")
		look := lookAlike(t, ownership.KindGitOpsDeployment, gd, nil, synced)

		// The tenant's project is not widened by it.
		project := &argov1alpha1.AppProject{}
		assert.Never(t, func() bool {
			return k8s.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: app.Spec.Project}, project) == nil &&
				strings.Contains(strings.Join(project.Spec.SourceRepos, " "), evil)
		}, 5*time.Second, tick, "a look-alike widened the tenant's project")

		// The panel backend shows the tenant's deployment for its own
		// Application only.
		srv := httptest.NewServer((&uiproxy.Server{Client: k8s, Writer: k8s, ArgoNamespace: argoNS,
			Token: func() []byte { return []byte("isolation") }}).Handler())
		defer srv.Close()
		status := func(a *argov1alpha1.Application) int {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/deployment", nil)
			require.NoError(t, err)
			req.Header.Set(uiproxy.HeaderToken, "isolation")
			req.Header.Set(uiproxy.HeaderApplication, argoNS+":"+a.Name)
			req.Header.Set(uiproxy.HeaderProject, a.Spec.Project)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			return resp.StatusCode
		}
		assert.Equal(t, http.StatusOK, status(app))
		assert.Equal(t, http.StatusNotFound, status(look), "the panel backend trusted a look-alike")
	})

	t.Run("binding status", func(t *testing.T) {
		t.Parallel()
		e := freshTenant(t, "trust-look-seb")
		appStudioTenant(t, e, "shop", nil)
		seb := &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, "b"), Spec: as.SnapshotEnvironmentBindingSpec{
			Application: "shop", Environment: "shop", Snapshot: "shop"}}
		create(t, seb)
		look := lookAlike(t, ownership.KindBinding, seb, map[string]string{as.LabelComponent: "shop-web"}, synced)
		poke(t, seb)
		assert.Never(t, func() bool {
			got := &as.SnapshotEnvironmentBinding{}
			if k8s.Get(ctx, client.ObjectKeyFromObject(seb), got) != nil {
				return false
			}
			for _, d := range got.Status.GitOpsDeployments {
				if d.GitOpsDeployment == look.Name {
					return true
				}
			}
			return false
		}, 5*time.Second, tick, "the binding's status shows a look-alike")
	})
}
