package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// The two ways in say "not yours" and "not found" alike: the kubeconfig's
// from the API server's answer, Argo CD's from the Applications it shows.
func TestBothWaysInRefuseAndMissAlike(t *testing.T) {
	gr := schema.GroupResource{Group: "managed-gitops.redhat.com", Resource: "gitopsdeployments"}
	for _, tc := range []struct {
		name, says string
		err        error
		code       int
	}{
		{"kubeconfig, another tenant's namespace", `you may not do this in namespace "team-b" (Forbidden)`,
			explain(apierrors.NewForbidden(gr, "", errors.New("nope")), "GitOpsDeployments", "team-b"), exitRefused},
		{"Argo CD, another tenant's namespace", `you may not do this in namespace "team-b" (Argo CD shows you no Application`,
			shown("team-b", 0), exitRefused},
		{"kubeconfig, every namespace", `you may not do this in every namespace (Forbidden)`,
			explain(apierrors.NewForbidden(gr, "", errors.New("nope")), "GitOpsDeployments", ""), exitRefused},
		{"kubeconfig, no such object", `GitOpsDeployment "web" not found in namespace "team-a": ` + "`list` shows what there is",
			explain(apierrors.NewNotFound(gr, "web"), `GitOpsDeployment "web"`, "team-a"), exitFailed},
		{"Argo CD, no such object", `GitOpsDeployment "web" not found in namespace "team-a": ` + "`list` shows what there is",
			notFound(`GitOpsDeployment "web"`, "team-a"), exitFailed},
		{"kubeconfig, no binding to roll back", "application shop has no binding in Environment prod: nothing to roll back",
			noBinding("shop", "prod"), exitRefused},
	} {
		require.Error(t, tc.err, tc.name)
		var errOut bytes.Buffer
		assert.Equal(t, tc.code, exitCode(tc.err, &errOut), tc.name)
		assert.Contains(t, errOut.String(), tc.says, tc.name)
	}
	assert.NoError(t, shown("team-a", 1), "Argo CD shows an Application there")
	assert.NoError(t, shown("", 0), "every namespace: nothing to show is an empty list")
}

// An empty list says so as kubectl get does (on stderr, stdout empty); -o
// still prints an empty List.
func TestEmptyListSaysNoResourcesFound(t *testing.T) {
	for ns, want := range map[string]string{"team-a": "No resources found in team-a namespace.\n", "": "No resources found\n"} {
		s, out, errOut := streams()
		c := &cli{opts: &options{streams: s}, namespace: ns, out: out, scheme: newScheme()}
		require.NoError(t, c.printList(nil, nil))
		assert.Empty(t, out.String(), ns)
		assert.Equal(t, want, errOut.String(), ns)
	}
	s, out, errOut := streams()
	o := &options{streams: s, output: "json"}
	c := &cli{opts: o, namespace: "team-a", out: out, scheme: newScheme()}
	o.print = genericclioptions.NewPrintFlags("").WithTypeSetter(newScheme())
	*o.print.OutputFormat = "json"
	require.NoError(t, c.printList([]v1.GitOpsDeployment{}, []as.SnapshotEnvironmentBinding{}))
	assert.Empty(t, errOut.String())
	assert.Contains(t, out.String(), `"kind": "List"`)
	assert.Contains(t, out.String(), `"items": []`)
}
