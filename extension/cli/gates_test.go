package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestApprovalIsWhoTheClusterSaysWithTheGatesGroups(t *testing.T) {
	me := authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated", "release-managers", "devs"}}
	snap := &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "shop-v2", UID: "u-1"},
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/x/fe:v2"}}}}
	a := approval("team-a", "prod", snap, "", "CHG-1", me, &as.ApprovalGate{Required: 2, Groups: []string{"release-managers", "sre"}})
	assert.Equal(t, "team-a", a.Namespace)
	assert.Equal(t, "shop-v2-into-prod-", a.GenerateName)
	assert.Equal(t, as.PromotionApprovalSpec{Snapshot: "shop-v2", SnapshotIdentity: as.SnapshotIdentity{UID: "u-1", Digest: snap.ContentDigest()},
		Environment: "prod", Comment: "CHG-1",
		Approver: as.Approver{User: "alice", Groups: []string{"release-managers"}}}, a.Spec, "only the groups the gate names; what is approved is this Snapshot's identity")
	assert.Empty(t, approval("team-a", "prod", snap, "app", "", me, nil).Spec.Approver.Groups, "no gate: no groups")
}

func TestFreezeSwitch(t *testing.T) {
	now := time.Date(2026, 3, 4, 10, 0, 0, 123, time.FixedZone("X", 3600))
	since := metav1.NewTime(time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC))
	assert.Equal(t, &as.FreezeSwitch{Frozen: true, By: "alice", Reason: "INC-1", Since: &since}, freezeSwitch(true, "alice", "INC-1", now))
	assert.Equal(t, &as.FreezeSwitch{Frozen: false, By: "bob"}, freezeSwitch(false, "bob", "ignored", now))
}

func TestApproveNeedsASnapshot(t *testing.T) {
	s, _, _ := streams()
	err := run(context.Background(), "argocd gitops", []string{"approve", "prod"}, s, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "approve needs --snapshot")
	assert.Equal(t, exitUsage, exitCode(err, io.Discard))
}
