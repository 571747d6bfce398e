//go:build !unit

package isolation

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// The matrix's hostile repository URLs, paths and revisions are refused by
// the API server itself now (the CRDs' admission checks, which this suite
// installs): each is created (dry run) in a tenant namespace and must be
// Invalid. The file: URLs are the exception: the platform may allow them
// (--allow-file-repositories), so only the reconciler refuses them, as the
// matrix shows. The reconcilers' own refusals of the same inputs are tested
// by their suites, which run without these checks.
func TestMatrixInputsAreRefusedAtAdmission(t *testing.T) {
	ctx := context.Background()
	e := tenantEnv{NS: neighbourNS, Neighbour: neighbourNS}
	type input struct {
		what string
		obj  client.Object
	}
	var refused, admitted []input
	for _, u := range hostileRepoURLs {
		obj := deployment(e, "adm", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = u })
		in := input{fmt.Sprintf("repoURL %q", u), obj}
		if argocd.CheckRepoURL(u, true) == "" {
			admitted = append(admitted, in)
		} else {
			refused = append(refused, in)
		}
	}
	for _, p := range hostilePaths {
		refused = append(refused, input{fmt.Sprintf("path %q", p), deployment(e, "adm", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.Path = p })})
	}
	for _, r := range hostileRevisions {
		refused = append(refused,
			input{fmt.Sprintf("targetRevision %q", r), deployment(e, "adm", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.TargetRevision = r })},
			input{fmt.Sprintf("revisionId %q", r), &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: "adm"},
				Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app", RevisionID: r}}})
	}
	for _, in := range refused {
		err := k8s.Create(ctx, in.obj, client.DryRunAll)
		if assert.Error(t, err, "%s was admitted", in.what) {
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", in.what, err)
		}
	}
	for _, in := range admitted {
		assert.NoError(t, k8s.Create(ctx, in.obj, client.DryRunAll), "%s: the platform may allow it, admission must not refuse it", in.what)
	}
	assert.Len(t, admitted, 4, "the file: URLs")
	t.Logf("%d hostile inputs of the matrix refused at admission, %d left to the reconciler", len(refused), len(admitted))
}
