package main

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/buildinfo"
)

func TestParseFlagsAnywhere(t *testing.T) {
	var o options
	pos, err := parse("argocd gitops", []string{"sync", "-n", "jane", "web", "--revision", "abc", "-o", "json"}, &o)
	require.NoError(t, err)
	assert.Equal(t, []string{"sync", "web"}, pos)
	assert.Equal(t, "jane", o.namespace)
	assert.Equal(t, "abc", o.revision)
	assert.Equal(t, "json", o.output)
	assert.Equal(t, 10*time.Minute, o.timeout)

	_, err = parse("argocd gitops", []string{"list", "-o", "xml"}, &o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use json or yaml")
	_, err = parse("argocd gitops", []string{"list", "--bogus"}, &o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--help")
}

func TestRunRefusesBadUsageBeforeConnecting(t *testing.T) {
	var out bytes.Buffer
	for args, want := range map[string][]string{
		"unknown command": {"frobnicate"},
		"takes 1":         {"sync"},
		"takes 0":         {"list", "extra"},
		"no command":      nil,
	} {
		err := run(context.Background(), "argocd gitops", want, &out)
		var ee *exitError
		require.True(t, errors.As(err, &ee), "%v: %v", want, err)
		assert.Equal(t, 2, ee.code)
		assert.Contains(t, err.Error(), args)
	}
	out.Reset()
	require.NoError(t, run(context.Background(), "kubectl gitops", []string{"--help"}, &out))
	assert.Contains(t, out.String(), "kubectl gitops promote <snapshot> --to <env>")
}

func TestExplainSaysWhatToDo(t *testing.T) {
	gr := schema.GroupResource{Group: "managed-gitops.redhat.com", Resource: "gitopsdeployments"}
	err := explain(apierrors.NewForbidden(gr, "", errors.New("nope")), "GitOpsDeployments", "jane")
	assert.Contains(t, err.Error(), `namespace "jane"`)
	assert.Contains(t, err.Error(), "ask your platform admin")
	err = explain(apierrors.NewNotFound(gr, "web"), `GitOpsDeployment "web"`, "jane")
	assert.Contains(t, err.Error(), "`list` shows what there is")
	err = explain(apierrors.NewUnauthorized("expired"), "", "jane")
	assert.Contains(t, err.Error(), "log in again")
}

func env(name, parent string, strategy as.DeploymentStrategyType) as.Environment {
	return as.Environment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: as.EnvironmentSpec{ParentEnvironment: parent, DeploymentStrategy: strategy}}
}

func TestEnvironmentGraph(t *testing.T) {
	envs := []as.Environment{
		env("prod", "staging", as.DeploymentStrategyManual),
		env("staging", "dev", as.DeploymentStrategyAppStudioAutomated),
		env("dev", "", as.DeploymentStrategyAppStudioAutomated),
		env("loop-a", "loop-b", ""),
		env("loop-b", "loop-a", ""),
	}
	seb := as.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-dev"},
		Spec:       as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "shop-v2"},
		Status: as.SnapshotEnvironmentBindingStatus{ComponentDeploymentConditions: []metav1.Condition{
			{Type: as.ComponentDeploymentConditionAllComponentsDeployed, Status: metav1.ConditionTrue},
		}},
	}
	g := environmentGraph(envs, []as.SnapshotEnvironmentBinding{seb})
	var order []string
	for _, n := range g {
		order = append(order, n.Name)
	}
	assert.Equal(t, []string{"dev", "staging", "prod", "loop-a", "loop-b"}, order, "roots first, then their children; cycles still shown")
	require.Len(t, g[0].Runs, 1)
	assert.Equal(t, envRuns{Application: "shop", Snapshot: "shop-v2", Binding: "shop-dev", Deployed: "True"}, g[0].Runs[0])
	assert.Equal(t, []string{"staging"}, g[0].Children)
}

func TestVersionNeedsNoCluster(t *testing.T) {
	defer func(v, r string) { buildinfo.Version, buildinfo.Revision = v, r }(buildinfo.Version, buildinfo.Revision)
	buildinfo.Version, buildinfo.Revision = "v0.1.0-3-g1234567", "1234567abc"
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, args := range [][]string{{"--version"}, {"-n", "jane", "--version"}} {
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), "kubectl gitops", args, &out), args)
		assert.Equal(t, "kubectl gitops v0.1.0-3-g1234567 (revision 1234567abc, "+runtime.Version()+")\n", out.String(), args)
	}
}
