package uiproxy_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

func TestPanelRollback(t *testing.T) {
	objs := []client.Object{
		tenantNS("team-a", "alice"), tenantNS("team-b", "bob"),
		&as.SnapshotEnvironmentBinding{ObjectMeta: meta("team-a", "shop-prod", "uid-seb", 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "snap-2"}},
		ourApplication("seb-app", ownership.KindBinding, "team-a", "shop-prod", "uid-seb", nil),
	}
	srv, c := serveActions(t, objs...)
	rollback := actor{method: http.MethodPost, path: "/api/v1/rollback", app: "seb-app", project: project("team-a")}
	for name, a := range map[string]actor{"no user": rollback, "another tenant's user": func() actor { a := rollback; a.user = "bob"; return a }()} {
		status, body := a.do(t, srv)
		assert.Equal(t, http.StatusForbidden, status, name)
		assert.NotEmpty(t, body["error"], name)
		_, p := runs(t, c)
		assert.Empty(t, p, "%s: a PromotionRun was created", name)
	}
	rollback.user = "alice"
	status, body := rollback.do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	_, p := runs(t, c)
	require.Len(t, p, 1)
	assert.Equal(t, "team-a", p[0].Namespace)
	assert.Equal(t, as.PromotionRunSpec{Snapshot: "snap-2", Application: "shop", RequestedBy: &as.Requester{User: "argocd:alice"},
		ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Rollback: true}}, p[0].Spec,
		"the binding's Snapshot, rolled back out of the binding's Environment, by the Argo CD user")
}

func TestHistoryView(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	h := &as.PromotionHistory{Spec: as.PromotionHistorySpec{Application: "shop", Environment: "prod"}, Status: as.PromotionHistoryStatus{
		Entries: []as.PromotionHistoryEntry{
			{PromotionRun: "p1", Kind: as.PromotionKindPromotion, Snapshot: "s1", CompletionTime: at, Result: as.PromotionRunCompleteResultSuccess},
			{PromotionRun: "rb", Kind: as.PromotionKindRollback, Snapshot: "s0", CompletionTime: at, Result: as.PromotionRunCompleteResultSuccess},
		},
		Rejected: []as.RejectedSnapshot{{Snapshot: "s1", PromotionRun: "rb", Time: at}},
		Hold:     &as.PromotionHold{Since: at, PromotionRun: "rb", Snapshot: "s1"},
	}}
	v := uiproxy.HistoryViewOf(h)
	require.Len(t, v.Entries, 2)
	assert.Equal(t, "rb", v.Entries[0].PromotionRun, "newest first")
	assert.Equal(t, []string{"s1"}, v.Rejected)
	assert.Equal(t, "2026-11-26T03:00:00Z", v.HeldSince)
	h.Spec.ReleasedAt = &at
	assert.Empty(t, uiproxy.HistoryViewOf(h).HeldSince, "released")
}

// History is read with GET, a release is an action (POST): the other method
// of each is refused, and a GET of the history changes nothing.
func TestHistoryAndReleaseMethods(t *testing.T) {
	objs := []client.Object{
		tenantNS("team-a", "alice"),
		&as.SnapshotEnvironmentBinding{ObjectMeta: meta("team-a", "shop-prod", "uid-seb", 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "snap-2"}},
		ourApplication("seb-app", ownership.KindBinding, "team-a", "shop-prod", "uid-seb", nil),
	}
	srv, _ := serveActions(t, objs...)
	for _, a := range []actor{
		{method: http.MethodPost, path: "/api/v1/history?environment=prod", app: "seb-app", project: project("team-a"), user: "alice"},
		{method: http.MethodGet, path: "/api/v1/release", app: "seb-app", project: project("team-a"), user: "alice"},
	} {
		status, body := a.do(t, srv)
		assert.Equal(t, http.StatusMethodNotAllowed, status, "%s %s: %v", a.method, a.path, body)
	}
	get := actor{method: http.MethodGet, path: "/api/v1/history?environment=prod", app: "seb-app", project: project("team-a"), user: "alice"}
	status, body := get.do(t, srv)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "team-a", body["namespace"])
	assert.Empty(t, body["items"], "nothing ran in prod")
}
