package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	panel "github.com/gitops-service/gitops-service/ui-proxy/api"
)

func TestGoldenRollbackHistoryHelp(t *testing.T) {
	fixedHome(t)
	for _, verb := range []string{"rollback", "history"} {
		s, out, _ := streams()
		require.NoError(t, run(context.Background(), "argocd gitops", []string{verb, "--help"}, s, false), verb)
		golden(t, "help-"+verb, out.String())
	}
}

func TestRollbackNeedsTheApplication(t *testing.T) {
	s, _, _ := streams()
	err := run(context.Background(), "argocd gitops", []string{"rollback", "prod"}, s, false)
	var ee *exitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, exitUsage, ee.code)
	assert.Contains(t, ee.msg, "--application")
}

func TestGoldenHistory(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, writeHistory(&out, goldenHistories()))
	golden(t, "history", out.String())
}

func goldenHistories() []as.PromotionHistory {
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 26, 3, m, 0, 0, time.UTC)) }
	hs := []as.PromotionHistory{
		{Spec: as.PromotionHistorySpec{Application: "shop", Environment: "prod"}, Status: as.PromotionHistoryStatus{
			Entries: []as.PromotionHistoryEntry{
				{PromotionRun: "p1", Kind: as.PromotionKindPromotion, Snapshot: "shop-v1", CompletionTime: at(1), Result: as.PromotionRunCompleteResultSuccess, ApprovedBy: []string{"alice", "bob"}},
				{PromotionRun: "p2", Kind: as.PromotionKindPromotion, Snapshot: "shop-v2", CompletionTime: at(2), Result: as.PromotionRunCompleteResultFailure, RolledBackBy: "p2-rollback"},
				{PromotionRun: "p2-rollback", Kind: as.PromotionKindRollback, Snapshot: "shop-v1", CompletionTime: at(3), Result: as.PromotionRunCompleteResultSuccess},
			},
			Rejected: []as.RejectedSnapshot{{Snapshot: "shop-v2", PromotionRun: "p2-rollback", Time: at(3)}},
			Hold:     &as.PromotionHold{Since: at(3), PromotionRun: "p2-rollback", Snapshot: "shop-v2"},
		}},
		{Spec: as.PromotionHistorySpec{Application: "api", Environment: "prod"}, Status: as.PromotionHistoryStatus{
			Entries: []as.PromotionHistoryEntry{{PromotionRun: "a1", Kind: as.PromotionKindPromotion, Snapshot: "api-v1", CompletionTime: at(4), Result: as.PromotionRunCompleteResultSuccess, PromotedBy: "carol"}},
		}},
	}
	return hs
}

// Through an Argo CD login the history comes as the panel's view: shown as
// the same PromotionHistories, the same table as with a kubeconfig.
func TestGoldenHistoryFromPanel(t *testing.T) {
	hs := goldenHistories()
	var views []as.PromotionHistory
	for i := range hs {
		b, err := json.Marshal(panel.HistoryOf(&hs[i]))
		require.NoError(t, err)
		var v panel.History
		require.NoError(t, json.Unmarshal(b, &v))
		h := v.Object("team-a")
		assert.Equal(t, as.PromotionHistoryName(hs[i].Spec.Application, "prod"), h.Name)
		assert.Equal(t, "team-a", h.Namespace)
		assert.Equal(t, hs[i].Held(), h.Held(), hs[i].Spec.Application)
		if hs[i].Status.Hold != nil {
			assert.Equal(t, *hs[i].Status.Hold, *h.Status.Hold)
		}
		views = append(views, h)
	}
	var out bytes.Buffer
	require.NoError(t, writeHistory(&out, views))
	golden(t, "history", out.String())
}
