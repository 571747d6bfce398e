//go:build !unit

package promotionrun_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// TestHistoryRecordsWhoRequested: the history names the run's
// spec.requestedBy (the admission policy vouches for it, see
// test/admission), and no one when a run does not say.
func TestHistoryRecordsWhoRequested(t *testing.T) {
	ns := tenant(t)
	playArgo(t, ns)
	byAlice := manual(ns, "p1", "appa", "snap-a", "staging")
	byAlice.Spec.RequestedBy = &as.Requester{User: "alice", Groups: []string{"release-managers"}}
	createAs(t, actingAs(t, ns, "alice", "release-managers"), byAlice)
	waitRun(t, byAlice, "verified", succeeded)
	snapshot(t, ns, "snap-a2", "quay.io/x/fe:v2")
	byPanel := manual(ns, "p2", "appa", "snap-a2", "staging")
	byPanel.Spec.RequestedBy = &as.Requester{User: "argocd:bob"}
	createAs(t, actingAs(t, ns, sidecarSA), byPanel)
	waitRun(t, byPanel, "verified", succeeded)
	run(t, manual(ns, "p3", "appa", "snap-a", "staging"), "verified", succeeded)

	h := getHistory(t, ns, "staging")
	require.Len(t, h.Status.Entries, 3)
	by := map[string]string{}
	for _, e := range h.Status.Entries {
		by[e.PromotionRun] = e.PromotedBy
	}
	assert.Equal(t, map[string]string{"p1": "alice", "p2": "argocd:bob", "p3": ""}, by)
}
