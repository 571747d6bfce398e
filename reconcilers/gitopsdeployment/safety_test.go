//go:build !unit

package gitopsdeployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

func namespaceUID(t *testing.T, ns string) string {
	t.Helper()
	obj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, obj))
	return string(obj.UID)
}

// Defect 2 of issue 13: the repo-server would read any repository on its own
// disk for a file:// URL. Only network URLs are accepted (this suite's sidecar
// does not have --allow-file-repositories).
func TestRefusesRepositoryURLsThatAreNotNetworkURLs(t *testing.T) {
	ns := tenant(t)
	for name, url := range map[string]string{
		"file":          "file:///var/lib/argocd/other-tenant.git",
		"file-host":     "file://localhost/etc",
		"absolute-path": "/srv/git/other-tenant.git",
		"relative-path": "../other-tenant",
		"ext-helper":    "ext::sh -c touch% /tmp/pwned",
		"option-like":   "--upload-pack=touch /tmp/pwned",
		"password":      "https://jane:hunter2@git.example.com/jane/apps.git",
	} {
		t.Run(name, func(t *testing.T) {
			gd := create(t, newDeployment(ns, name, func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = url }))
			got := waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, "spec.source.repoURL")
			assert.NotContains(t, errorMessageOf(got), "hunter2", "the condition repeats the password")
			assertNoApplication(t, gd)
		})
	}
	var projects argov1alpha1.AppProjectList
	require.NoError(t, k8s.List(context.Background(), &projects, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
	assert.Empty(t, projects.Items, "an AppProject was written for a tenant with only refused URLs")

	// The same tenant with a network URL deploys (the refusals above are not a
	// broken tenant).
	for i, url := range []string{"git@git.example.com:jane/apps.git", "http://127.0.0.1:9/apps.git", "git://git.example.com/apps.git"} {
		gd := create(t, newDeployment(ns, fmt.Sprintf("ok-%d", i), func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = url }))
		app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
		assert.Equal(t, url, app.Spec.Source.RepoURL)
	}
}

func errorMessageOf(gd *v1.GitOpsDeployment) string {
	for _, c := range gd.Status.Conditions {
		if c.Type == v1.GitOpsDeploymentConditionErrorOccurred {
			return c.Message
		}
	}
	return ""
}

// Defect 3 of issue 13: an AppProject we did not make that already has the
// tenant's project name (not labelled as ours, or labelled for another
// namespace) is never used.
func TestSquattedAppProjectIsNeverUsed(t *testing.T) {
	for name, labels := range map[string]func(uid string) map[string]string{
		"unlabelled": func(string) map[string]string { return nil },
		"labelled for another namespace": func(string) map[string]string {
			return map[string]string{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelOwnerKind: ownership.KindTenant, ownership.LabelOwnerUID: "someone-else"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ns := tenant(t)
			uid := namespaceUID(t, ns)
			squat := &argov1alpha1.AppProject{
				ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ProjectName(uid), Labels: labels(uid)},
				Spec: argov1alpha1.AppProjectSpec{
					SourceRepos:              []string{"*"},
					Destinations:             []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}},
					ClusterResourceWhitelist: []metav1.GroupKind{{Group: "*", Kind: "*"}},
				},
			}
			require.NoError(t, k8s.Create(context.Background(), squat))
			gd := create(t, newDeployment(ns, "victim", nil))
			waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, "was not created by the GitOps Service")
			assertNoApplication(t, gd)
			after := &argov1alpha1.AppProject{}
			require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(squat), after))
			assert.Equal(t, squat.Spec, after.Spec, "the squatted project was changed")
			assert.Equal(t, squat.ResourceVersion, after.ResourceVersion, "the squatted project was written to")

			// Once the admin removes it, the tenant gets its own project (the
			// squatted project is not watched: the deployment looks again every 10 s).
			require.NoError(t, k8s.Delete(context.Background(), squat))
			app := &argov1alpha1.Application{}
			require.Eventually(t, func() bool { return k8s.Get(context.Background(), appKey(gd), app) == nil }, 2*wait, tick,
				"no Application after the squatted project was removed")
			proj := &argov1alpha1.AppProject{}
			require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: app.Spec.Project}, proj))
			assert.True(t, ownership.IsOwnedBy(proj.Labels, ownership.KindTenant, uid))
			assert.Equal(t, []argov1alpha1.ApplicationDestination{{Server: argocd.LocalServer, Namespace: ns}}, proj.Spec.Destinations)
		})
	}
}

// Defect 4 of issue 13: the tenant reconciler deleted every new tenant's
// AppProject right after the first deployment (its cache did not show the
// Application yet), and Argo CD saw an Application of a missing project.
func TestNewTenantProjectIsKeptPastItsGracePeriod(t *testing.T) {
	for i := 0; i < 3; i++ {
		ns := tenant(t)
		gd := create(t, newDeployment(ns, "first", nil))
		app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
		proj := &argov1alpha1.AppProject{}
		require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: app.Spec.Project}, proj))
		first := proj.UID
		require.Never(t, func() bool {
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(proj), proj)
			return err != nil || proj.UID != first || !proj.DeletionTimestamp.IsZero()
		}, projectGrace+2*time.Second, 100*time.Millisecond, "the new tenant's AppProject was deleted (or recreated) while its Application uses it")
	}
}

// Defect 4 of issue 13: a look-alike Application (our managed-by label and the
// tenant's label, but no owner) does not keep the tenant's project alive, and
// is itself never touched.
func TestLookAlikeApplicationDoesNotKeepProjectAlive(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "only", nil))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	lookAlike := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "look-alike-" + rand.String(6),
			Labels: map[string]string{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: ns}},
		Spec: argov1alpha1.ApplicationSpec{
			Project:     app.Spec.Project,
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/evil.git", Path: "."},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: ns},
		},
	}
	require.NoError(t, k8s.Create(context.Background(), lookAlike))
	proj := &argov1alpha1.AppProject{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: app.Spec.Project}, proj))
	assert.NotContains(t, proj.Spec.SourceRepos, "https://git.example.com/evil.git", "a look-alike widened the project")

	require.NoError(t, k8s.Delete(context.Background(), gd))
	waitGone(t, app)
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(proj), &argov1alpha1.AppProject{}))
	}, wait+projectGrace, tick, "the tenant's AppProject was kept alive by a look-alike Application")
	after := &argov1alpha1.Application{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(lookAlike), after), "the look-alike Application was deleted")
	assert.Equal(t, lookAlike.ResourceVersion, after.ResourceVersion, "the look-alike Application was written to")
}
