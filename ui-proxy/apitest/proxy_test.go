//go:build !unit

// The real-API suite of the ui-proxy: the sidecar's reconcilers on a real API
// server make the Applications, the proxy reads that API server. A package of
// its own so that `make unit` (./ui-proxy/) stays free of servers.
package apitest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

const argoNS = stack.SuiteArgoNamespace

var (
	k8s   client.Client
	proxy *httptest.Server
	token = "proxy-token-" + rand.String(12)
)

// The suite runs the sidecar's reconcilers on a real API server (they make
// the Applications) and the proxy's handler reading that API server.
func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "uiproxy", func(s *stack.Suite) error {
		k8s = s.Client
		proxy = httptest.NewServer((&uiproxy.Server{Client: s.Client, Writer: s.Client, ArgoNamespace: argoNS,
			Token: func() []byte { return []byte(token) }}).Handler())
		s.Cleanup(func(bool) { proxy.Close() })
		return nil
	}))
}

func tenant(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + rand.String(6)}}
	require.NoError(t, k8s.Create(context.Background(), ns))
	return ns.Name
}

// tenantProject is the AppProject of tenant namespace ns, the project of the
// Applications we make for its CRs.
func tenantProject(t *testing.T, ns string) string {
	t.Helper()
	obj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Name: ns}, obj))
	return argocd.ProjectName(string(obj.UID))
}

// get calls the proxy as argocd-server would; an empty tok sends none.
func get(t *testing.T, tok, app, project string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, proxy.URL+"/api/v1/deployment", nil)
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

// deployed creates a GitOpsDeployment and returns the Application made for it.
func deployed(t *testing.T, ns, name string) *argov1alpha1.Application {
	t.Helper()
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.GitOpsDeploymentSpec{
		Source: v1.ApplicationSource{RepoURL: "https://git.example.test/apps.git", Path: "app"}, Type: v1.GitOpsDeploymentSpecTypeManual}}
	require.NoError(t, k8s.Create(context.Background(), gd))
	app := &argov1alpha1.Application{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}, app) == nil
	}, 30*time.Second, 100*time.Millisecond, "no Application for %s", name)
	return app
}

func TestGitOpsDeploymentBehindAnApplication(t *testing.T) {
	ns := tenant(t)
	app := deployed(t, ns, "guestbook")
	status, body := get(t, token, argoNS+":"+app.Name, app.Spec.Project)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "GitOpsDeployment", body["kind"])
	assert.Equal(t, ns, body["namespace"])
	assert.Equal(t, "guestbook", body["name"])
	assert.Equal(t, "manual", body["type"])
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	app := deployed(t, ns, "mine")
	name := argoNS + ":" + app.Name

	// Not ours: an Application someone else made in the Argo CD namespace.
	foreign := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "foreign-" + rand.String(5)},
		Spec: argov1alpha1.ApplicationSpec{Project: "default", Source: &argov1alpha1.ApplicationSource{RepoURL: "https://x.test/r.git"},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "x"}}}
	require.NoError(t, k8s.Create(ctx, foreign))
	// Forged: our labels, but the owner annotation names another tenant's deployment.
	other := tenant(t)
	deployed(t, other, "victim")
	forged := foreign.DeepCopy()
	forged.Name, forged.ResourceVersion = "forged-"+rand.String(5), ""
	forged.Labels = map[string]string{}
	for k, v := range app.Labels {
		forged.Labels[k] = v
	}
	forged.Labels[ownership.LabelOwnerUID] = "forged-" + rand.String(5)
	forged.Annotations = map[string]string{ownership.AnnotationOwnerName: other + "/victim"}
	require.NoError(t, k8s.Create(ctx, forged))

	cases := []struct {
		name, token, app, project string
		status                    int
	}{
		{"no token", "", name, app.Spec.Project, http.StatusUnauthorized},
		{"wrong token", "not-" + token, name, app.Spec.Project, http.StatusUnauthorized},
		{"malformed application header", token, app.Name, app.Spec.Project, http.StatusBadRequest},
		{"another namespace", token, "default:" + app.Name, app.Spec.Project, http.StatusNotFound},
		{"project argocd-server did not check", token, name, "default", http.StatusForbidden},
		{"missing application", token, argoNS + ":nope", "default", http.StatusNotFound},
		{"not made by us", token, argoNS + ":" + foreign.Name, "default", http.StatusNotFound},
		{"owner in another tenant", token, argoNS + ":" + forged.Name, "default", http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, tc.token, tc.app, tc.project)
			assert.Equal(t, tc.status, status, "%v", body)
			assert.NotEmpty(t, body["error"], "an error says why")
			assert.Nil(t, body["kind"], "nothing about the deployment")
		})
	}
}

// Look-alikes (issue 21): whoever may create an Application in some project
// copies every label and annotation of a tenant's Application (its owner's
// name and UID are no secret to them): the proxy shows nothing of the tenant.
func TestLookAlikeApplications(t *testing.T) {
	ctx := context.Background()
	ns, other := tenant(t), tenant(t)
	app := deployed(t, ns, "guestbook")
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-1"}}
	require.NoError(t, k8s.Create(ctx, seb))
	ofBinding := bindingApplication(t, seb, "web")
	// Its own Applications are shown.
	for _, a := range []*argov1alpha1.Application{app, ofBinding} {
		status, body := get(t, token, argoNS+":"+a.Name, a.Spec.Project)
		require.Equal(t, http.StatusOK, status, "%s: %v", a.Name, body)
	}
	for _, tc := range []struct{ name, project string }{
		{"in project default", "default"},
		{"in another tenant's project", tenantProject(t, other)},
	} {
		for _, a := range []*argov1alpha1.Application{app, ofBinding} {
			look := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "look-alike-" + rand.String(6),
				Labels: a.Labels, Annotations: map[string]string{ownership.AnnotationOwnerName: a.Annotations[ownership.AnnotationOwnerName]}},
				Spec: argov1alpha1.ApplicationSpec{Project: tc.project, Source: a.Spec.Source, Destination: a.Spec.Destination}}
			require.NoError(t, k8s.Create(ctx, look))
			t.Run(tc.name+" of "+a.Labels[ownership.LabelOwnerKind], func(t *testing.T) {
				status, body := get(t, token, argoNS+":"+look.Name, tc.project)
				assert.Equal(t, http.StatusNotFound, status, "%v", body)
				assert.Nil(t, body["kind"], "nothing of the tenant's deployment")
				status, body = post(t, "sync", look, "alice", "", "")
				assert.Equal(t, http.StatusNotFound, status, "%v", body)
			})
		}
	}
}

// An Application of a binding (as Argo CD's applicationset-controller makes
// them from our ApplicationSet) shows the binding, the component's image and
// the application's PromotionRuns.
func TestBindingBehindAnApplication(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-2"},
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/x/web:v2"}}}}))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-2"}}
	require.NoError(t, k8s.Create(ctx, seb))
	for _, n := range []string{"older", "newer"} {
		require.NoError(t, k8s.Create(ctx, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}, Spec: as.PromotionRunSpec{
			Snapshot: "snap-2", Application: "shop", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "dev"}}}))
		time.Sleep(1100 * time.Millisecond) // creation times have seconds
	}
	set := argocd.ApplicationSet(argoNS, seb)
	labels := map[string]string{as.LabelApplication: "shop", as.LabelComponent: "web", as.LabelEnvironment: "dev"}
	for k, v := range set.Labels {
		labels[k] = v
	}
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "shop-dev-web-" + rand.String(4),
		Labels: labels, Annotations: set.Annotations},
		Spec: argov1alpha1.ApplicationSpec{Project: tenantProject(t, ns), Source: &argov1alpha1.ApplicationSource{RepoURL: "https://x.test/r.git"},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: ns}}}
	require.NoError(t, k8s.Create(ctx, app))

	status, body := get(t, token, argoNS+":"+app.Name, app.Spec.Project)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "SnapshotEnvironmentBinding", body["kind"])
	assert.Equal(t, "shop-dev", body["name"])
	assert.Equal(t, "dev", body["environment"])
	assert.Equal(t, "snap-2", body["snapshot"])
	assert.Equal(t, "web", body["component"])
	assert.Equal(t, "quay.io/x/web:v2", body["image"])
	runs, _ := body["promotionRuns"].([]any)
	require.Len(t, runs, 2)
	assert.Equal(t, "newer", runs[0].(map[string]any)["name"], "newest first")

	// The binding replaced by another of the same name is not this Application's.
	require.NoError(t, k8s.Delete(ctx, seb))
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(seb), &as.SnapshotEnvironmentBinding{}) != nil
	}, 30*time.Second, 100*time.Millisecond)
	seb.ResourceVersion, seb.UID = "", ""
	require.NoError(t, k8s.Create(ctx, seb))
	status, body = get(t, token, argoNS+":"+app.Name, app.Spec.Project)
	assert.Equal(t, http.StatusNotFound, status, "%v", body)
}

// The promotion path: every Environment of the tenant (parents first), the
// Snapshot each runs, per-component images, what differs from the parent;
// nothing from another tenant's namespace.
func TestPromotionPath(t *testing.T) {
	ctx := context.Background()
	ns, neighbour := tenant(t), tenant(t)
	for _, e := range []as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: as.EnvironmentSpec{ParentEnvironment: "staging", DeploymentStrategy: as.DeploymentStrategyManual}},
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DisplayName: "Staging"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, &e))
	}
	// The neighbour has an Environment, Snapshot and binding of the same names.
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: neighbour, Name: "qa"}}))
	for _, n := range []string{ns, neighbour} {
		for _, tag := range []string{"v1", "v2"} {
			require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "snap-" + tag[1:]},
				Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{
					{Name: "web", ContainerImage: "quay.io/" + n + "/web:" + tag}, {Name: "db", ContainerImage: "quay.io/" + n + "/db:v1"}}}}))
		}
	}
	bind := func(n, env, snap string) *as.SnapshotEnvironmentBinding {
		seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "shop-" + env},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: env, Snapshot: snap,
				Components: []as.BindingComponent{{Name: "web"}, {Name: "db"}}}}
		require.NoError(t, k8s.Create(ctx, seb))
		return seb
	}
	dev := bind(ns, "dev", "snap-2")
	bind(ns, "staging", "snap-1")
	bind(neighbour, "qa", "snap-1")
	require.NoError(t, k8s.Create(ctx, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: neighbour, Name: "theirs"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-2", Application: "shop", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "qa"}}}))

	app := bindingApplication(t, dev, "web")
	status, body := get(t, token, argoNS+":"+app.Name, app.Spec.Project)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Nil(t, body["promotionRuns"], "the neighbour's PromotionRun is not shown")
	raw, err := json.Marshal(body["path"])
	require.NoError(t, err)
	var path []uiproxy.EnvironmentState
	require.NoError(t, json.Unmarshal(raw, &path))
	assert.Equal(t, []uiproxy.EnvironmentState{
		{Name: "dev", Strategy: "Manual", Depth: 0, Current: true, Binding: "shop-dev", Snapshot: "snap-2", Components: []uiproxy.ComponentState{
			{Name: "db", Image: "quay.io/" + ns + "/db:v1"},
			{Name: "web", Image: "quay.io/" + ns + "/web:v2"}}},
		{Name: "staging", DisplayName: "Staging", Parent: "dev", Strategy: "Manual", Depth: 1, Binding: "shop-staging", Snapshot: "snap-1",
			Components: []uiproxy.ComponentState{{Name: "db", Image: "quay.io/" + ns + "/db:v1"}, {Name: "web", Image: "quay.io/" + ns + "/web:v1"}},
			Changed:    []string{"web"}},
		{Name: "prod", Parent: "staging", Strategy: "Manual", Depth: 2},
	}, path)
}

// A GitOpsDeployment's source, destination
// and SyncRuns, newest first, only its own.
func TestGitOpsDeploymentSourceAndSyncRuns(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: v1.GitOpsDeploymentSpec{
		Source: v1.ApplicationSource{RepoURL: "https://git.example.test/apps.git", Path: "app", TargetRevision: "main"},
		Type:   v1.GitOpsDeploymentSpecTypeManual, Destination: v1.ApplicationDestination{Namespace: ns}}}
	require.NoError(t, k8s.Create(ctx, gd))
	for _, n := range []string{"first", "second"} {
		require.NoError(t, k8s.Create(ctx, &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n},
			Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "web", RevisionID: "rev-" + n}}))
		time.Sleep(1100 * time.Millisecond) // creation times have seconds
	}
	require.NoError(t, k8s.Create(ctx, &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "not-web"}}))
	app := &argov1alpha1.Application{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}, app) == nil
	}, 30*time.Second, 100*time.Millisecond)

	status, body := get(t, token, argoNS+":"+app.Name, app.Spec.Project)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, map[string]any{"repoURL": "https://git.example.test/apps.git", "path": "app", "targetRevision": "main"}, body["source"])
	assert.Equal(t, map[string]any{"namespace": ns}, body["destination"])
	runs, _ := body["syncRuns"].([]any)
	require.Len(t, runs, 2, "%v", body["syncRuns"])
	assert.Equal(t, "second", runs[0].(map[string]any)["name"], "newest first")
	assert.Equal(t, "rev-second", runs[0].(map[string]any)["revision"])
}

// bindingApplication makes the Application of a binding's component as Argo
// CD's applicationset-controller does from our ApplicationSet.
func bindingApplication(t *testing.T, seb *as.SnapshotEnvironmentBinding, component string) *argov1alpha1.Application {
	t.Helper()
	set := argocd.ApplicationSet(argoNS, seb)
	labels := map[string]string{as.LabelApplication: seb.Spec.Application, as.LabelComponent: component, as.LabelEnvironment: seb.Spec.Environment}
	for k, v := range set.Labels {
		labels[k] = v
	}
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: seb.Name + "-" + component + "-" + rand.String(4),
		Labels: labels, Annotations: set.Annotations},
		Spec: argov1alpha1.ApplicationSpec{Project: tenantProject(t, seb.Namespace), Source: &argov1alpha1.ApplicationSource{RepoURL: "https://x.test/r.git"},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: seb.Namespace}}}
	require.NoError(t, k8s.Create(context.Background(), app))
	return app
}

// post calls an action as argocd-server would for user (with groups).
func post(t *testing.T, action string, app *argov1alpha1.Application, user, groups, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, proxy.URL+"/api/v1/"+action, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(uiproxy.HeaderToken, token)
	req.Header.Set(uiproxy.HeaderApplication, argoNS+":"+app.Name)
	req.Header.Set(uiproxy.HeaderProject, app.Spec.Project)
	req.Header.Set(uiproxy.HeaderUsername, user)
	if groups != "" {
		req.Header.Set("Argocd-User-Groups", groups)
	}
	return send(t, req)
}

// Panel actions on a real API server: the runs the proxy makes pass the CRDs'
// validation, in the tenant's namespace, only for a user the mapping names.
func TestPanelActions(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+argocd.AnnotationArgoCDSubjects+`":"alice,devs"}}}`))
	require.NoError(t, k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch))
	app := deployed(t, ns, "guestbook")

	status, body := post(t, "sync", app, "carol", "devs", "{}")
	assert.Equal(t, http.StatusForbidden, status, "%v", body)
	assert.Contains(t, body["error"], "group entries are not trusted")
	status, body = post(t, "sync", app, "alice", "", "{}")
	require.Equal(t, http.StatusCreated, status, "%v", body)
	sr := &v1.GitOpsDeploymentSyncRun{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: body["name"].(string)}, sr))
	assert.Equal(t, "guestbook", sr.Spec.GitopsDeploymentName)
	var syncRuns v1.GitOpsDeploymentSyncRunList
	require.NoError(t, k8s.List(ctx, &syncRuns, client.InNamespace(ns)))
	assert.Len(t, syncRuns.Items, 1, "the refused Sync made a run")

	for _, e := range []as.Environment{{ObjectMeta: metav1.ObjectMeta{Name: "dev"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev"}}} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, &e))
	}
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-1"},
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/x/web:v1"}}}}))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-1"}}
	require.NoError(t, k8s.Create(ctx, seb))
	bapp := bindingApplication(t, seb, "web")
	status, body = post(t, "promote", bapp, "mallory", "", `{"environment":"staging"}`)
	assert.Equal(t, http.StatusForbidden, status, "%v", body)
	status, body = post(t, "promote", bapp, "alice", "", `{"environment":"staging"}`)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	pr := &as.PromotionRun{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: body["name"].(string)}, pr))
	assert.Equal(t, as.PromotionRunSpec{Snapshot: "snap-1", Application: "shop", RequestedBy: &as.Requester{User: "argocd:alice"},
		ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging"}}, pr.Spec, "the run names the Argo CD user who promoted")
	// Named and labelled as every client's promotion (as.NewPromotion).
	assert.Regexp(t, `^snap-1-to-staging-[a-z0-9]{5}$`, pr.Name)
	assert.Equal(t, map[string]string{as.LabelApplication: "shop", as.LabelEnvironment: "staging"}, pr.Labels)
}
