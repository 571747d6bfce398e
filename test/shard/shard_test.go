//go:build !unit

package shard

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	deployWait = 3 * time.Minute
	poll       = 250 * time.Millisecond
)

// workload is a ConfigMap and a Deployment whose Pod runs (RunPods).
func workload(value string) map[string]string {
	return map[string]string{
		"app/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  value: %q\n", value),
		"app/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web, %s: "true"}
    spec:
      containers:
      - name: main
        image: registry.example.com/web:1
`, stack.PodRunLabel),
	}
}

// tenant creates a namespace, labelled for instance (none when "").
func tenant(t *testing.T, instance string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + rand.String(6)}}
	if instance != "" {
		ns.Labels = map[string]string{sharding.LabelArgoCDInstance: instance}
	}
	require.NoError(t, k8s.Create(context.Background(), ns))
	return ns.Name
}

func deploy(t *testing.T, ns, repoURL string) *v1.GitOpsDeployment {
	t.Helper()
	gd := &v1.GitOpsDeployment{
		// The client's finalizer: deleting the deployment deletes what it
		// deployed (the instance serving it then must do it).
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Finalizers: []string{v1.FinalizerResourcesFinalizer}},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: repoURL, Path: "app"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	require.NoError(t, k8s.Create(context.Background(), gd))
	return gd
}

func syncedHealthyAt(rev string) func(*v1.GitOpsDeployment) bool {
	return func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.Sync.Status == v1.SyncStatusCodeSynced && gd.Status.Health.Status == v1.HealthStatusHealthy &&
			gd.Status.Sync.Revision == rev
	}
}

// ofTenant counts what the sidecar of an Argo CD namespace made for a tenant
// there: Applications, ApplicationSets, AppProjects, Secrets.
func ofTenant(t *testing.T, argoNS, tenantNS string) int {
	t.Helper()
	sel := []client.ListOption{client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: tenantNS}}
	n := 0
	for _, list := range []client.ObjectList{&argov1alpha1.ApplicationList{}, &argov1alpha1.ApplicationSetList{}, &argov1alpha1.AppProjectList{}, &corev1.SecretList{}} {
		require.NoError(t, k8s.List(context.Background(), list, sel...))
		items, err := metaItems(list)
		require.NoError(t, err)
		n += items
	}
	return n
}

func metaItems(list client.ObjectList) (int, error) {
	switch l := list.(type) {
	case *argov1alpha1.ApplicationList:
		return len(l.Items), nil
	case *argov1alpha1.ApplicationSetList:
		return len(l.Items), nil
	case *argov1alpha1.AppProjectList:
		return len(l.Items), nil
	case *corev1.SecretList:
		return len(l.Items), nil
	}
	return 0, fmt.Errorf("unexpected list %T", list)
}

func application(argoNS string, gd *v1.GitOpsDeployment) (*argov1alpha1.Application, error) {
	app := &argov1alpha1.Application{}
	return app, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}, app)
}

func servedBy(t *testing.T, ns string) string {
	t.Helper()
	obj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, obj))
	return obj.Annotations[sharding.AnnotationServedBy]
}

// runningPod is the UID of the Deployment's one running Pod.
func runningPod(t *testing.T, ns string) types.UID {
	t.Helper()
	var uid types.UID
	require.Eventually(t, func() bool {
		var pods corev1.PodList
		if err := k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil || len(pods.Items) != 1 {
			return false
		}
		uid = pods.Items[0].UID
		return pods.Items[0].Status.Phase == corev1.PodRunning
	}, deployWait, poll, "the workload's Pod never ran")
	return uid
}

// Two tenants, one per instance, and an unlabelled one for the default: each
// instance's Argo CD namespace holds only its own tenants' objects. Then a
// tenant moves from a to b by its label alone: a releases it without pruning
// the workload, b takes it over only after that (never both Applications at
// once), and the same Deployment and Pod keep running under b's Application.
func TestTenantsOverTwoArgoCDInstances(t *testing.T) {
	ctx := context.Background()
	onA, onB, unlabelled := tenant(t, "a"), tenant(t, "b"), tenant(t, "")
	repo, err := stack.NewGitRepo(gitRoot, "repo-"+rand.String(6))
	require.NoError(t, err)
	sha, err := repo.Commit(workload("one"), "initial content")
	require.NoError(t, err)

	gdA, gdB := deploy(t, onA, repo.URL), deploy(t, onB, repo.URL)
	gdA = stack.WaitFor(t, k8s, gdA, deployWait, "Synced/Healthy through instance a", syncedHealthyAt(sha))
	gdB = stack.WaitFor(t, k8s, gdB, deployWait, "Synced/Healthy through instance b", syncedHealthyAt(sha))

	// Each tenant's Application is in its own instance's namespace only, and
	// nothing of a tenant is in the other instance's.
	_, err = application(nsA, gdA)
	require.NoError(t, err, "tenant %s's Application in %s", onA, nsA)
	_, err = application(nsB, gdB)
	require.NoError(t, err, "tenant %s's Application in %s", onB, nsB)
	assert.Zero(t, ofTenant(t, nsB, onA), "instance b made something for a's tenant")
	assert.Zero(t, ofTenant(t, nsA, onB), "instance a made something for b's tenant")
	assert.Equal(t, "a", servedBy(t, onA))
	assert.Equal(t, "b", servedBy(t, onB))
	// The default instance claims an unlabelled namespace; b, not a default, does not.
	require.Eventually(t, func() bool { return servedBy(t, unlabelled) == "a" }, deployWait, poll,
		"the default instance never claimed the unlabelled namespace")

	deployment := &appsv1.Deployment{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: onA, Name: "web"}, deployment))
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: onA, Name: "settings"}, cm))
	pod := runningPod(t, onA)

	// Watch both instances' namespaces through the move: never an
	// Application of the tenant in both (two Argo CDs syncing one workload).
	var both sync.Once
	var duplicate string
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			_, errA := application(nsA, gdA)
			_, errB := application(nsB, gdA)
			if errA == nil && errB == nil {
				both.Do(func() { duplicate = time.Now().Format(time.RFC3339Nano) })
			}
		}
	}()

	// The move: the platform admin relabels the namespace, nothing else.
	moved := time.Now()
	moveTo(t, onA, "b")

	require.Eventually(t, func() bool { return servedBy(t, onA) == "b" }, deployWait, poll,
		"instance a never released the tenant to b (served-by is %q)", servedBy(t, onA))
	require.Eventually(t, func() bool {
		_, err := application(nsB, gdA)
		return err == nil
	}, deployWait, poll, "instance b never made the moved tenant's Application")
	// b's Argo CD adopts the running workload: Synced and Healthy again at
	// the same commit, through b's Application.
	require.Eventually(t, func() bool {
		app, err := application(nsB, gdA)
		return err == nil && app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced &&
			app.Status.Sync.Revision == sha && app.Status.Health.Status == "Healthy"
	}, deployWait, poll, "instance b's Application of the moved tenant never became Synced/Healthy")
	stack.WaitFor(t, k8s, gdA, deployWait, "Synced/Healthy through instance b", syncedHealthyAt(sha))
	t.Logf("moved: Synced/Healthy through instance b %s after the label change", time.Since(moved).Round(time.Millisecond))
	close(stop)
	<-watched
	assert.Empty(t, duplicate, "both instances had an Application of the moved tenant at once")

	// Nothing of the tenant left in a's namespace: no orphan.
	_, err = application(nsA, gdA)
	assert.True(t, apierrors.IsNotFound(err), "a's Application of the moved tenant is still there: %v", err)
	assert.Zero(t, ofTenant(t, nsA, onA), "instance a left objects of the moved tenant")
	// The workload was neither pruned nor recreated.
	movedDeployment := &appsv1.Deployment{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: onA, Name: "web"}, movedDeployment))
	assert.Equal(t, deployment.UID, movedDeployment.UID, "the Deployment was recreated")
	movedCM := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: onA, Name: "settings"}, movedCM))
	assert.Equal(t, cm.UID, movedCM.UID, "the ConfigMap was recreated")
	assert.Equal(t, pod, runningPod(t, onA), "the Pod was replaced")
	// Tenant b and the unlabelled one were not touched by the move.
	assert.Equal(t, "b", servedBy(t, onB))
	assert.Equal(t, "a", servedBy(t, unlabelled))

	// b now follows the tenant's pushes...
	sha2, err := repo.Commit(map[string]string{"app/configmap.yaml": workload("two")["app/configmap.yaml"]}, "change value")
	require.NoError(t, err)
	require.NoError(t, argoB.Refresh(ctx, "", argocd.ApplicationName(string(gdA.UID))))
	stack.WaitFor(t, k8s, gdA, deployWait, "Synced at the pushed commit through instance b", syncedHealthyAt(sha2))
	// ...and deletes it: the client's finalizer, which a left alone, is b's
	// to act on: b's Argo CD prunes the workload, then b removes it.
	require.NoError(t, k8s.Delete(ctx, gdA))
	require.Eventually(t, func() bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(gdA), &v1.GitOpsDeployment{})
		return apierrors.IsNotFound(err)
	}, deployWait, poll, "the moved tenant's GitOpsDeployment was never deleted")
	require.Eventually(t, func() bool {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: onA, Name: "web"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err)
	}, deployWait, poll, "deleting the moved tenant's GitOpsDeployment did not remove its workload")
	assert.Zero(t, ofTenant(t, nsA, onA))
}

// moveTo relabels namespace ns for instance, as the platform admin does.
func moveTo(t *testing.T, ns, instance string) {
	t.Helper()
	obj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, obj))
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Labels[sharding.LabelArgoCDInstance] = instance
	require.NoError(t, k8s.Patch(context.Background(), obj, patch))
}

// A binding's ApplicationSet moves too: a releases its ApplicationSet
// (orphaning the generated Application, which it then deletes without
// pruning), b's applicationset controller generates the Application anew
// through b's plugin generator, and the component's Deployment keeps running.
func TestBindingMovesWithItsTenant(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t, "a")
	files := map[string]string{
		"components/web/base/kustomization.yaml": "resources:\n- deployment.yaml\n",
		"components/web/base/deployment.yaml":    workload("")["app/deployment.yaml"],
	}
	repo, err := stack.NewGitRepo(gitRoot, "repo-"+rand.String(6))
	require.NoError(t, err)
	_, err = repo.Commit(files, "initial content")
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: as.ApplicationSpec{DisplayName: "Shop"}}))
	comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: as.ComponentSpec{ComponentName: "web", Application: "shop", ContainerImage: "registry.example.com/web:1"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: repo.URL, Branch: "main", Context: "components/web/base"}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"},
		Spec: as.EnvironmentSpec{DisplayName: "Dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-1"},
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "registry.example.com/web:v1"}}}}))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-1",
			Components: []as.BindingComponent{{Name: "web"}}}}
	require.NoError(t, k8s.Create(ctx, seb))

	deployed := func() bool {
		d := &appsv1.Deployment{}
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d) == nil &&
			d.Spec.Template.Spec.Containers[0].Image == "registry.example.com/web:v1"
	}
	require.Eventually(t, deployed, deployWait, poll, "the Snapshot's image was never deployed through instance a")
	count := func(argoNS string, list client.ObjectList) int {
		require.NoError(t, k8s.List(ctx, list, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
		n, err := metaItems(list)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, 1, count(nsA, &argov1alpha1.ApplicationSetList{}))
	require.Eventually(t, func() bool { return count(nsA, &argov1alpha1.ApplicationList{}) == 1 }, deployWait, poll)
	assert.Zero(t, ofTenant(t, nsB, ns))
	before := &appsv1.Deployment{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, before))
	pod := runningPod(t, ns)

	moveTo(t, ns, "b")
	require.Eventually(t, func() bool { return servedBy(t, ns) == "b" }, deployWait, poll, "instance a never released the tenant")
	require.Eventually(t, func() bool {
		var apps argov1alpha1.ApplicationList
		if err := k8s.List(ctx, &apps, client.InNamespace(nsB), client.MatchingLabels{ownership.LabelTenantNS: ns}); err != nil || len(apps.Items) != 1 {
			return false
		}
		return apps.Items[0].Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && apps.Items[0].Status.Health.Status == "Healthy"
	}, deployWait, poll, "instance b's applicationset controller never generated a Synced/Healthy Application")
	assert.Equal(t, 1, count(nsB, &argov1alpha1.ApplicationSetList{}))
	assert.Zero(t, ofTenant(t, nsA, ns), "instance a left objects of the moved tenant")
	after := &appsv1.Deployment{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, after))
	assert.Equal(t, before.UID, after.UID, "the Deployment was recreated")
	assert.Equal(t, pod, runningPod(t, ns), "the Pod was replaced")
	assert.True(t, deployed())
}
