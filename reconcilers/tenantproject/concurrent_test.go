//go:build !unit

package tenantproject_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Issue 23: 40 deployments of 40 repositories in one tenant, all at once,
// each as the GitOpsDeployment reconciler does it (Ensure with its repository,
// then its Application), while the tenant reconciler's pass (Ensure without
// repositories) runs over and over: no repository is ever missing from the
// tenant's project once its Ensure, or its whole deployment, reported success.
func TestConcurrentDeploymentsKeepEveryRepository(t *testing.T) {
	ctx, c, mgr := startAPIServer(t, "tenantproject")
	const grace = 3 * time.Second
	projects := &tenantproject.Projects{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: stack.SuiteArgoNamespace, Grace: grace}

	ns := stack.Tenant(t, c)
	key := types.NamespacedName{Namespace: stack.SuiteArgoNamespace, Name: argocd.ProjectName(string(ns.UID))}
	// The first deployment made the project; its cache may not show it yet.
	_, err := projects.Ensure(ctx, ns.Name, "https://git.example.test/first.git")
	require.NoError(t, err)

	var mu sync.Mutex
	var succeeded []string // repositories whose Ensure reported success
	missing := func() []string {
		// What had succeeded before the project is read.
		mu.Lock()
		ensured := slices.Clone(succeeded)
		mu.Unlock()
		proj := &argov1alpha1.AppProject{}
		if err := c.Get(ctx, key, proj); err != nil {
			return []string{"(project: " + err.Error() + ")"}
		}
		var out []string
		for _, r := range ensured {
			if !slices.Contains(proj.Spec.SourceRepos, r) {
				out = append(out, r)
			}
		}
		return out
	}

	const n = 40
	stopTenant := make(chan struct{})
	tenantDone := make(chan struct{})
	go func() {
		defer close(tenantDone)
		for {
			select {
			case <-stopTenant:
				return
			default:
			}
			if _, err := projects.Ensure(ctx, ns.Name); err != nil {
				assert.NoError(t, err, "the tenant's pass")
			}
			assert.Empty(t, missing(), "repositories missing after the tenant's pass")
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			repo := fmt.Sprintf("https://git.example.test/repo-%02d.git", i)
			name, err := projects.Ensure(ctx, ns.Name, repo)
			if !assert.NoError(t, err, repo) {
				return
			}
			mu.Lock()
			succeeded = append(succeeded, repo)
			mu.Unlock()
			assert.Empty(t, missing(), "repositories missing after %s was ensured", repo)
			gd := fmt.Sprintf("gd-%02d", i)
			labels, annotations := ownership.Meta(ownership.KindGitOpsDeployment, ns.Name, gd, "uid-"+gd)
			assert.NoError(t, c.Create(ctx, &argov1alpha1.Application{
				ObjectMeta: metav1.ObjectMeta{Namespace: stack.SuiteArgoNamespace, Name: gd + "-" + ns.Name, Labels: labels, Annotations: annotations},
				Spec: argov1alpha1.ApplicationSpec{Project: name,
					Source:      &argov1alpha1.ApplicationSource{RepoURL: repo, Path: "."},
					Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: ns.Name}},
			}))
			assert.Empty(t, missing(), "repositories missing after the Application of %s was written", repo)
		}()
	}
	wg.Wait()
	// A few more tenant passes once every Application is written and cached.
	time.Sleep(time.Second)
	close(stopTenant)
	<-tenantDone
	_, err = projects.Ensure(ctx, ns.Name)
	require.NoError(t, err)
	assert.Len(t, succeeded, n)
	assert.Empty(t, missing(), "repositories missing at the end")

	// The tenant's pass still drops what no Application uses (first.git was
	// never deployed), at the latest once its grace is over.
	require.Eventually(t, func() bool {
		_, err := projects.Ensure(ctx, ns.Name)
		proj := &argov1alpha1.AppProject{}
		return err == nil && c.Get(ctx, key, proj) == nil && !slices.Contains(proj.Spec.SourceRepos, "https://git.example.test/first.git")
	}, 3*grace, stack.Tick)
	assert.Empty(t, missing(), "repositories missing at the end")
}
