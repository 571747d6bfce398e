package uiproxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

// Pure tests of the handler's logic on controller-runtime's fake client (the
// real-API suite is ./apitest).

const (
	argoNS = "argocd"
	secret = "proxy-secret"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func meta(ns, name, uid string, age time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(t0.Add(-age))}
}

// ourApplication is an Application as the sidecar labels it for its owner.
func ourApplication(name, kind, tenant, owner, uid string, extra map[string]string) *argov1alpha1.Application {
	labels := map[string]string{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: tenant,
		ownership.LabelOwnerKind: kind, ownership.LabelOwnerUID: uid}
	for k, v := range extra {
		labels[k] = v
	}
	return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: name, Labels: labels,
		Annotations: map[string]string{ownership.AnnotationOwnerName: tenant + "/" + owner}},
		Spec: argov1alpha1.ApplicationSpec{Project: project(tenant)}}
}

// project is the tenant project of a test namespace (tenantNS gives it its UID).
func project(tenant string) string { return argocd.ProjectName("ns-uid-" + tenant) }

func serve(t *testing.T, objs ...client.Object) *httptest.Server {
	t.Helper()
	return serveFor(t, nil, objs...)
}

// serveFor is serve for one Argo CD instance's tenants (serves; nil: all).
func serveFor(t *testing.T, serves func(context.Context, string) bool, objs ...client.Object) *httptest.Server {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, argov1alpha1.AddToScheme(s))
	require.NoError(t, v1.AddToScheme(s))
	require.NoError(t, as.AddToScheme(s))
	require.NoError(t, corev1.AddToScheme(s))
	objs = append(objs, tenantNS("team-a", ""), tenantNS("team-b", ""))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	srv := httptest.NewServer((&uiproxy.Server{Client: c, ArgoNamespace: argoNS, Token: func() []byte { return []byte(secret) }, Serves: serves}).Handler())
	t.Cleanup(srv.Close)
	return srv
}

// call asks as argocd-server does (tok "" sends no secret header).
func call(t *testing.T, srv *httptest.Server, tok, app, project string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/deployment", nil)
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set(uiproxy.HeaderToken, tok)
	}
	req.Header.Set(uiproxy.HeaderApplication, app)
	req.Header.Set(uiproxy.HeaderProject, project)
	return send(t, req)
}

// send sends req and returns the status and the JSON body of the answer.
func send(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body := map[string]any{}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

func TestRefusesWhatArgoCDServerDidNotAuthorize(t *testing.T) {
	gd := &v1.GitOpsDeployment{ObjectMeta: meta("team-a", "web", "uid-a", 0)}
	victim := &v1.GitOpsDeployment{ObjectMeta: meta("team-b", "victim", "uid-b", 0)}
	app := ourApplication("app-a", ownership.KindGitOpsDeployment, "team-a", "web", "uid-a", nil)
	// Our labels, but the owner annotation names another tenant's deployment.
	forged := ourApplication("forged", ownership.KindGitOpsDeployment, "team-a", "victim", "uid-b", nil)
	forged.Annotations[ownership.AnnotationOwnerName] = "team-b/victim"
	// Right names, but the deployment was recreated since (another UID).
	stale := ourApplication("stale", ownership.KindGitOpsDeployment, "team-a", "web", "uid-old", nil)
	foreign := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "foreign"},
		Spec: argov1alpha1.ApplicationSpec{Project: "default"}}
	unknownKind := ourApplication("odd", "Secret", "team-a", "web", "uid-a", nil)
	// Look-alikes: every label and the UID of team-b's deployment, made by
	// someone who may create Applications in another project (issue 21).
	lookAlike := ourApplication("look-alike", ownership.KindGitOpsDeployment, "team-b", "victim", "uid-b", nil)
	lookAlike.Spec.Project = "default"
	inOtherTenant := ourApplication("look-alike-a", ownership.KindGitOpsDeployment, "team-b", "victim", "uid-b", nil)
	inOtherTenant.Spec.Project = project("team-a")
	srv := serve(t, gd, victim, app, forged, stale, foreign, unknownKind, lookAlike, inOtherTenant)

	cases := []struct {
		name, token, app, project string
		status                    int
	}{
		{"no secret header", "", argoNS + ":app-a", project("team-a"), http.StatusUnauthorized},
		{"wrong secret", "not-" + secret, argoNS + ":app-a", project("team-a"), http.StatusUnauthorized},
		{"malformed application header", secret, "app-a", project("team-a"), http.StatusBadRequest},
		{"Application outside the Argo CD namespace", secret, "team-a:app-a", project("team-a"), http.StatusNotFound},
		{"project argocd-server did not check", secret, argoNS + ":app-a", project("team-b"), http.StatusForbidden},
		{"no such Application", secret, argoNS + ":nope", project("team-a"), http.StatusNotFound},
		{"Application not made by us", secret, argoNS + ":foreign", "default", http.StatusNotFound},
		{"owner in another tenant", secret, argoNS + ":forged", project("team-a"), http.StatusNotFound},
		{"owner recreated (UID differs)", secret, argoNS + ":stale", project("team-a"), http.StatusNotFound},
		{"owner of a kind we do not show", secret, argoNS + ":odd", project("team-a"), http.StatusNotFound},
		{"look-alike in project default", secret, argoNS + ":look-alike", "default", http.StatusNotFound},
		{"look-alike in another tenant's project", secret, argoNS + ":look-alike-a", project("team-a"), http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := call(t, srv, tc.token, tc.app, tc.project)
			assert.Equal(t, tc.status, status, "%v", body)
			assert.NotEmpty(t, body["error"], "an error says why")
			assert.Nil(t, body["kind"], "nothing about any deployment")
			assert.NotContains(t, body["error"], "victim")
		})
	}
	status, body := call(t, srv, secret, argoNS+":app-a", project("team-a"))
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "web", body["name"])
}

func TestGitOpsDeploymentView(t *testing.T) {
	gd := &v1.GitOpsDeployment{ObjectMeta: meta("team-a", "web", "uid-a", 0), Spec: v1.GitOpsDeploymentSpec{
		Source: v1.ApplicationSource{RepoURL: "https://user:pass@git.example.test/apps.git", Path: "app", TargetRevision: "main"},
		Type:   v1.GitOpsDeploymentSpecTypeManual, Destination: v1.ApplicationDestination{Environment: "staging", Namespace: "web"}},
		Status: v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync},
			Health: v1.HealthStatus{Status: "Healthy"},
			Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue,
				Reason: "ErrorOccurred", Message: "repository not accessible"}}}}
	run := func(name, deployment string, age time.Duration, mut func(*v1.GitOpsDeploymentSyncRun)) *v1.GitOpsDeploymentSyncRun {
		r := &v1.GitOpsDeploymentSyncRun{ObjectMeta: meta("team-a", name, "uid-"+name, age),
			Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: "rev-" + name}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	objs := []client.Object{gd, ourApplication("app-a", ownership.KindGitOpsDeployment, "team-a", "web", "uid-a", nil),
		run("first", "web", 2*time.Minute, func(r *v1.GitOpsDeploymentSyncRun) {
			r.Status.Revision, r.Status.Phase = "abc1234def", "Failed"
			r.Status.Conditions = []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred,
				Status: v1.GitOpsConditionStatusTrue, Message: "sync failed: boom"}}
		}),
		run("second", "web", time.Minute, nil),
		run("of-another", "api", 0, nil),
		// The same deployment name in another tenant: never shown.
		run("neighbours", "web", 0, func(r *v1.GitOpsDeploymentSyncRun) { r.Namespace = "team-b" }),
	}
	for i := 0; i < 12; i++ {
		objs = append(objs, run("old-"+string(rune('a'+i)), "web", time.Hour+time.Duration(i)*time.Minute, nil))
	}
	srv := serve(t, objs...)
	status, body := call(t, srv, secret, argoNS+":app-a", project("team-a"))
	require.Equal(t, http.StatusOK, status, "%v", body)

	raw, err := json.Marshal(body)
	require.NoError(t, err)
	var d uiproxy.Deployment
	require.NoError(t, json.Unmarshal(raw, &d))
	assert.Equal(t, "GitOpsDeployment", d.Kind)
	assert.Equal(t, "manual", d.Type)
	assert.Equal(t, &uiproxy.Source{RepoURL: "https://git.example.test/apps.git", Path: "app", TargetRevision: "main"}, d.Source,
		"credentials in the URL never reach the UI")
	assert.NotContains(t, string(raw), "pass")
	assert.Equal(t, &uiproxy.Destination{Environment: "staging", Namespace: "web"}, d.Destination)
	assert.Equal(t, "OutOfSync", d.Sync)
	assert.Equal(t, "Healthy", d.Health)
	assert.Equal(t, []uiproxy.Condition{{Type: "ErrorOccurred", Status: "True", Reason: "ErrorOccurred", Message: "repository not accessible"}}, d.Conditions)
	require.Len(t, d.SyncRuns, 10, "bounded")
	assert.Equal(t, "second", d.SyncRuns[0].Name, "newest first")
	assert.Equal(t, "rev-second", d.SyncRuns[0].Revision, "the requested revision until it ran")
	assert.Equal(t, uiproxy.SyncRun{Name: "first", Revision: "abc1234def", Phase: "Failed", Message: "sync failed: boom",
		Created: "2026-01-02T03:02:05Z"}, d.SyncRuns[1])
	for _, r := range d.SyncRuns {
		assert.NotContains(t, []string{"of-another", "neighbours"}, r.Name)
	}
}

func TestBindingViewAndPromotionPath(t *testing.T) {
	env := func(ns, name, parent string, strategy as.DeploymentStrategyType) *as.Environment {
		return &as.Environment{ObjectMeta: meta(ns, name, "", 0), Spec: as.EnvironmentSpec{ParentEnvironment: parent, DeploymentStrategy: strategy}}
	}
	snap := func(ns, name, tag string) *as.Snapshot {
		return &as.Snapshot{ObjectMeta: meta(ns, name, "", 0), Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{
			{Name: "web", ContainerImage: "quay.io/" + ns + "/web:" + tag}, {Name: "db", ContainerImage: "quay.io/" + ns + "/db:v1"}}}}
	}
	bind := func(ns, env, snapshot, uid string) *as.SnapshotEnvironmentBinding {
		return &as.SnapshotEnvironmentBinding{ObjectMeta: meta(ns, "shop-"+env, uid, 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: env, Snapshot: snapshot,
				Components: []as.BindingComponent{{Name: "web"}, {Name: "db"}}},
			Status: as.SnapshotEnvironmentBindingStatus{GitOpsDeployments: []as.BindingStatusGitOpsDeployment{
				{ComponentName: "web", GitOpsDeploymentSyncStatus: "Synced", GitOpsDeploymentHealthStatus: "Healthy", GitOpsDeploymentCommitID: "c0ffee"}}}}
	}
	promotion := &as.PromotionRun{ObjectMeta: meta("team-a", "to-staging", "", time.Minute), Spec: as.PromotionRunSpec{Snapshot: "snap-1",
		Application: "shop", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging"}},
		Status: as.PromotionRunStatus{State: as.PromotionRunStateCompleted, CompletionResult: as.PromotionRunCompleteResultSuccess,
			EnvironmentStatus: []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "staging",
				Status: as.PromotionRunEnvironmentStatusSuccess, DisplayStatus: "All GitOpsDeployments are Synced/Healthy",
				Analysis: []as.AnalysisCheckStatus{{Name: "error-rate", Phase: as.AnalysisSuccessful, Value: "0.01", Successes: 3, Message: "0.01 <= 0.05",
					LastCheckTime: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 13, 5, 0, time.UTC)}}}}}}}
	objs := []client.Object{
		env("team-a", "dev", "", as.DeploymentStrategyAppStudioAutomated), env("team-a", "staging", "dev", as.DeploymentStrategyAppStudioAutomated),
		env("team-a", "prod", "staging", as.DeploymentStrategyManual),
		snap("team-a", "snap-1", "v1"), snap("team-a", "snap-2", "v2"),
		bind("team-a", "dev", "snap-2", "uid-dev"), bind("team-a", "staging", "snap-1", "uid-staging"), promotion,
		// Another tenant with the same names and an Environment of its own.
		env("team-b", "qa", "dev", as.DeploymentStrategyAppStudioAutomated), snap("team-b", "snap-2", "evil"),
		bind("team-b", "qa", "snap-2", "uid-b"),
		&as.PromotionRun{ObjectMeta: meta("team-b", "theirs", "", 0), Spec: as.PromotionRunSpec{Snapshot: "snap-2", Application: "shop"}},
		ourApplication("shop-dev-web", ownership.KindBinding, "team-a", "shop-dev", "uid-dev", map[string]string{as.LabelComponent: "web"}),
	}
	srv := serve(t, objs...)
	status, body := call(t, srv, secret, argoNS+":shop-dev-web", project("team-a"))
	require.Equal(t, http.StatusOK, status, "%v", body)
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "team-b", "nothing from another tenant")
	assert.NotContains(t, string(raw), "evil")
	var d uiproxy.Deployment
	require.NoError(t, json.Unmarshal(raw, &d))
	assert.Equal(t, "SnapshotEnvironmentBinding", d.Kind)
	assert.Equal(t, "dev", d.Environment)
	assert.Equal(t, "snap-2", d.Snapshot)
	assert.Equal(t, "web", d.Component)
	assert.Equal(t, "quay.io/team-a/web:v2", d.Image)
	require.Len(t, d.PromotionRuns, 1)
	assert.Equal(t, uiproxy.PromotionRun{Name: "to-staging", Snapshot: "snap-1", State: "Completed", Result: "Success",
		Environments: []string{"staging: success"}, Target: "staging", Created: "2026-01-02T03:03:05Z",
		Steps: []uiproxy.Step{{Step: 1, Environment: "staging", Status: "success", Message: "All GitOpsDeployments are Synced/Healthy",
			Analysis: []uiproxy.AnalysisResult{{Name: "error-rate", Phase: "Successful", Value: "0.01", Successes: 3, Message: "0.01 <= 0.05", Last: "2026-01-02T03:13:05Z"}}}}},
		d.PromotionRuns[0])
	webSynced := uiproxy.ComponentState{Name: "web", Sync: "Synced", Health: "Healthy", Commit: "c0ffee"}
	assert.Equal(t, []uiproxy.EnvironmentState{
		{Name: "dev", Strategy: "AppStudioAutomated", Depth: 0, Current: true, Binding: "shop-dev", Snapshot: "snap-2",
			Components: []uiproxy.ComponentState{{Name: "db", Image: "quay.io/team-a/db:v1"}, withImage(webSynced, "quay.io/team-a/web:v2")}},
		{Name: "staging", Parent: "dev", Strategy: "AppStudioAutomated", Depth: 1, Binding: "shop-staging", Snapshot: "snap-1",
			Components: []uiproxy.ComponentState{{Name: "db", Image: "quay.io/team-a/db:v1"}, withImage(webSynced, "quay.io/team-a/web:v1")},
			Changed:    []string{"web"}},
		{Name: "prod", Parent: "staging", Strategy: "Manual", Depth: 2},
	}, d.Path)
}

func withImage(c uiproxy.ComponentState, image string) uiproxy.ComponentState {
	c.Image = image
	return c
}

// With several Argo CD instances, an Application of a tenant another instance
// serves (one left behind, or a look-alike) is "not here", with no data.
func TestAnswersOnlyForThisInstancesTenants(t *testing.T) {
	gd := &v1.GitOpsDeployment{ObjectMeta: meta("team-a", "web", "uid-a", 0)}
	app := ourApplication("app-a", ownership.KindGitOpsDeployment, "team-a", "web", "uid-a", nil)
	ours := func(served string) func(context.Context, string) bool {
		return func(_ context.Context, ns string) bool { return ns == served }
	}
	status, body := call(t, serveFor(t, ours("team-b"), gd, app), secret, argoNS+":app-a", project("team-a"))
	assert.Equal(t, http.StatusNotFound, status, "%v", body)
	assert.Contains(t, body["error"], "served by another Argo CD instance")
	assert.Nil(t, body["kind"], "nothing about the deployment")

	status, body = call(t, serveFor(t, ours("team-a"), gd, app), secret, argoNS+":app-a", project("team-a"))
	assert.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "GitOpsDeployment", body["kind"])
}
