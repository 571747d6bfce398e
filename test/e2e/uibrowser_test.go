package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// argocd-server serves UI extensions from this one path on the machine.
const extensionsDir = "/tmp/extensions"

// installPanel puts the panel where every argocd-server on the machine loads
// UI extensions from, in a folder of its own for this test (removed after),
// as argocd-extension-installer does: the extension tarball the project ships
// (hack/uiextension, `make ui-extension-tarball`), unpacked there.
func installPanel(t *testing.T) {
	t.Helper()
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	out := t.TempDir()
	cmd := exec.Command("go", "run", "./hack/uiextension", "-version", "e2e", "-out", out)
	cmd.Dir = root
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "packing the UI extension: %s", msg)
	dir := filepath.Join(extensionsDir, "gitops-service-test-"+rand.String(8))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	untar(t, filepath.Join(out, "extension-gitops-service-e2e.tar.gz"), dir)
	_, err = os.Stat(filepath.Join(dir, "resources", "gitops-service", "extension-gitops-service.js"))
	require.NoError(t, err, "the tarball does not hold the installer's layout")
}

// untar unpacks a gzipped tar of directories and regular files into dir.
func untar(t *testing.T, tarball, dir string) {
	t.Helper()
	f, err := os.Open(tarball)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(target, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(target, data, 0o644))
		default:
			t.Fatalf("unexpected entry %s of type %c in the extension tarball", h.Name, h.Typeflag)
		}
	}
}

// waitAccess waits until user may get the Applications (argocd CLI).
func waitAccess(t *testing.T, user, password string, apps ...string) {
	t.Helper()
	cli, err := argo.Login(context.Background(), user, password)
	require.NoError(t, err)
	for _, app := range apps {
		var out string
		require.Eventually(t, func() bool {
			out, err = cli.Run(context.Background(), "app", "get", app)
			return err == nil
		}, deployWait, poll, "%s never could get Application %s: %s", user, app, out)
	}
}

// screenshotDir is where the screenshots go: $GITOPS_SERVICE_SCREENSHOTS, else
// _output/ui-screenshots/argocd-v<version>/ in the repository (git-ignored).
func screenshotDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("GITOPS_SERVICE_SCREENSHOTS")
	if d == "" {
		root, err := stack.RepoRoot()
		require.NoError(t, err)
		d = filepath.Join(root, "_output", "ui-screenshots", "argocd-v"+stack.ArgoCDVersion)
	}
	require.NoError(t, os.MkdirAll(d, 0o755))
	t.Logf("screenshots: %s", d)
	return d
}

// browserUser is a tenant user logged in to argocd-server in its own browser.
type browserUser struct {
	t      *testing.T
	ctx    context.Context
	server string
	shots  string
}

// newBrowser starts a browser of its own (fresh profile) for one user.
func newBrowser(t *testing.T, server, shots string) *browserUser {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser is stopped, and its removal then
	// fails the test (CI: "unlinkat .../Default: directory not empty").
	profile, err := os.MkdirTemp("", "gitops-ui-browser-")
	require.NoError(t, err)
	t.Cleanup(func() { // runs after cancel below
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	bctx, cancel, err := stack.NewBrowser(context.Background(), profile)
	require.NoError(t, err)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(bctx, 10*time.Minute)
	t.Cleanup(cancelTimeout)
	return &browserUser{t: t, ctx: ctx, server: server, shots: shots}
}

// loginWithForm logs user in through Argo CD's login page: types the
// credentials and clicks "Sign in" (the form's React submit handler posts
// /api/v1/session, which sets the argocd.token cookie; a DOM form.submit()
// would bypass that handler and just reload the page). Selectors are CSS
// (ByQuery): chromedp's default BySearch also matches them as plain text, e.g.
// in the page's <style> elements, which are never visible.
func loginWithForm(t *testing.T, server, user, password, shots string) *browserUser {
	t.Helper()
	b := newBrowser(t, server, shots)
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	err := chromedp.Run(ctx,
		chromedp.Navigate("http://"+server+"/login"),
		chromedp.WaitVisible(`input[type=password]`, chromedp.ByQuery),
		chromedp.SendKeys(`.login__box input:not([type=password])`, user, chromedp.ByQuery),
		chromedp.SendKeys(`input[type=password]`, password, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.applications-tiles`, chromedp.ByQuery),
	)
	if err != nil {
		b.failure("login-" + user)
		t.Fatalf("logging in as %s through the login page: %v", user, err)
	}
	return b
}

// loginWithToken logs user in by API (POST /api/v1/session) and gives the
// browser the session cookie argocd-server would have set.
func loginWithToken(t *testing.T, server, user, password, shots string) *browserUser {
	t.Helper()
	token, err := argo.Session(context.Background(), user, password)
	require.NoError(t, err)
	b := newBrowser(t, server, shots)
	require.NoError(t, chromedp.Run(b.ctx,
		network.SetCookie(stack.AuthCookie, token).WithDomain(strings.Split(server, ":")[0]).WithPath("/").WithHTTPOnly(true),
		chromedp.Navigate("http://"+server+"/applications"),
		chromedp.WaitVisible(`.applications-tiles`, chromedp.ByQuery),
	), "opening Argo CD as %s with a session cookie", user)
	return b
}

// failure keeps what the page showed when a step failed: a screenshot and its HTML.
func (b *browserUser) failure(name string) {
	b.screenshot("failed-" + name)
	var html string
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.OuterHTML("html", &html, chromedp.ByQuery)); err == nil {
		path := filepath.Join(b.shots, "failed-"+name+".html")
		if os.WriteFile(path, []byte(html), 0o644) == nil {
			b.t.Logf("page HTML: %s", path)
		}
	}
}

// openPanel opens the GitOps Service tab of an Application.
func (b *browserUser) openPanel(app string) {
	b.t.Helper()
	node := url.QueryEscape(fmt.Sprintf("argoproj.io/Application/%s/%s/0", argo.Namespace, app))
	require.NoError(b.t, chromedp.Run(b.ctx,
		chromedp.Navigate(fmt.Sprintf("http://%s/applications/%s/%s?view=tree&node=%s&tab=extension-0", b.server, argo.Namespace, app, node)),
	))
}

// openApp opens an Application's page (no resource panel open).
func (b *browserUser) openApp(app string) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Run(b.ctx,
		chromedp.Navigate(fmt.Sprintf("http://%s/applications/%s/%s?view=tree", b.server, argo.Namespace, app))))
}

// waitText waits until the element matching sel shows want.
func (b *browserUser) waitText(sel, want string) string {
	b.t.Helper()
	var got string
	deadline := time.Now().Add(deployWait)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		err := chromedp.Run(ctx, chromedp.Text(sel, &got, chromedp.ByQuery, chromedp.NodeVisible))
		cancel()
		if err == nil && strings.Contains(got, want) {
			return got
		}
		time.Sleep(poll)
	}
	b.failure(strings.NewReplacer(" ", "_", "[", "", "]", "", "=", "-", "'", "", "\"", "").Replace(sel))
	b.t.Fatalf("%q never showed %q; it showed %q", sel, want, got)
	return ""
}

// click clicks the first visible element matching sel.
func (b *browserUser) click(sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, deployWait)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.Click(sel, chromedp.ByQuery, chromedp.NodeVisible)); err != nil {
		b.failure("click-" + strings.NewReplacer("[", "", "]", "", "=", "-", "\"", "").Replace(sel))
		b.t.Fatalf("clicking %s: %v", sel, err)
	}
}

// post calls a panel action with the browser's session and extra headers
// (which argocd-server may overwrite) and says the HTTP status.
func (b *browserUser) post(app *argov1alpha1.Application, action string, headers map[string]string) int {
	b.t.Helper()
	h := map[string]string{uiproxy.HeaderApplication: app.Namespace + ":" + app.Name, uiproxy.HeaderProject: app.Spec.Project,
		"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	hj, err := json.Marshal(h)
	require.NoError(b.t, err)
	var status int
	js := fmt.Sprintf(`fetch('/extensions/%s/api/v1/%s', {method: 'POST', headers: %s, body: '{}'}).then(r => r.status)`, uiproxy.ExtensionName, action, hj)
	require.NoError(b.t, chromedp.Run(b.ctx, chromedp.Evaluate(js, &status, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	})))
	return status
}

func (b *browserUser) screenshot(name string) {
	var png []byte
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err == nil {
		b.t.Logf("screenshot: %s", path)
	}
}

// screenshotOf saves a picture of the first element matching sel (the panel
// alone, small enough for docs/panel.md).
func (b *browserUser) screenshotOf(sel, name string) {
	var png []byte
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.Screenshot(sel, &png, chromedp.ByQuery, chromedp.NodeVisible)); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err == nil {
		b.t.Logf("screenshot: %s", path)
	}
}

// count is the number of elements matching sel.
func (b *browserUser) count(sel string) int {
	b.t.Helper()
	var n int
	require.NoError(b.t, chromedp.Run(b.ctx, chromedp.Evaluate(fmt.Sprintf("document.querySelectorAll(%q).length", sel), &n)))
	return n
}

// bodyText is the whole page's text.
func (b *browserUser) bodyText() string {
	var s string
	require.NoError(b.t, chromedp.Run(b.ctx, chromedp.Text("body", &s, chromedp.ByQuery)))
	return s
}

// extensionStatus calls the panel's API with the browser's session, as the
// panel does.
func (b *browserUser) extensionStatus(app *argov1alpha1.Application) int {
	b.t.Helper()
	var status int
	js := fmt.Sprintf(`fetch('/extensions/%s/api/v1/deployment', {headers: {'%s': '%s:%s', '%s': '%s'}}).then(r => r.status)`,
		uiproxy.ExtensionName, uiproxy.HeaderApplication, app.Namespace, app.Name, uiproxy.HeaderProject, app.Spec.Project)
	require.NoError(b.t, chromedp.Run(b.ctx, chromedp.Evaluate(js, &status, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	})))
	return status
}

// TestUIPanelInTheBrowser opens the panel in headless Chromium on a real
// argocd-server with authentication: a tenant's user sees the promotion path
// of a binding's Application and a GitOpsDeployment's Application with its
// SyncRuns; alice, whom the tenant mapping names, syncs and promotes from the
// panel and sees each run to its end; admin (not in the mapping) is refused
// with the reason; another tenant's user sees nothing of them.
func TestUIPanelInTheBrowser(t *testing.T) {
	if _, err := stack.Chromium(); err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx := context.Background()
	server := argo.ServerAddr
	installPanel(t)
	shots := screenshotDir(t)

	// Tenant A: appa promoted along dev -> staging (the remote cluster) -> prod
	// (Manual, never deployed): dev runs snap-2, staging snap-1.
	ns := tenantNamespace(t)
	appWithComponents(t, ns, "base")
	kc, err := remote(t).KubeconfigFor(remoteAdminTokenFor(t))
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, credentialsSecret(ns, "staging-creds", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
	for _, e := range []*as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: as.EnvironmentSpec{DisplayName: "Development", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}},
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{DisplayName: "Staging", ParentEnvironment: "dev",
			DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated,
			UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
				APIURL: remoteKube.URL, TargetNamespace: remoteNamespace(t, "ui-staging"), ClusterCredentialsSecret: "staging-creds"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: as.EnvironmentSpec{DisplayName: "Production", ParentEnvironment: "staging",
			DeploymentStrategy: as.DeploymentStrategyManual}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, e))
	}
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-2", "v2")))
	dev := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-2"}}
	require.NoError(t, k8s.Create(ctx, dev))
	toStaging := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-1-to-staging"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-1", Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging"}}}
	require.NoError(t, k8s.Create(ctx, toStaging))
	waitPromotion(t, toStaging, "Success", promotionSucceeded)
	var devApps argov1alpha1.ApplicationList
	require.Eventually(t, func() bool {
		return k8s.List(ctx, &devApps, client.InNamespace(argo.Namespace), client.MatchingLabels{ownership.LabelOwnerUID: string(dev.UID),
			as.LabelComponent: "frontend"}) == nil && len(devApps.Items) == 1
	}, deployWait, poll, "no Application for frontend in dev")
	bindingApp := devApps.Items[0]

	// ...and a manual GitOpsDeployment synced by a SyncRun.
	repo, sha := gitRepo(t, map[string]string{"app/cm.yaml": configMap("ui-panel", "x")})
	gd := deploy(t, ns, "guestbook", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first-sync"},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "guestbook"}}
	require.NoError(t, k8s.Create(ctx, run))
	waitStatus(t, gd, "Synced", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeSynced })
	gdApp := application(t, gd)

	// Tenant B, with a deployment of its own.
	other := tenantNamespace(t)
	otherGD := deploy(t, other, "theirs", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, otherGD, "Synced", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeSynced })
	otherApp := application(t, otherGD)

	// Users: the platform maps alice to tenant A and bob to tenant B (the
	// tenant reconciler makes their project roles and extension policy).
	require.NoError(t, argo.CreateAccount(ctx, "alice", "alice-password"))
	require.NoError(t, argo.CreateAccount(ctx, "bob", "bob-password"))
	mapTenant(t, ns, "alice")
	mapTenant(t, other, "bob")
	require.Equal(t, gdApp.Spec.Project, bindingApp.Spec.Project, "one project per tenant")

	// The mapping applies asynchronously: the pages are opened once it does.
	waitAccess(t, "alice", "alice-password", bindingApp.Name, gdApp.Name)
	waitAccess(t, "bob", "bob-password", otherApp.Name)
	alice := loginWithForm(t, server, "alice", "alice-password", shots)
	bob := loginWithToken(t, server, "bob", "bob-password", shots)

	// The binding's Application: the promotion path.
	alice.openPanel(bindingApp.Name)
	alice.waitText(`[data-gs="path"]`, "Production")
	devCard := alice.waitText(`[data-gs-env="dev"]`, "snap-2")
	assert.Contains(t, devCard, "quay.io/example/frontend:v2")
	assert.Contains(t, devCard, "quay.io/example/backend:v2")
	assert.Contains(t, devCard, "this Application")
	stagingCard := alice.waitText(`[data-gs-env="staging"]`, "snap-1")
	assert.Contains(t, stagingCard, "quay.io/example/frontend:v1")
	alice.waitText(`[data-gs-env="staging"] [data-gs="diff"]`, "Differs from dev: backend, frontend")
	alice.waitText(`[data-gs-env="dev"]`, "Synced")
	alice.waitText(`[data-gs-env="dev"]`, "Healthy")
	alice.waitText(`[data-gs-env="prod"]`, "Not deployed here")
	alice.waitText(`[data-gs="promotionrun"]`, "snap-1-to-staging")
	alice.waitText(`[data-gs="steps"]`, "All GitOpsDeployments are Synced/Healthy")
	alice.waitText(`[data-gs="status-item"]`, "dev · snap-2")
	alice.screenshot("binding-promotion-path")
	alice.screenshotOf(`[data-gs="panel"]`, "panel-binding")
	// The Application's header (panel closed): the status-panel item.
	alice.openApp(bindingApp.Name)
	alice.waitText(`.application-status-panel [data-gs="status-item"]`, "dev · snap-2")
	alice.screenshotOf(`.application-status-panel`, "status-panel-binding")

	// The GitOpsDeployment's Application.
	alice.openPanel(gdApp.Name)
	summary := alice.waitText(`[data-gs="summary"]`, ns+"/guestbook")
	assert.Contains(t, summary, "manual")
	assert.Contains(t, summary, repo.URL)
	assert.Contains(t, summary, "namespace "+ns)
	alice.waitText(`[data-gs="summary"]`, "Synced")
	assert.Zero(t, alice.count(`[data-gs="error"]`), "a healthy deployment shows no error")
	alice.waitText(`[data-gs="syncruns"]`, "first-sync")
	alice.waitText(`[data-gs="syncruns"]`, sha[:7])
	alice.waitText(`[data-gs="status-item"]`, "manual")
	alice.screenshot("gitopsdeployment")
	alice.screenshotOf(`[data-gs="panel"]`, "panel-gitopsdeployment")
	assert.Equal(t, http.StatusOK, alice.extensionStatus(gdApp))
	assert.NotEqual(t, http.StatusOK, alice.extensionStatus(otherApp), "alice reached tenant B's deployment")

	// Actions: alice, named by the tenant mapping, syncs the deployment and
	// promotes dev's Snapshot to the next Environment; the panel follows each
	// run until it is done.
	alice.click(`[data-gs="sync-button"]`)
	alice.waitText(`[data-gs="action"]`, "Succeeded")
	alice.waitText(`[data-gs="action"][data-gs-done="true"]`, "GitOpsDeploymentSyncRun guestbook-panel-")
	alice.screenshotOf(`[data-gs="sync-action"]`, "action-sync")
	panelSyncRuns := func() (names []string) {
		var list v1.GitOpsDeploymentSyncRunList
		require.NoError(t, k8s.List(ctx, &list, client.InNamespace(ns)))
		for _, r := range list.Items {
			if strings.HasPrefix(r.Name, "guestbook-panel-") && r.Spec.GitopsDeploymentName == "guestbook" {
				names = append(names, r.Name)
			}
		}
		return names
	}
	require.Len(t, panelSyncRuns(), 1, "alice's Sync made one SyncRun in %s", ns)
	alice.waitText(`[data-gs="syncruns"]`, panelSyncRuns()[0])

	alice.openPanel(bindingApp.Name)
	alice.waitText(`[data-gs="promote-action"]`, "snap-2")
	var target string
	require.NoError(t, chromedp.Run(alice.ctx, chromedp.Value(`[data-gs="promote-target"]`, &target, chromedp.ByQuery)))
	assert.Equal(t, "staging", target, "Promote offers the next Environment first")
	alice.click(`[data-gs="promote-button"]`)
	alice.waitText(`[data-gs="action"]`, "PromotionRun snap-2-to-staging-")
	alice.waitText(`[data-gs="action"][data-gs-done="true"]`, "Completed")
	alice.waitText(`[data-gs="action"]`, "Success")
	alice.waitText(`[data-gs-env="staging"]`, "snap-2")
	alice.screenshotOf(`[data-gs="panel"]`, "action-promote")
	var promotions as.PromotionRunList
	require.NoError(t, k8s.List(ctx, &promotions, client.InNamespace(ns)))
	var fromPanel []as.PromotionRun
	for _, p := range promotions.Items {
		if strings.HasPrefix(p.Name, "snap-2-to-staging-") {
			fromPanel = append(fromPanel, p)
		}
	}
	require.Len(t, fromPanel, 1)
	assert.Equal(t, as.PromotionRunSpec{Snapshot: "snap-2", Application: "appa", RequestedBy: &as.Requester{User: "argocd:alice"},
		ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging"}}, fromPanel[0].Spec, "the run names the Argo CD user argocd-server authenticated")

	// Gates, Preview, Rollback and history (uibrowser_gates_test.go).
	panelGates(t, alice, ns, bindingApp)

	// Argo CD's admin may open tenant A's panel, but the tenant mapping does
	// not name admin: Sync is refused with the reason, even when the browser
	// claims to be alice (argocd-server sets the username it authenticated).
	admin := loginWithToken(t, server, stack.AdminUser, argo.AdminPassword, shots)
	admin.openPanel(gdApp.Name)
	admin.waitText(`[data-gs="summary"]`, ns+"/guestbook")
	admin.click(`[data-gs="sync-button"]`)
	admin.waitText(`[data-gs="action-error"]`, "user admin may not act here")
	admin.waitText(`[data-gs="action-error"]`, "group entries are not trusted")
	admin.screenshotOf(`[data-gs="sync-action"]`, "action-refused")
	assert.Equal(t, http.StatusForbidden, admin.post(gdApp, "sync", map[string]string{uiproxy.HeaderUsername: "alice", "Argocd-User-Groups": "alice"}))
	assert.NotEqual(t, http.StatusCreated, bob.post(gdApp, "sync", nil), "bob synced tenant A's deployment")
	time.Sleep(2 * time.Second) // a run created by mistake would be in the cache by now
	assert.Len(t, panelSyncRuns(), 1, "a refused Sync created a SyncRun")

	// Two Applications in alice's project the sidecar did not make: one without
	// our labels (the tab says so and asks nothing), one with our labels but an
	// owner the proxy does not know (the proxy refuses; the tab shows its error).
	foreign := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Namespace, Name: "foreign-" + rand.String(5)},
		Spec: argov1alpha1.ApplicationSpec{Project: gdApp.Spec.Project,
			Source:      &argov1alpha1.ApplicationSource{RepoURL: repo.URL, Path: "app"},
			Destination: argov1alpha1.ApplicationDestination{Server: gdApp.Spec.Destination.Server, Namespace: ns}}}
	orphan := foreign.DeepCopy()
	orphan.Name = "orphan-" + rand.String(5)
	orphan.Labels = map[string]string{}
	for k, v := range gdApp.Labels {
		orphan.Labels[k] = v
	}
	// An owner of a kind no reconciler of ours handles (one of a known kind
	// but another UID would be cleaned up as stale by its reconciler).
	orphan.Labels[ownership.LabelOwnerKind] = "Retired"
	orphan.Labels[ownership.LabelOwnerUID] = "not-" + string(gd.UID)
	orphan.Annotations = map[string]string{ownership.AnnotationOwnerName: ns + "/retired"}
	for _, a := range []*argov1alpha1.Application{foreign, orphan} {
		require.NoError(t, k8s.Create(ctx, a))
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), a) })
	}
	waitAccess(t, "alice", "alice-password", foreign.Name, orphan.Name)
	alice.openPanel(foreign.Name)
	alice.waitText(`[data-gs="not-ours"]`, "not made by the GitOps Service")
	assert.Zero(t, alice.count(`[data-gs="status-item"]`), "no header item for an Application not ours")
	alice.openPanel(orphan.Name)
	alice.waitText(`[data-gs="error"]`, "owner of Application "+orphan.Name+" is gone")
	alice.waitText(`[data-gs="error"]`, "The GitOps Service object behind this Application is gone")
	alice.screenshot("error-owner-gone")

	// Bob, of tenant B, opens tenant A's Applications: no data, and the API refuses him.
	for _, app := range []*argov1alpha1.Application{&bindingApp, gdApp} {
		bob.openPanel(app.Name)
		time.Sleep(3 * time.Second) // the page has loaded what it will show
		text := bob.bodyText()
		for _, secret := range []string{ns, "snap-1", "snap-2", "guestbook", "quay.io/example"} {
			assert.NotContains(t, text, secret, "bob sees tenant A's data in %s", app.Name)
		}
		assert.NotEqual(t, http.StatusOK, bob.extensionStatus(app), "bob reached tenant A's %s", app.Name)
	}
	bob.screenshot("other-tenant")
	assert.Equal(t, http.StatusOK, bob.extensionStatus(otherApp), "bob's own deployment")
	// His own automated deployment: no SyncRuns, and the panel says why.
	bob.openPanel(otherApp.Name)
	bob.waitText(`[data-gs="summary"]`, other+"/theirs")
	bob.waitText(`[data-gs="no-syncruns"]`, "An automated deployment syncs by itself")
	bob.screenshot("gitopsdeployment-no-syncruns")
}
