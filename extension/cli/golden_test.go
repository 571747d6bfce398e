package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	panel "github.com/gitops-service/gitops-service/ui-proxy/api"
)

// go test ./extension/cli -run Golden -update rewrites testdata/*.golden.
var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./extension/cli -update")
	assert.Equal(t, string(want), got, "%s differs (go test ./extension/cli -update rewrites it)", path)
}

// fixedHome makes the defaults printed in help the same on every machine.
func fixedHome(t *testing.T) {
	t.Setenv("HOME", "/home/user")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("ARGOCD_CONFIG_DIR", "")
	t.Setenv("KUBECONFIG", "/nonexistent")
}

func TestGoldenHelp(t *testing.T) {
	fixedHome(t)
	for _, verb := range []string{"", "list", "status", "sync", "promote", "envs", "approve", "freeze", "unfreeze", "version", "completion"} {
		args := []string{"--help"}
		name := "help"
		if verb != "" {
			args = []string{verb, "--help"}
			name = "help-" + verb
		}
		s, out, _ := streams()
		require.NoError(t, run(context.Background(), "argocd gitops", args, s, false), verb)
		golden(t, name, out.String())
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		s, out, _ := streams()
		require.NoError(t, run(context.Background(), "argocd gitops", []string{"completion", shell}, s, false), shell)
		assert.Contains(t, out.String(), "argocd-gitops", shell)
		assert.Contains(t, out.String(), "__complete", shell)
	}
}

func sampleDeployments() []v1.GitOpsDeployment {
	gd := v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "0a1b2c3d-uid"},
		Spec: v1.GitOpsDeploymentSpec{Type: v1.GitOpsDeploymentSpecTypeManual,
			Source:      v1.ApplicationSource{RepoURL: "https://git.example.com/shop.git", Path: "deploy", TargetRevision: "main"},
			Destination: v1.ApplicationDestination{Namespace: "team-a"}}}
	gd.Status.Sync.Status, gd.Status.Sync.Revision = v1.SyncStatusCodeSynced, "1a2b3c4d5e6f7a8b9c0d"
	gd.Status.Health.Status = v1.HealthStatusHealthy
	gd.Status.Conditions = []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusFalse}}
	auto := v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "api", UID: "9f8e-uid"},
		Spec: v1.GitOpsDeploymentSpec{Type: v1.GitOpsDeploymentSpecTypeAutomated, Source: v1.ApplicationSource{RepoURL: "https://git.example.com/api.git", Path: "."}}}
	return []v1.GitOpsDeployment{gd, auto}
}

func sampleBindings() []as.SnapshotEnvironmentBinding {
	b := as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "shop-v2"}}
	b.Status.GitOpsDeployments = []as.BindingStatusGitOpsDeployment{
		{ComponentName: "frontend", GitOpsDeployment: "shop-dev-frontend", GitOpsDeploymentSyncStatus: "Synced", GitOpsDeploymentHealthStatus: "Healthy", GitOpsDeploymentCommitID: "abc"},
		{ComponentName: "backend", GitOpsDeploymentSyncStatus: "OutOfSync"}}
	b.Status.ComponentDeploymentConditions = []metav1.Condition{{Type: as.ComponentDeploymentConditionAllComponentsDeployed, Status: metav1.ConditionFalse, Reason: "CommitsUnsynced", Message: "1 of 2 components deployed"}}
	return []as.SnapshotEnvironmentBinding{b}
}

func TestGoldenListTables(t *testing.T) {
	for name, c := range map[string]struct{ all, wide bool }{"list": {}, "list-wide": {wide: true}, "list-all-namespaces": {all: true}} {
		var out bytes.Buffer
		require.NoError(t, writeTables(&out, sampleDeployments(), sampleBindings(), c.all, c.wide))
		golden(t, name, out.String())
	}
	var out bytes.Buffer
	require.NoError(t, writeTables(&out, nil, nil, false, false))
	assert.Equal(t, "DEPLOYMENT  TYPE  SYNC  HEALTH  REVISION  ARGO CD APPLICATION\n", out.String(), "no bindings: no second table")
}

// printWith prints objs as printList/status do with -o output.
func printWith(t *testing.T, output string, asList bool, objs ...client.Object) (string, error) {
	t.Helper()
	pf := genericclioptions.NewPrintFlags("").WithTypeSetter(newScheme())
	*pf.OutputFormat = output
	var out bytes.Buffer
	err := printObjects(&out, &options{print: pf, output: output}, newScheme(), asList, objs...)
	return out.String(), err
}

func listObjects() []client.Object {
	gds, sebs := sampleDeployments(), sampleBindings()
	return []client.Object{&gds[0], &gds[1], &sebs[0]}
}

func TestGoldenOutputFormats(t *testing.T) {
	for name, output := range map[string]string{
		"list-json":        "json",
		"list-yaml":        "yaml",
		"list-name":        "name",
		"list-jsonpath":    `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}`,
		"list-go-template": `go-template={{range .items}}{{.apiVersion}} {{.metadata.name}}{{"\n"}}{{end}}`,
	} {
		got, err := printWith(t, output, true, listObjects()...)
		require.NoError(t, err, name)
		golden(t, name, got)
	}
	// One object (status -o): the object itself, typed.
	gd := sampleDeployments()[0]
	got, err := printWith(t, "json", false, &gd)
	require.NoError(t, err)
	golden(t, "status-json", got)
	got, err = printWith(t, "jsonpath={.status.health.status}", false, &gd)
	require.NoError(t, err)
	assert.Equal(t, "Healthy", got)
	// An empty list is still a List.
	got, err = printWith(t, "json", true)
	require.NoError(t, err)
	assert.JSONEq(t, `{"apiVersion":"v1","kind":"List","items":[],"metadata":{}}`, got)
	// A template that does not parse is a usage error.
	_, err = printWith(t, "jsonpath={.items[", true)
	var ee *exitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, exitUsage, ee.code)
}

func TestGoldenStatusAndEnvs(t *testing.T) {
	var out bytes.Buffer
	gd := sampleDeployments()[0]
	require.NoError(t, writeDeploymentStatus(&out, &gd))
	b := sampleBindings()[0]
	require.NoError(t, writeBindingStatus(&out, &b))
	golden(t, "status", out.String())

	out.Reset()
	next, last := metav1.NewTime(time.Date(2026, 3, 4, 10, 1, 30, 0, time.UTC)), metav1.NewTime(time.Date(2026, 3, 4, 10, 0, 30, 0, time.UTC))
	analysed := func(name, snapshot, env string, checks ...as.AnalysisCheckStatus) as.PromotionRun {
		return as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: as.PromotionRunSpec{Snapshot: snapshot},
			Status: as.PromotionRunStatus{EnvironmentStatus: []as.PromotionRunEnvironmentStatus{{EnvironmentName: env, Status: "in-progress", Analysis: checks}}}}
	}
	require.NoError(t, writeAnalysis(&out, "prod", []as.PromotionRun{
		analysed("newest-elsewhere", "shop-v3", "staging", as.AnalysisCheckStatus{Name: "other", Phase: as.AnalysisRunning}),
		analysed("shop-v2-to-prod", "shop-v2", "prod",
			as.AnalysisCheckStatus{Name: "error-rate", Phase: as.AnalysisRunning, Value: "0.01", Successes: 1, Message: "0.01 <= 0.05", LastCheckTime: &last, NextCheckTime: &next},
			as.AnalysisCheckStatus{Name: "health", Phase: as.AnalysisFailed, Value: "503", Failures: 1, Message: "HTTP status 503, expected 200", LastCheckTime: &last}),
		analysed("older", "shop-v1", "prod", as.AnalysisCheckStatus{Name: "error-rate", Phase: as.AnalysisSuccessful}),
	}))
	golden(t, "status-analysis", out.String())

	out.Reset()
	writeEnvTree(&out, "team-a", environmentGraph([]as.Environment{
		env("prod", "staging", as.DeploymentStrategyManual),
		env("staging", "dev", as.DeploymentStrategyAppStudioAutomated),
		env("dev", "", as.DeploymentStrategyAppStudioAutomated),
	}, sampleBindings()))
	writeEnvTree(&out, "team-b", nil)
	golden(t, "envs", out.String())
}

func TestProgressLiveOnTerminalPlainWhenPiped(t *testing.T) {
	show := func(p *progress) {
		p.note("PromotionRun r created")
		p.update("r: Active")
		p.update("r: Active")
		p.note("  step 1 dev: success ok")
		p.update("r: Completed")
		p.end()
	}
	var piped, tty bytes.Buffer
	show(&progress{w: &piped})
	show(&progress{w: &tty, tty: true})
	assert.Equal(t, "PromotionRun r created\nr: Active\n  step 1 dev: success ok\nr: Completed\n", piped.String(), "one line per change, no escapes")
	assert.Equal(t, "PromotionRun r created\n\r\x1b[Kr: Active\r\x1b[K  step 1 dev: success ok\nr: Active\r\x1b[Kr: Completed\n", tty.String(),
		"the live line is rewritten in place; notes stay above it")
}

func TestSyncRunLineAndResult(t *testing.T) {
	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Name: "web-sync-x"}}
	run.Status = v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationFailed, SyncStatus: v1.SyncStatusCodeOutOfSync, Revision: "1a2b3c4d5e6f7a8b",
		Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue, Message: "revision not found"}}}
	assert.Equal(t, "web-sync-x: phase Failed, sync OutOfSync, health -, revision 1a2b3c4d5e6f: revision not found", syncRunLine(run))

	c := &cli{opts: &options{}, prog: "argocd gitops", out: &bytes.Buffer{}}
	var ee *exitError
	require.True(t, errors.As(c.syncResult("web", run, false), &ee))
	assert.Equal(t, exitFailed, ee.code)
	assert.Contains(t, ee.msg, "did not succeed")
	run.Status.Phase = ""
	require.True(t, errors.As(c.syncResult("web", run, true), &ee))
	assert.Equal(t, exitRefused, ee.code, "ended before it started: refused")
	run.Status = v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationSucceeded}
	assert.NoError(t, c.syncResult("web", run, false))

	pr := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: as.PromotionRunStatus{State: as.PromotionRunStateCompleted, CompletionResult: as.PromotionRunCompleteResultFailure}}
	require.True(t, errors.As(c.promotionResult(c.progress(), pr), &ee))
	assert.Equal(t, exitRefused, ee.code, "failed before any step: refused")
	pr.Status.EnvironmentStatus = []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "dev", Status: "failure"}}
	require.True(t, errors.As(c.promotionResult(c.progress(), pr), &ee))
	assert.Equal(t, exitFailed, ee.code)
}

func TestArgoErrorsAndPanelViews(t *testing.T) {
	for status, want := range map[int]int{http.StatusUnauthorized: exitRefused, http.StatusForbidden: exitRefused, http.StatusBadRequest: exitRefused, http.StatusConflict: exitRefused} {
		var ee *exitError
		require.True(t, errors.As(argoError(status, []byte(`{"error":"user mallory may not act here"}`)), &ee), status)
		assert.Equal(t, want, ee.code, status)
		assert.Contains(t, ee.msg, "user mallory may not act here")
	}
	err := argoError(http.StatusInternalServerError, []byte("boom"))
	assert.Equal(t, "argocd-server answered 500: boom", err.Error())

	app := &argov1alpha1.Application{}
	app.Labels = map[string]string{ownership.LabelOwnerUID: "0a1b2c3d-uid"}
	app.Status.Sync.Revision = "1a2b3c4d5e6f7a8b9c0d"
	gd := deploymentFromPanel(app, &panel.Deployment{Kind: "GitOpsDeployment", Namespace: "team-a", Name: "web", Type: "manual", Sync: "Synced", Health: "Healthy",
		Source: &panel.Source{RepoURL: "https://git.example.com/shop.git", Path: "deploy", TargetRevision: "main"}, Destination: &panel.Destination{Namespace: "team-a"},
		Conditions: []panel.Condition{{Type: "ErrorOccurred", Status: "False"}}})
	assert.Equal(t, sampleDeployments()[0], *gd, "the panel's view is shown as the same object as with a kubeconfig")
	b := (&panel.Deployment{Kind: "SnapshotEnvironmentBinding", Namespace: "team-a", Name: "shop-dev", Application: "shop", Environment: "dev", Snapshot: "shop-v2",
		Components: []panel.ComponentState{{Name: "frontend", Sync: "Synced", Health: "Healthy", Commit: "abc"}},
		Conditions: []panel.Condition{{Type: as.ComponentDeploymentConditionAllComponentsDeployed, Status: "True"}, {Type: "ErrorOccurred", Status: "True", Message: "m"}}}).Binding()
	assert.Equal(t, "frontend Synced/Healthy", componentsOf(b))
	assert.Len(t, b.Status.ComponentDeploymentConditions, 1)
	assert.Len(t, b.Status.BindingConditions, 1)
}

func TestArgoLoginFromConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfg, []byte(`contexts:
- {name: prod, server: argocd.example.com, user: argocd.example.com}
- {name: local, server: localhost:8080, user: localhost:8080}
current-context: local
servers:
- {server: argocd.example.com, grpc-web-root-path: /argo}
- {server: localhost:8080, plain-text: true, grpc-web-root-path: ""}
users:
- {name: argocd.example.com, auth-token: prod-token}
- {name: localhost:8080, auth-token: local-token}
`), 0o600))
	t.Setenv(envArgoServer, "")
	t.Setenv(envArgoAuthToken, "")
	a := &argoOptions{configPath: cfg}
	c, err := a.client(&bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:8080/", c.base.String(), "the current context, plain-text")
	assert.Equal(t, "local-token", c.token)

	a = &argoOptions{configPath: cfg, context: "prod"}
	c, err = a.client(&bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "https://argocd.example.com/argo", c.base.String())
	assert.Equal(t, "prod-token", c.token)

	a = &argoOptions{configPath: cfg, server: "argocd.example.com", authToken: "flag-token"}
	c, err = a.client(&bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "flag-token", c.token, "--auth-token wins over the config file")

	a = &argoOptions{configPath: cfg, server: "other.example.com"}
	_, err = a.client(&bytes.Buffer{})
	var ee *exitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, exitRefused, ee.code, "a server without a login")
	assert.Contains(t, ee.msg, "argocd login other.example.com")

	a = &argoOptions{configPath: filepath.Join(dir, "none")}
	_, err = a.client(&bytes.Buffer{})
	assert.ErrorIs(t, err, errNoArgoLogin)

	a = &argoOptions{configPath: cfg, server: "https://argocd.example.com", authToken: "t"}
	_, err = a.client(&bytes.Buffer{})
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, exitUsage, ee.code)
	assert.True(t, strings.Contains(ee.msg, "host[:port]"))
}

func TestParseBuildInfo(t *testing.T) {
	v, err := parseBuildInfo([]byte(`# HELP gitops_service_build_info The version of gitops-service.
# TYPE gitops_service_build_info gauge
gitops_service_build_info{goversion="go1.24.1",revision="1234567abc",version="v0.2.0"} 1
# TYPE other counter
other 3
`))
	require.NoError(t, err)
	assert.Equal(t, buildVersion{Version: "v0.2.0", Revision: "1234567abc", GoVersion: "go1.24.1"}, *v)
	_, err = parseBuildInfo([]byte("other 3\n"))
	assert.ErrorContains(t, err, "no gitops_service_build_info")
}
