//go:build !unit

package tenantproject_test

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Issue 23: the tenant reconciler deletes an unused project through Delete,
// which takes the project's lock: an Ensure that landed after the project was
// listed (it changed the project, or its caller's Application may not exist
// yet) keeps the project.
func TestDeleteKeepsAProjectEnsuredSinceItWasListed(t *testing.T) {
	ctx, c, mgr := startAPIServer(t, "tenantproject-delete")
	const grace = 2 * time.Second
	projects := &tenantproject.Projects{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: stack.SuiteArgoNamespace, Grace: grace}
	ns := stack.Tenant(t, c)
	key := types.NamespacedName{Namespace: stack.SuiteArgoNamespace, Name: argocd.ProjectName(string(ns.UID))}
	listed := func() *argov1alpha1.AppProject {
		p := &argov1alpha1.AppProject{}
		require.NoError(t, c.Get(ctx, key, p))
		return p
	}

	_, err := projects.Ensure(ctx, ns.Name, "https://git.example.test/a.git")
	require.NoError(t, err)
	left, err := projects.Delete(ctx, listed())
	require.NoError(t, err)
	assert.Positive(t, left, "a caller's Ensure within the grace: not yet")
	assert.NoError(t, c.Get(ctx, key, &argov1alpha1.AppProject{}), "kept while its caller may be writing its Application")

	time.Sleep(grace)
	before := listed()
	// An Ensure lands between the listing and the delete: it changed the project.
	_, err = projects.Ensure(ctx, ns.Name, "https://git.example.test/b.git")
	require.NoError(t, err)
	time.Sleep(grace)
	left, err = projects.Delete(ctx, before)
	require.NoError(t, err)
	assert.Zero(t, left)
	assert.Contains(t, listed().Spec.SourceRepos, "https://git.example.test/b.git", "a project changed since it was listed is kept")

	// Listed again, unchanged, with no Ensure within the grace: it goes.
	left, err = projects.Delete(ctx, listed())
	require.NoError(t, err)
	assert.Zero(t, left)
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, key, &argov1alpha1.AppProject{})), "the unused project is deleted")
}
