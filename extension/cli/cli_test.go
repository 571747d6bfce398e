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
	"k8s.io/cli-runtime/pkg/genericiooptions"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/buildinfo"
)

// streams are buffers for one run.
func streams() (genericiooptions.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut}, out, errOut
}

func TestParseFlagsAnywhere(t *testing.T) {
	s, _, _ := streams()
	root, o := newRoot("argocd gitops", s, false)
	cmd, rest, err := root.Find([]string{"sync", "-n", "jane", "web", "--revision", "abc", "-o", "json"})
	require.NoError(t, err)
	require.NoError(t, cmd.ParseFlags(rest))
	assert.Equal(t, "sync", cmd.Name())
	assert.Equal(t, []string{"web"}, cmd.Flags().Args())
	assert.Equal(t, "jane", *o.kube.Namespace)
	assert.Equal(t, "abc", o.revision)
	assert.Equal(t, "json", cmd.Flag("output").Value.String())
	assert.Equal(t, 10*time.Minute, o.timeout)

	// kubectl's flags, -nfoo included.
	root, o = newRoot("argocd gitops", s, false)
	cmd, rest, err = root.Find([]string{"list", "-nfoo", "--as", "bob", "--context", "ctx", "--request-timeout", "3s", "-A", "-l", "a=b"})
	require.NoError(t, err)
	require.NoError(t, cmd.ParseFlags(rest))
	assert.Equal(t, "foo", *o.kube.Namespace)
	assert.Equal(t, "bob", *o.kube.Impersonate)
	assert.Equal(t, "ctx", *o.kube.Context)
	assert.Equal(t, "3s", *o.kube.Timeout)
	assert.True(t, o.allNamespaces)
	assert.Equal(t, "a=b", o.selector)

	for says, args := range map[string][]string{
		"allowed formats":        {"list", "-o", "xml"},
		"--help":                 {"list", "--bogus"},
		"no wider table":         {"status", "x", "-o", "wide"},
		"envs prints its graph":  {"envs", "-o", "name"},
		"-l selects labels":      {"list", "-l", "a=b", "--server", "localhost:1", "--auth-token", "t", "--plaintext"},
		"--auto-from needs a ku": {"promote", "s", "--auto-from", "dev", "--server", "localhost:1", "--auth-token", "t", "--plaintext"},
	} {
		t.Setenv("KUBECONFIG", "/nonexistent")
		s, _, _ := streams()
		err := run(context.Background(), "argocd gitops", args, s, false)
		var ee *exitError
		require.True(t, errors.As(err, &ee), "%v: %v", args, err)
		assert.Equal(t, exitUsage, ee.code, args)
		assert.Contains(t, err.Error(), says, args)
	}
}

func TestRunRefusesBadUsageBeforeConnecting(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for args, want := range map[string][]string{
		"unknown command": {"frobnicate"},
		"takes 1":         {"sync"},
		"takes 0":         {"list", "extra"},
		"no command":      nil,
		"exactly one of":  {"promote", "snap"},
	} {
		s, _, _ := streams()
		err := run(context.Background(), "argocd gitops", want, s, false)
		var ee *exitError
		require.True(t, errors.As(err, &ee), "%v: %v", want, err)
		assert.Equal(t, 2, ee.code)
		assert.Contains(t, err.Error(), args)
	}
	s, out, _ := streams()
	require.NoError(t, run(context.Background(), "kubectl gitops", []string{"--help"}, s, false))
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
		s, out, _ := streams()
		require.NoError(t, run(context.Background(), "kubectl gitops", args, s, false), args)
		assert.Equal(t, "kubectl gitops v0.1.0-3-g1234567 (revision 1234567abc, "+runtime.Version()+")\n", out.String(), args)
	}
	s, out, _ := streams()
	require.NoError(t, run(context.Background(), "kubectl gitops", []string{"version", "--client"}, s, false))
	assert.Equal(t, "Client: kubectl gitops v0.1.0-3-g1234567 (revision 1234567abc, "+runtime.Version()+")\n", out.String())
}
