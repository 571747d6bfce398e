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

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
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
		ns.Labels = map[string]string{kernel.LabelArgoCDInstance: instance}
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
	return obj.Annotations[kernel.AnnotationServedBy]
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
	ns := &corev1.Namespace{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Name: onA}, ns))
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels[kernel.LabelArgoCDInstance] = "b"
	require.NoError(t, k8s.Patch(ctx, ns, patch))

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
	close(stop)
	<-watched
	assert.Empty(t, duplicate, "both instances had an Application of the moved tenant at once")

	// Nothing of the tenant left in a's namespace: no orphan.
	_, err = application(nsA, gdA)
	assert.True(t, apierrors.IsNotFound(err), "a's Application of the moved tenant is still there: %v", err)
	assert.Zero(t, ofTenant(t, nsA, onA), "instance a left objects of the moved tenant")
	// The workload was neither pruned nor recreated.
	moved := &appsv1.Deployment{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: onA, Name: "web"}, moved))
	assert.Equal(t, deployment.UID, moved.UID, "the Deployment was recreated")
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
