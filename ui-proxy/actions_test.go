package uiproxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// actor is a request to an action endpoint as argocd-server forwards it.
type actor struct {
	method, path, app, project string
	// user, userID and groups: the headers argocd-server sets (or, when it
	// sets none, the ones the client sent).
	user, userID, groups string
	body                 string
}

func serveActions(t *testing.T, objs ...client.Object) (*httptest.Server, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, argov1alpha1.AddToScheme(s))
	require.NoError(t, v1.AddToScheme(s))
	require.NoError(t, as.AddToScheme(s))
	require.NoError(t, corev1.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	srv := httptest.NewServer((&uiproxy.Server{Client: c, Writer: c, ArgoNamespace: argoNS, Token: func() []byte { return []byte(secret) }}).Handler())
	t.Cleanup(srv.Close)
	return srv, c
}

func (a actor) do(t *testing.T, srv *httptest.Server) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(a.method, srv.URL+a.path, strings.NewReader(a.body))
	require.NoError(t, err)
	req.Header.Set(uiproxy.HeaderToken, secret)
	req.Header.Set(uiproxy.HeaderApplication, argoNS+":"+a.app)
	req.Header.Set(uiproxy.HeaderProject, a.project)
	for h, v := range map[string]string{uiproxy.HeaderUsername: a.user, uiproxy.HeaderUserID: a.userID, "Argocd-User-Groups": a.groups} {
		if v != "" {
			req.Header.Set(h, v)
		}
	}
	return send(t, req)
}

func tenantNS(name, subjects string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("ns-uid-" + name),
		Annotations: map[string]string{argocd.AnnotationArgoCDSubjects: subjects}}}
}

// runs are the SyncRuns and PromotionRuns in every namespace.
func runs(t *testing.T, c client.Client) (sync []v1.GitOpsDeploymentSyncRun, promote []as.PromotionRun) {
	t.Helper()
	var sl v1.GitOpsDeploymentSyncRunList
	require.NoError(t, c.List(context.Background(), &sl))
	var pl as.PromotionRunList
	require.NoError(t, c.List(context.Background(), &pl))
	return sl.Items, pl.Items
}

func TestPanelActions(t *testing.T) {
	// Tenant team-a maps alice by name and the group "devs"; team-b maps bob.
	objs := []client.Object{
		tenantNS("team-a", "alice, devs"), tenantNS("team-b", "bob"),
		&v1.GitOpsDeployment{ObjectMeta: meta("team-a", "web", "uid-gd", 0), Spec: v1.GitOpsDeploymentSpec{Type: v1.GitOpsDeploymentSpecTypeManual}},
		ourApplication("gd-app", ownership.KindGitOpsDeployment, "team-a", "web", "uid-gd", nil),
		&as.SnapshotEnvironmentBinding{ObjectMeta: meta("team-a", "shop-dev", "uid-seb", 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-1"}},
		ourApplication("seb-app", ownership.KindBinding, "team-a", "shop-dev", "uid-seb", nil),
		&as.Snapshot{ObjectMeta: meta("team-a", "snap-1", "", 0), Spec: as.SnapshotSpec{Application: "shop"}},
		&as.Environment{ObjectMeta: meta("team-a", "dev", "", 0)},
		&as.Environment{ObjectMeta: meta("team-a", "staging", "", 0), Spec: as.EnvironmentSpec{ParentEnvironment: "dev"}},
		// An Environment of another tenant, and a binding whose Snapshot is another application's.
		&as.Environment{ObjectMeta: meta("team-b", "prod", "", 0)},
		&as.SnapshotEnvironmentBinding{ObjectMeta: meta("team-a", "odd-dev", "uid-odd", 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "odd", Environment: "dev", Snapshot: "snap-1"}},
		ourApplication("odd-app", ownership.KindBinding, "team-a", "odd-dev", "uid-odd", nil),
		// Tenant B's deployment.
		&v1.GitOpsDeployment{ObjectMeta: meta("team-b", "theirs", "uid-b", 0)},
		ourApplication("b-app", ownership.KindGitOpsDeployment, "team-b", "theirs", "uid-b", nil),
		// A look-alike of tenant B's in project default (issue 21).
		lookAlike("look-alike", ourApplication("look-alike", ownership.KindGitOpsDeployment, "team-b", "theirs", "uid-b", nil)),
	}
	srv, c := serveActions(t, objs...)
	sync := actor{method: http.MethodPost, path: "/api/v1/sync", app: "gd-app", project: project("team-a")}
	promote := actor{method: http.MethodPost, path: "/api/v1/promote", app: "seb-app", project: project("team-a"), body: `{"environment":"staging"}`}
	with := func(a actor, f func(*actor)) actor { f(&a); return a }

	refused := []struct {
		name   string
		a      actor
		status int
		says   string
	}{
		{"no user", sync, http.StatusForbidden, "did not say who you are"},
		{"unmapped user", with(sync, func(a *actor) { a.user = "mallory" }), http.StatusForbidden, "user mallory may not act here"},
		{"user in a mapped group only", with(sync, func(a *actor) { a.user, a.groups = "carol", "devs" }), http.StatusForbidden, "group entries are not trusted"},
		{"forged groups header, no user", with(sync, func(a *actor) { a.groups = "devs,alice" }), http.StatusForbidden, "did not say who you are"},
		{"a group's name as the user on 3.x (user id differs)", with(sync, func(a *actor) { a.user, a.userID = "devs", "mallory" }), http.StatusForbidden, "disagree"},
		{"another tenant's user", with(sync, func(a *actor) { a.user = "bob" }), http.StatusForbidden, "namespace team-a"},
		{"another tenant's user promoting", with(promote, func(a *actor) { a.user = "bob" }), http.StatusForbidden, "user bob may not act here"},
		{"project argocd-server did not check", with(sync, func(a *actor) { a.user, a.project = "bob", project("team-b") }), http.StatusForbidden, "does not name the project"},
		{"GET of an action", with(sync, func(a *actor) { a.user, a.method = "alice", http.MethodGet }), http.StatusMethodNotAllowed, "GET is not allowed"},
		{"GET of promote", with(promote, func(a *actor) { a.user, a.method = "alice", http.MethodGet }), http.StatusMethodNotAllowed, "GET is not allowed"},
		{"no such Environment", with(promote, func(a *actor) { a.user, a.body = "alice", `{"environment":"qa"}` }), http.StatusBadRequest, "no Environment qa in namespace team-a"},
		{"another tenant's Environment", with(promote, func(a *actor) { a.user, a.body = "alice", `{"environment":"prod"}` }), http.StatusBadRequest, "no Environment prod"},
		{"the Environment it runs in", with(promote, func(a *actor) { a.user, a.body = "alice", `{"environment":"dev"}` }), http.StatusBadRequest, "already runs in dev"},
		{"no environment", with(promote, func(a *actor) { a.user, a.body = "alice", `{}` }), http.StatusBadRequest, "the body must be"},
		{"another application's Snapshot", with(promote, func(a *actor) { a.user, a.app = "alice", "odd-app" }), http.StatusConflict, "not a Snapshot of application odd"},
		{"sync through a look-alike in project default", actor{method: http.MethodPost, path: "/api/v1/sync", app: "look-alike", project: "default", user: "bob"},
			http.StatusNotFound, "was not made by the GitOps Service"},
		{"sync of a binding's Application", with(sync, func(a *actor) { a.user, a.app = "alice", "seb-app" }), http.StatusBadRequest, "not made for a GitOpsDeployment"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, body := tc.a.do(t, srv)
			assert.Equal(t, tc.status, status, "%v", body)
			assert.Contains(t, body["error"], tc.says)
			s, p := runs(t, c)
			assert.Empty(t, s, "a SyncRun was created")
			assert.Empty(t, p, "a PromotionRun was created")
		})
	}

	// Alice, named by the mapping (on 3.x with her user id, on 2.14 without).
	status, body := with(sync, func(a *actor) { a.user, a.userID = "alice", "alice" }).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "GitOpsDeploymentSyncRun", body["kind"])
	assert.Equal(t, "team-a", body["namespace"])
	status, body = with(promote, func(a *actor) { a.user = "alice" }).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "PromotionRun", body["kind"])
	s, p := runs(t, c)
	require.Len(t, s, 1)
	assert.Equal(t, "team-a", s[0].Namespace)
	assert.Equal(t, "web", s[0].Spec.GitopsDeploymentName)
	assert.True(t, strings.HasPrefix(s[0].Name, "web-panel-"), s[0].Name)
	require.Len(t, p, 1)
	assert.Equal(t, "team-a", p[0].Namespace)
	assert.Equal(t, body["name"], p[0].Name)
	assert.Equal(t, as.PromotionRunSpec{Snapshot: "snap-1", Application: "shop", RequestedBy: &as.Requester{User: "argocd:alice"},
		ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging"}}, p[0].Spec,
		"the run names the Argo CD user who promoted (the admission policy lets only the sidecar do so)")

	// Bob acts on his own tenant's deployment: the run is in team-b.
	status, body = actor{method: http.MethodPost, path: "/api/v1/sync", app: "b-app", project: project("team-b"), user: "bob"}.do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "team-b", body["namespace"])

	// The CLI's sync names a revision (the SyncRun reconciler checks it);
	// a body that is not the request's shape creates nothing.
	status, body = with(sync, func(a *actor) { a.user, a.body = "alice", `{"revision": "1a2b3c"}` }).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	var sl v1.GitOpsDeploymentSyncRunList
	require.NoError(t, c.List(context.Background(), &sl, client.InNamespace("team-a")))
	revisions := map[string]string{}
	for _, r := range sl.Items {
		revisions[r.Name] = r.Spec.RevisionID
	}
	assert.Equal(t, "1a2b3c", revisions[body["name"].(string)])
	status, body = with(sync, func(a *actor) { a.user, a.body = "alice", `["revision"]` }).do(t, srv)
	assert.Equal(t, http.StatusBadRequest, status, "%v", body)
	s, _ = runs(t, c)
	assert.Len(t, s, 3, "no run for a malformed body")
}

// lookAlike is app moved to project default, as anyone who may create an
// Application there can.
func lookAlike(name string, app *argov1alpha1.Application) *argov1alpha1.Application {
	app.Name, app.Spec.Project = name, "default"
	return app
}
