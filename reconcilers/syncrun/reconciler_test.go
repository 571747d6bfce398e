//go:build !unit

package syncrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/syncrun"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	wait = 30 * time.Second
	tick = 100 * time.Millisecond
)

// A SyncRun starts its sync by writing only the Application's .operation
// (Argo CD's status and others' fields stay), and deleting it while the sync
// runs sets the operation Terminating, as `argocd app terminate-op` does.
func TestStartsThenTerminatesWithPatchesOfItsOwnFields(t *testing.T) {
	ctx := context.Background()
	ns := "tenant-" + rand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://git.example.com/jane/apps.git", Path: "p"},
			Type: v1.GitOpsDeploymentSpecTypeManual}}
	require.NoError(t, k8s.Create(ctx, gd))
	app := &argov1alpha1.Application{}
	key := types.NamespacedName{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}
	require.Eventually(t, func() bool { return k8s.Get(ctx, key, app) == nil }, wait, tick, "no Application")

	// Play Argo CD: it has compared the Application; someone labels it.
	now := metav1.Now()
	theirs := []byte(`{"metadata":{"labels":{"team":"payments"}},"status":{"reconciledAt":"` + now.UTC().Format(time.RFC3339) + `","sync":{"status":"OutOfSync","revision":"abc"}}}`)
	require.NoError(t, k8s.Patch(ctx, app, client.RawPatch(types.MergePatchType, theirs)))

	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: gd.Name, RevisionID: "v2"}}
	require.NoError(t, k8s.Create(ctx, run))
	require.Eventually(t, func() bool { return k8s.Get(ctx, key, app) == nil && app.Operation != nil }, wait, tick, "the sync was not started")
	require.NotNil(t, app.Operation.Sync)
	assert.Equal(t, "v2", app.Operation.Sync.Revision)
	assert.Equal(t, syncrun.Initiator, app.Operation.InitiatedBy.Username)
	require.Len(t, app.Operation.Info, 1)
	assert.Equal(t, string(run.UID), app.Operation.Info[0].Value)
	assert.Equal(t, "payments", app.Labels["team"], "someone else's label was dropped")
	assert.Equal(t, argov1alpha1.SyncStatusCodeOutOfSync, app.Status.Sync.Status, "Argo CD's status was rewritten")
	assert.Equal(t, "abc", app.Status.Sync.Revision)

	// Play Argo CD: the operation runs.
	running := []byte(`{"operation":null,"status":{"operationState":{"phase":"Running","startedAt":"` + now.UTC().Format(time.RFC3339) +
		`","operation":{"sync":{"revision":"v2"},"info":[{"name":"` + syncrun.InfoKey + `","value":"` + string(run.UID) + `"}]}}}}`)
	require.NoError(t, k8s.Patch(ctx, app, client.RawPatch(types.MergePatchType, running)))
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), run) == nil && hasReady(run, v1.GitOpsConditionStatusUnknown, "the sync is Running")
	}, wait, tick, "the running run is not Ready=Unknown: %+v", run.Status)
	require.NoError(t, k8s.Delete(ctx, run))
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, key, app) == nil && app.Status.OperationState != nil && app.Status.OperationState.Phase == synccommon.OperationTerminating
	}, wait, tick, "the running sync was not terminated")
	assert.Equal(t, "payments", app.Labels["team"])
	assert.Equal(t, "abc", app.Status.Sync.Revision)
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), &v1.GitOpsDeploymentSyncRun{}) != nil
	}, wait, tick, "the SyncRun was not released")
}

// An Application named for a deployment with the deployment's labels but in
// another project (a look-alike: the name and UID are no secret) is neither
// synced nor terminated for the deployment's runs: the run says why.
func TestLookAlikeInAnotherProjectIsNotSynced(t *testing.T) {
	ctx := context.Background()
	ns := "tenant-" + rand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://git.example.com/jane/apps.git", Path: "p"},
			Type: v1.GitOpsDeploymentSpecTypeManual}}
	require.NoError(t, k8s.Create(ctx, gd))
	app := &argov1alpha1.Application{}
	key := types.NamespacedName{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}
	require.Eventually(t, func() bool { return k8s.Get(ctx, key, app) == nil }, wait, tick, "no Application")

	// The name held in project default with the deployment's labels: the
	// state a look-alike created before ours leaves (the deployment's
	// reconciler then leaves it alone). Argo CD has compared it.
	now := metav1.Now()
	look := []byte(`{"spec":{"project":"default"},"status":{"reconciledAt":"` + now.UTC().Format(time.RFC3339) + `","sync":{"status":"OutOfSync","revision":"abc"}}}`)
	require.NoError(t, k8s.Patch(ctx, app, client.RawPatch(types.MergePatchType, look)))

	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run"},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: gd.Name, RevisionID: "v2"}}
	require.NoError(t, k8s.Create(ctx, run))
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), run) == nil && len(run.Status.Conditions) > 0 &&
			strings.Contains(run.Status.Conditions[0].Message, "is not the one of GitOpsDeployment")
	}, wait, tick, "the run did not refuse the look-alike: %+v", run.Status)
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), run) == nil && hasReady(run, v1.GitOpsConditionStatusFalse, "is not the one of GitOpsDeployment")
	}, wait, tick, "the refused run is not Ready=False: %+v", run.Status)
	assert.Equal(t, run.Generation, run.Status.ObservedGeneration)
	require.NoError(t, k8s.Get(ctx, key, app))
	assert.Nil(t, app.Operation, "a sync was started on a look-alike")
	assert.Equal(t, "default", app.Spec.Project)
}

// hasReady says whether run's Ready condition has status and a message with msgPart.
func hasReady(run *v1.GitOpsDeploymentSyncRun, status v1.GitOpsConditionStatus, msgPart string) bool {
	for _, c := range run.Status.Conditions {
		if c.Type == "Ready" && c.Status == status && strings.Contains(c.Message, msgPart) {
			return true
		}
	}
	return false
}

// A refused run's Warning Event names the failure (the condition keeps the
// seed's ErrorOccurred), and a run that finished before runs had a Ready
// condition (a sidecar upgrade) gets it at its next pass.
func TestRefusalReasonAndReadyOfARunFinishedBefore(t *testing.T) {
	ctx := context.Background()
	ns := "tenant-" + rand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "gone"}}
	require.NoError(t, k8s.Create(ctx, run))
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), run) == nil && hasReady(run, v1.GitOpsConditionStatusFalse, "Unable to retrieve GitOpsDeployment")
	}, wait, tick, "the refused run is not Ready=False: %+v", run.Status)
	assert.Equal(t, v1.GitOpsDeploymentReasonErrorOccurred, run.Status.Conditions[0].Reason, "the seed's reason")
	assert.Equal(t, v1.GitOpsConditionReason(syncrun.ReasonGitOpsDeploymentNotFound), run.Status.Conditions[len(run.Status.Conditions)-1].Reason)
	stack.WaitForEvent(t, k8s, run, corev1.EventTypeWarning, syncrun.ReasonGitOpsDeploymentNotFound, "Unable to retrieve GitOpsDeployment", wait)

	// What an older sidecar left: finished, no Ready.
	run.Status = v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationSucceeded, Conditions: []v1.GitOpsDeploymentCondition{{
		Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusFalse, Reason: v1.GitOpsDeploymentReasonErrorOccurred, Message: syncrun.MsgSucceeded}}}
	require.NoError(t, k8s.Status().Update(ctx, run))
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), run) == nil && hasReady(run, v1.GitOpsConditionStatusTrue, syncrun.MsgSucceeded)
	}, wait, tick, "the run finished before is not Ready=True: %+v", run.Status)
	assert.Equal(t, run.Generation, run.Status.ObservedGeneration)
	assert.Len(t, run.Status.Conditions, 2, "only Ready was added")
}
