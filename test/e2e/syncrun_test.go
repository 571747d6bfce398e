package e2e

import (
	"context"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/syncrun"
	"github.com/gitops-service/gitops-service/test/stack"
)

func syncRun(t *testing.T, ns, name, deployment, revision string) *v1.GitOpsDeploymentSyncRun {
	t.Helper()
	run := &v1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: revision},
	}
	require.NoError(t, k8s.Create(context.Background(), run))
	return run
}

func waitRun(t *testing.T, run *v1.GitOpsDeploymentSyncRun, what string, ok func(*v1.GitOpsDeploymentSyncRun) bool) *v1.GitOpsDeploymentSyncRun {
	t.Helper()
	return stack.WaitFor(t, k8s, run, deployWait, "became "+what, ok)
}

// succeededAt: the run synced rev and recorded the sync status of Argo CD's
// comparison after the sync (against the deployment's target revision).
func succeededAt(rev string, sync v1.SyncStatusCode) func(*v1.GitOpsDeploymentSyncRun) bool {
	return func(r *v1.GitOpsDeploymentSyncRun) bool {
		return r.Status.Phase == v1.OperationSucceeded && r.Status.Revision == rev &&
			r.Status.SyncStatus == sync && r.Status.StartedAt != nil
	}
}

func application(t *testing.T, gd *v1.GitOpsDeployment) *argov1alpha1.Application {
	t.Helper()
	app := &argov1alpha1.Application{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argo.Namespace, Name: applicationName(t, gd)}, app))
	return app
}

func TestSyncRunDeploysHeadThenAnOlderRevision(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	repo, first := gitRepo(t, map[string]string{"app/cm.yaml": configMap("synced", "first")})
	second, err := repo.Commit(map[string]string{"app/cm.yaml": configMap("synced", "second")}, "second")
	require.NoError(t, err)
	gd := deploy(t, ns, "manual", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	waitStatus(t, gd, "OutOfSync", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeOutOfSync })

	// No revision: the deployment's target (HEAD).
	run := syncRun(t, ns, "to-head", "manual", "")
	got := waitRun(t, run, "Succeeded at "+second, succeededAt(second, v1.SyncStatusCodeSynced))
	kubectlWaitReady(t, ns, resSyncRun, run.Name)
	cm, err := getConfigMap(ns, "synced")
	require.NoError(t, err)
	assert.Equal(t, "second", cm.Data["value"])
	assert.NotContains(t, got.Finalizers, syncrun.Finalizer, "a finished run holds nothing")
	assert.Equal(t, v1.GitOpsConditionStatusFalse, got.Status.Conditions[0].Status)
	assert.Equal(t, syncrun.MsgSucceeded, got.Status.Conditions[0].Message)
	op := application(t, gd).Status.OperationState
	require.NotNil(t, op)
	assert.Equal(t, syncrun.Initiator, op.Operation.InitiatedBy.Username)

	// An older revision, by commit: deployed, and then OutOfSync, because the
	// deployment still targets HEAD (as after `argocd app sync --revision`).
	older := syncRun(t, ns, "to-first", "manual", first)
	waitRun(t, older, "Succeeded at "+first+" and OutOfSync with HEAD", succeededAt(first, v1.SyncStatusCodeOutOfSync))
	cm, err = getConfigMap(ns, "synced")
	require.NoError(t, err)
	assert.Equal(t, "first", cm.Data["value"])

	// A finished run is never run again: touching it, or a resync, starts nothing.
	startedAt := application(t, gd).Status.OperationState.StartedAt
	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations = map[string]string{"touched": "yes"}
	require.NoError(t, k8s.Patch(ctx, got, patch))
	require.Never(t, func() bool {
		st := application(t, gd).Status.OperationState
		return st == nil || !st.StartedAt.Equal(&startedAt)
	}, 5*time.Second, poll, "a finished SyncRun started another sync")
	cm, err = getConfigMap(ns, "synced")
	require.NoError(t, err)
	assert.Equal(t, "first", cm.Data["value"])
}

func TestSyncRunRefusals(t *testing.T) {
	ns := tenantNamespace(t)
	repo, _ := gitRepo(t, map[string]string{"app/cm.yaml": configMap("auto", "x")})
	gd := deploy(t, ns, "auto", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	onAutomated := syncRun(t, ns, "on-automated", "auto", "")
	waitRun(t, onAutomated, "refused", func(r *v1.GitOpsDeploymentSyncRun) bool {
		return errorOccurred("Syncing a GitOpsDeployment with Automated sync policy is not allowed")(r) && r.Status.StartedAt == nil
	})
	require.Never(t, func() bool {
		app := application(t, gd)
		return app.Status.OperationState != nil && app.Status.OperationState.Operation.InitiatedBy.Username == syncrun.Initiator
	}, 3*time.Second, poll, "a sync was started for an automated deployment")

	missing := syncRun(t, ns, "missing", "does-not-exist", "")
	waitRun(t, missing, "refused", func(r *v1.GitOpsDeploymentSyncRun) bool {
		return errorOccurred("Unable to retrieve GitOpsDeployment 'does-not-exist'")(r)
	})
	// The deployment of another tenant with that name is not reached.
	other := tenantNamespace(t)
	deploy(t, other, "does-not-exist", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	require.Never(t, func() bool {
		got := &v1.GitOpsDeploymentSyncRun{}
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(missing), got) == nil && got.Status.StartedAt != nil
	}, 3*time.Second, poll, "a SyncRun reached another namespace's deployment")
}

// slowSync is a Deployment that never becomes healthy (no kubelet) in wave 0
// and a ConfigMap in wave 1: Argo CD's sync waits on wave 0 forever.
const slowSync = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: never-ready
  annotations:
    argocd.argoproj.io/sync-wave: "0"
spec:
  replicas: 1
  selector:
    matchLabels: {app: never-ready}
  template:
    metadata:
      labels: {app: never-ready}
    spec:
      containers:
      - name: c
        image: registry.invalid/never:1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: after-wave
  annotations:
    argocd.argoproj.io/sync-wave: "1"
data:
  value: "late"
`

func TestSyncRunDeletedWhileRunningTerminatesTheSync(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	repo, _ := gitRepo(t, map[string]string{"app/all.yaml": slowSync})
	gd := deploy(t, ns, "slow", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	// Created at once, before Argo CD has even compared the Application: the run waits for that.
	run := syncRun(t, ns, "slow", "slow", "")
	waitRun(t, run, "Running", func(r *v1.GitOpsDeploymentSyncRun) bool { return r.Status.Phase == v1.OperationRunning })
	require.Eventually(t, func() bool {
		st := application(t, gd).Status.OperationState
		return st != nil && st.Phase == "Running"
	}, deployWait, poll, "Argo CD never picked the sync up")

	require.NoError(t, k8s.Delete(ctx, run))
	waitDeleted(t, run)
	require.Eventually(t, func() bool {
		st := application(t, gd).Status.OperationState
		return st != nil && st.Phase.Completed() && st.Phase != "Succeeded"
	}, deployWait, poll, "the sync was not terminated")
	_, err := getConfigMap(ns, "after-wave")
	require.Error(t, err, "the sync went on past the wave it was terminated in")
	assert.True(t, ownership.IsOwnedBy(application(t, gd).Labels, ownership.KindGitOpsDeployment, application(t, gd).Labels[ownership.LabelOwnerUID]))
}
