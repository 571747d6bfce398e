package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	deployWait = 90 * time.Second
	// informerWait: argocd-server sees a new Application, project, RBAC or
	// extension setting through its informers; seconds on a quiet machine,
	// far longer on a shared CI machine (load 20+ on 2 cores).
	informerWait = 90 * time.Second
	poll         = 250 * time.Millisecond
)

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

const service = `apiVersion: v1
kind: Service
metadata:
  name: guestbook
spec:
  ports:
  - port: 80
    targetPort: 8080
  selector:
    app: guestbook
`

func deploy(t *testing.T, ns, name, repoURL, path string, typ v1.GitOpsDeploymentSpecType, mut func(*v1.GitOpsDeployment)) *v1.GitOpsDeployment {
	t.Helper()
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: repoURL, Path: path},
			Type:   typ,
		},
	}
	if mut != nil {
		mut(gd)
	}
	require.NoError(t, k8s.Create(context.Background(), gd))
	return gd
}

// waitStatus polls the GitOpsDeployment until ok holds, and returns it.
func waitStatus(t *testing.T, gd *v1.GitOpsDeployment, what string, ok func(*v1.GitOpsDeployment) bool) *v1.GitOpsDeployment {
	t.Helper()
	return stack.WaitFor(t, k8s, gd, deployWait, "became "+what, ok)
}

func syncedHealthyAt(rev string) func(*v1.GitOpsDeployment) bool {
	return func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.Sync.Status == v1.SyncStatusCodeSynced && gd.Status.Health.Status == v1.HealthStatusHealthy &&
			gd.Status.Sync.Revision == rev
	}
}

func getConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	return cm, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm)
}

func TestAutomatedDeploysAndFollowsPushes(t *testing.T) {
	ns := tenantNamespace(t)
	repo, sha1 := gitRepo(t, map[string]string{
		"guestbook/configmap.yaml": configMap("settings", "one"),
		"guestbook/service.yaml":   service,
	})
	gd := deploy(t, ns, "guestbook", repo.URL, "guestbook", v1.GitOpsDeploymentSpecTypeAutomated, nil)

	// Argo CD reports Synced/Healthy a moment before it closes the operation:
	// wait for both, then the operation must have succeeded.
	got := waitStatus(t, gd, "Synced/Healthy at the first commit, the sync operation ended", func(g *v1.GitOpsDeployment) bool {
		return syncedHealthyAt(sha1)(g) && g.Status.OperationState != nil && g.Status.OperationState.Phase != v1.OperationRunning
	})
	// What a user (or a kstatus tool) waits for: done, at this generation.
	out, err := kubectl(t, "wait", "-n", ns, "gitopsdeployment/"+gd.Name, "--for=condition=Ready", "--timeout=60s")
	require.NoError(t, err, out)
	out, err = kubectl(t, "wait", "-n", ns, "gitopsdeployment/"+gd.Name, "--for=jsonpath={.status.observedGeneration}="+fmt.Sprint(got.Generation), "--timeout=10s")
	require.NoError(t, err, out)
	cm, err := getConfigMap(ns, "settings")
	require.NoError(t, err)
	assert.Equal(t, "one", cm.Data["value"])
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "guestbook"}, &corev1.Service{}))
	assert.Len(t, got.Status.Resources, 2)
	assert.Equal(t, "guestbook", got.Status.ReconciledState.Source.Path)
	assert.Equal(t, repo.URL, got.Status.ReconciledState.Source.RepoURL)
	assert.Equal(t, ns, got.Status.ReconciledState.Destination.Namespace)
	require.NotNil(t, got.Status.OperationState)
	assert.Equal(t, v1.OperationSucceeded, got.Status.OperationState.Phase)
	assert.True(t, got.Status.OperationState.Operation.InitiatedBy.Automated)

	// A push is deployed without anyone touching the CR.
	sha2, err := repo.Commit(map[string]string{"guestbook/configmap.yaml": configMap("settings", "two")}, "change value")
	require.NoError(t, err)
	require.NoError(t, argo.Refresh(context.Background(), "", argocd.ApplicationName(string(gd.UID))))
	waitStatus(t, gd, "Synced/Healthy at the pushed commit", syncedHealthyAt(sha2))
	require.Eventually(t, func() bool {
		cm, err := getConfigMap(ns, "settings")
		return err == nil && cm.Data["value"] == "two"
	}, deployWait, poll)

	// Self-heal: a hand edit of a deployed resource is reverted.
	cm, err = getConfigMap(ns, "settings")
	require.NoError(t, err)
	cm.Data["value"] = "edited by hand"
	require.NoError(t, k8s.Update(context.Background(), cm))
	require.Eventually(t, func() bool {
		cm, err := getConfigMap(ns, "settings")
		return err == nil && cm.Data["value"] == "two"
	}, deployWait, poll, "automated deployment did not self-heal")
}

func TestManualStaysOutOfSync(t *testing.T) {
	ns := tenantNamespace(t)
	repo, sha := gitRepo(t, map[string]string{"app/configmap.yaml": configMap("manual", "x")})
	gd := deploy(t, ns, "manual", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	waitStatus(t, gd, "OutOfSync", func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.Sync.Status == v1.SyncStatusCodeOutOfSync && gd.Status.Sync.Revision == sha
	})
	require.Never(t, func() bool {
		_, err := getConfigMap(ns, "manual")
		return err == nil
	}, 5*time.Second, poll, "a manual deployment deployed without a sync run")
}

func TestPathChangeUpdatesReconciledState(t *testing.T) {
	ns := tenantNamespace(t)
	repo, sha := gitRepo(t, map[string]string{
		"v1/configmap.yaml": configMap("from-v1", "1"),
		"v2/configmap.yaml": configMap("from-v2", "2"),
	})
	gd := deploy(t, ns, "paths", repo.URL, "v1", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "Synced at v1", syncedHealthyAt(sha))
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
	// A merge patch: the sidecar writes the status meanwhile.
	patch := client.MergeFrom(gd.DeepCopy())
	gd.Spec.Source.Path = "v2"
	require.NoError(t, k8s.Patch(context.Background(), gd, patch))
	waitStatus(t, gd, "reconciled at v2", func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.ReconciledState.Source.Path == "v2" && gd.Status.Sync.Status == v1.SyncStatusCodeSynced
	})
	require.Eventually(t, func() bool {
		_, errNew := getConfigMap(ns, "from-v2")
		_, errOld := getConfigMap(ns, "from-v1")
		return errNew == nil && apierrors.IsNotFound(errOld)
	}, deployWait, poll, "v2 not deployed or v1 not pruned")
}

func TestDeleteWithFinalizerRemovesResourcesFirst(t *testing.T) {
	ns := tenantNamespace(t)
	repo, sha := gitRepo(t, map[string]string{"app/configmap.yaml": configMap("doomed", "x")})
	gd := deploy(t, ns, "doomed", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, func(gd *v1.GitOpsDeployment) {
		gd.Finalizers = []string{v1.FinalizerResourcesFinalizer}
	})
	waitStatus(t, gd, "Synced", syncedHealthyAt(sha))
	require.NoError(t, k8s.Delete(context.Background(), gd))
	// Watch the order: the CR may only disappear after the ConfigMap did.
	deadline := time.Now().Add(deployWait)
	for {
		_, cmErr := getConfigMap(ns, "doomed")
		gdErr := k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), &v1.GitOpsDeployment{})
		if apierrors.IsNotFound(gdErr) {
			require.True(t, apierrors.IsNotFound(cmErr), "GitOpsDeployment went while its ConfigMap still exists")
			break
		}
		require.True(t, time.Now().Before(deadline), "GitOpsDeployment not deleted in time")
		time.Sleep(poll)
	}
	_, err := getConfigMap(ns, "doomed")
	assert.True(t, apierrors.IsNotFound(err))
}

func TestDeleteWithoutFinalizerKeepsResources(t *testing.T) {
	ns := tenantNamespace(t)
	repo, sha := gitRepo(t, map[string]string{"app/configmap.yaml": configMap("kept", "x")})
	gd := deploy(t, ns, "kept", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "Synced", syncedHealthyAt(sha))
	require.NoError(t, k8s.Delete(context.Background(), gd))
	appKey := types.NamespacedName{Namespace: argo.Namespace, Name: argocd.ApplicationName(string(gd.UID))}
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), appKey, &argov1alpha1.Application{}))
	}, deployWait, poll)
	_, err := getConfigMap(ns, "kept")
	assert.NoError(t, err, "deleting without the finalizer must not delete the deployed resources")
}

func TestRefusedDestinationsWriteNoApplication(t *testing.T) {
	ns := tenantNamespace(t)
	repo, _ := gitRepo(t, map[string]string{"app/configmap.yaml": configMap("x", "x")})
	cases := map[string]func(*v1.GitOpsDeployment){
		"other-namespace":     func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Namespace = "kube-system" },
		"missing-environment": func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Environment = "nowhere" },
	}
	for name, mut := range cases {
		t.Run(name, func(t *testing.T) {
			gd := deploy(t, ns, name, repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, mut)
			got := waitStatus(t, gd, "ErrorOccurred", func(gd *v1.GitOpsDeployment) bool {
				for _, c := range gd.Status.Conditions {
					if c.Type == v1.GitOpsDeploymentConditionErrorOccurred && c.Status == v1.GitOpsConditionStatusTrue {
						return true
					}
				}
				return false
			})
			assert.Empty(t, got.Status.Sync.Status)
			out, err := kubectl(t, "wait", "-n", ns, "gitopsdeployment/"+gd.Name, "--for=condition=Ready=False", "--timeout=60s")
			require.NoError(t, err, out)
			var apps argov1alpha1.ApplicationList
			require.NoError(t, k8s.List(context.Background(), &apps, client.InNamespace(argo.Namespace),
				client.MatchingLabels{ownership.LabelOwnerUID: string(gd.UID)}))
			assert.Empty(t, apps.Items, "an Application was written for a refused destination")
		})
	}
}

// A tenant's repository that names another namespace inside its manifests must
// not reach it: the tenant's AppProject only allows its own namespace.
func TestManifestsCannotEscapeTheTenantNamespace(t *testing.T) {
	victim := tenantNamespace(t)
	attacker := tenantNamespace(t)
	repo, _ := gitRepo(t, map[string]string{
		"app/escape.yaml": strings.Replace(configMap("planted", "x"), "metadata:\n", "metadata:\n  namespace: "+victim+"\n", 1),
		"app/role.yaml":   "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: planted-" + attacker + "\nrules: []\n",
	})
	gd := deploy(t, attacker, "escape", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "refused by Argo CD", func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.Sync.Status != "" && gd.Status.Sync.Status != v1.SyncStatusCodeSynced
	})
	require.Never(t, func() bool {
		_, err := getConfigMap(victim, "planted")
		return err == nil
	}, 10*time.Second, poll, "a tenant deployed into another tenant's namespace")
	err := k8s.Get(context.Background(), types.NamespacedName{Name: "planted-" + attacker}, &rbacv1.ClusterRole{})
	assert.True(t, apierrors.IsNotFound(err), "a tenant created a cluster-scoped resource: %v", err)
}

// A kustomize overlay deploys like a plain directory (the repo-server runs kustomize).
func TestKustomizeOverlayDeploys(t *testing.T) {
	ns := tenantNamespace(t)
	repo, sha := gitRepo(t, map[string]string{
		"base/kustomization.yaml":         "resources:\n- configmap.yaml\n",
		"base/configmap.yaml":             configMap("settings", "base"),
		"overlays/dev/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: dev-\n",
	})
	gd := deploy(t, ns, "overlay", repo.URL, "overlays/dev", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "Synced/Healthy", syncedHealthyAt(sha))
	cm, err := getConfigMap(ns, "dev-settings")
	require.NoError(t, err)
	assert.Equal(t, "base", cm.Data["value"])
}
