package argocd

import (
	"fmt"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/stretchr/testify/assert"
)

// Issue 13 defect 6: Argo CD's project fence refuses resources with only "one or
// more synchronization tasks are not valid" in the operation; the SyncError
// names each refused resource and why (the messages are Argo CD's, from
// controller/sync.go).
func TestSyncErrorNamesWhatTheProjectFenceRefused(t *testing.T) {
	op := func(phase synccommon.OperationPhase, res ...*argov1alpha1.ResourceResult) *argov1alpha1.Application {
		return &argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{OperationState: &argov1alpha1.OperationState{
			Phase: phase, Message: "one or more synchronization tasks are not valid (retried 2 times).",
			SyncResult: &argov1alpha1.SyncOperationResult{Resources: res},
		}}}
	}
	refusedNS := &argov1alpha1.ResourceResult{Version: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "pwn",
		Status: synccommon.ResultCodeSyncFailed, SyncPhase: synccommon.SyncPhaseSync,
		Message: "namespace kube-system is not permitted in project 'gitops-tenant-x'"}
	refusedKind := &argov1alpha1.ResourceResult{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "admin2",
		Status: synccommon.ResultCodeSyncFailed, SyncPhase: synccommon.SyncPhaseSync,
		Message: "resource rbac.authorization.k8s.io:ClusterRole is not permitted in project gitops-tenant-x"}
	fine := &argov1alpha1.ResourceResult{Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "ok", Status: synccommon.ResultCodeSynced}

	got := MirrorStatus(op(synccommon.OperationRunning, refusedNS, fine, refusedKind), nil)
	if assert.Len(t, got.Conditions, 1) {
		c := got.Conditions[0]
		assert.Equal(t, "SyncError", c.Type)
		assert.Contains(t, c.Message, "ConfigMap kube-system/pwn: namespace kube-system is not permitted in project")
		assert.Contains(t, c.Message, "ClusterRole.rbac.authorization.k8s.io admin2: resource rbac.authorization.k8s.io:ClusterRole is not permitted")
		assert.NotContains(t, c.Message, "jane/ok")
	}

	// Argo CD's own SyncError gets the names appended, not a second condition.
	app := op(synccommon.OperationFailed, refusedNS)
	app.Status.Conditions = []argov1alpha1.ApplicationCondition{{Type: "SyncError", Message: "Failed sync attempt to abc: one or more synchronization tasks are not valid"}}
	got = MirrorStatus(app, nil)
	if assert.Len(t, got.Conditions, 1) {
		assert.True(t, strings.HasPrefix(got.Conditions[0].Message, "Failed sync attempt to abc"))
		assert.Contains(t, got.Conditions[0].Message, "kube-system/pwn")
	}

	// A sync that succeeded, or nothing refused: no SyncError of ours.
	assert.Empty(t, MirrorStatus(op(synccommon.OperationSucceeded, refusedNS), nil).Conditions)
	assert.Empty(t, MirrorStatus(op(synccommon.OperationRunning, fine), nil).Conditions)

	// Many refusals: a bounded message.
	var many []*argov1alpha1.ResourceResult
	for i := 0; i < 50; i++ {
		r := *refusedNS
		r.Name = fmt.Sprintf("cm-%d", i)
		many = append(many, &r)
	}
	msg := MirrorStatus(op(synccommon.OperationRunning, many...), nil).Conditions[0].Message
	assert.Contains(t, msg, "50 resource(s)")
	assert.Contains(t, msg, "(and 40 more)")
	assert.NotContains(t, msg, "cm-10:")
}

func TestSyncErrorOfAnApplication(t *testing.T) {
	app := &argov1alpha1.Application{}
	assert.Empty(t, SyncError(app))
	app.Status.OperationState = &argov1alpha1.OperationState{Phase: synccommon.OperationRunning, SyncResult: &argov1alpha1.SyncOperationResult{
		Resources: []*argov1alpha1.ResourceResult{{Kind: "Secret", Namespace: "argocd", Name: "x", Status: synccommon.ResultCodeSyncFailed,
			Message: "namespace argocd is not permitted in project 'gitops-tenant-x'"}},
	}}
	assert.Equal(t, "Argo CD could not sync 1 resource(s): Secret argocd/x: namespace argocd is not permitted in project 'gitops-tenant-x'", SyncError(app))
	app.Status.Conditions = []argov1alpha1.ApplicationCondition{{Type: "SyncError", Message: "Failed sync attempt"}}
	assert.Equal(t, "Failed sync attempt; Argo CD could not sync 1 resource(s): Secret argocd/x: namespace argocd is not permitted in project 'gitops-tenant-x'", SyncError(app))
}
