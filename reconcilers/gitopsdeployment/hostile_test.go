//go:build !unit

package gitopsdeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// hostileSpec is one hostile GitOpsDeployment spec and the part of the message
// its refusal must have.
type hostileSpec struct {
	name string
	mut  func(gd *v1.GitOpsDeployment, ns string)
	msg  string
}

func hostileSpecs() []hostileSpec {
	var out []hostileSpec
	add := func(name, msg string, mut func(*v1.GitOpsDeployment, string)) {
		out = append(out, hostileSpec{name: name, mut: mut, msg: msg})
	}
	for i, url := range []string{
		"file:///var/lib/argocd/other.git", "file://localhost/etc", "FILE:///etc", "file:/etc", "/srv/git/other.git",
		"./other", "../other-tenant/repo", "repo.git", "ext::sh -c id", "ext::git-remote-evil", "fd::3",
		"--upload-pack=touch /tmp/p", "-u evil", " https://git.example.com/a.git", "https://git.example.com/a.git\n",
		"https://git.example.com/a\x00.git", "https://jane:pw@git.example.com/a.git", "https:///a.git", "ftp://git.example.com/a.git",
		"s3://bucket/a", "gopher://git.example.com/a", "git@:a.git", "git@host:", "javascript:alert(1)", "",
	} {
		url := url
		add(fmt.Sprintf("repoURL-%02d", i), "spec.source.repoURL", func(gd *v1.GitOpsDeployment, _ string) { gd.Spec.Source.RepoURL = url })
	}
	for i, p := range []string{"..", "../other-tenant", "a/../../b", "x/..", "../../../../etc", "apps/../..", "/", ""} {
		p := p
		add(fmt.Sprintf("path-%02d", i), "spec.source.path", func(gd *v1.GitOpsDeployment, _ string) { gd.Spec.Source.Path = p })
	}
	for i, rev := range []string{"-x", "--upload-pack=touch /tmp/p", "--output=/tmp/x", "-c core.sshCommand=id", "main..evil", "HEAD\n", "a b", "main\x00"} {
		rev := rev
		add(fmt.Sprintf("targetRevision-%02d", i), "spec.source.targetRevision", func(gd *v1.GitOpsDeployment, _ string) { gd.Spec.Source.TargetRevision = rev })
	}
	for i, dest := range []string{"kube-system", "kube-public", "argocd", "default", "*", "other-tenant", "kube-node-lease"} {
		dest := dest
		add(fmt.Sprintf("destination-%02d", i), v1.ErrMsgEnvironmentNeeded, func(gd *v1.GitOpsDeployment, _ string) { gd.Spec.Destination.Namespace = dest })
	}
	for i, o := range []string{"Replace=true", "ServerSideApply=true", "Validate=false", "PruneLast=true", "CreateNamespace=yes", "FailOnSharedResource=false", "RespectIgnoreDifferences=true"} {
		o := o
		add(fmt.Sprintf("syncOption-%02d", i), "unsupported sync option", func(gd *v1.GitOpsDeployment, _ string) {
			gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOption(o)}}
		})
	}
	for i, typ := range []string{"", "Auto", "automated ", "AUTOMATED"} {
		typ := typ
		add(fmt.Sprintf("type-%02d", i), v1.ErrMsgTypeInvalid, func(gd *v1.GitOpsDeployment, _ string) { gd.Spec.Type = v1.GitOpsDeploymentSpecType(typ) })
	}
	add("environment-missing", v1.ErrMsgManagedEnvUnresolved, func(gd *v1.GitOpsDeployment, _ string) { gd.Spec.Destination.Environment = "no-such-env" })
	add("environment-of-other-tenant", v1.ErrMsgManagedEnvUnresolved, func(gd *v1.GitOpsDeployment, _ string) {
		gd.Spec.Destination.Environment = "../other-tenant/prod"
	})
	return out
}

// The hostile matrix (issue 13): every hostile spec, under a short name and a
// name at the 253-character limit, is refused with a condition (or by the API
// server) and nothing is written for the tenant, so no Argo CD object gives it
// more than its own namespace.
func TestHostileDeploymentsAreRefused(t *testing.T) {
	ns := tenant(t)
	specs := hostileSpecs()
	names := map[string]func(string) string{
		"short":     func(n string) string { return strings.ToLower(n) },
		"253-chars": func(n string) string { n = strings.ToLower(n) + "-"; return n + strings.Repeat("x", 253-len(n)) },
	}
	cases := 0
	t.Run("cases", func(t *testing.T) {
		for nameKind, name := range names {
			for _, hs := range specs {
				hs, name := hs, name(hs.name)
				cases++
				t.Run(nameKind+"/"+hs.name, func(t *testing.T) {
					t.Parallel()
					gd := newDeployment(ns, name, nil)
					hs.mut(gd, ns)
					if err := k8s.Create(context.Background(), gd); err != nil {
						// Refused by the API server (the CRD's validation): also fine.
						require.True(t, apierrors.IsInvalid(err), "create failed for another reason: %v", err)
						return
					}
					waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, hs.msg)
				})
			}
		}
	})
	t.Logf("%d hostile GitOpsDeployments", cases)
	require.GreaterOrEqual(t, cases, 120)
	// Nothing at all for this tenant: no Application, no AppProject.
	require.Never(t, func() bool {
		var apps argov1alpha1.ApplicationList
		require.NoError(t, k8s.List(context.Background(), &apps, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
		var projects argov1alpha1.AppProjectList
		require.NoError(t, k8s.List(context.Background(), &projects, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
		return len(apps.Items)+len(projects.Items) > 0
	}, 2*time.Second, 200*time.Millisecond, "an Argo CD object was written for a tenant with only hostile deployments")
	var gds v1.GitOpsDeploymentList
	require.NoError(t, k8s.List(context.Background(), &gds, client.InNamespace(ns)))
	assert.NotEmpty(t, gds.Items)
}
