//go:build !unit

package apitest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// histories calls GET /api/v1/history as argocd-server would for user.
func histories(t *testing.T, app *argov1alpha1.Application, user string, query url.Values) (int, uiproxy.Histories, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, proxy.URL+"/api/v1/history?"+query.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set(uiproxy.HeaderToken, token)
	req.Header.Set(uiproxy.HeaderApplication, argoNS+":"+app.Name)
	req.Header.Set(uiproxy.HeaderProject, app.Spec.Project)
	if user != "" {
		req.Header.Set(uiproxy.HeaderUsername, user)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	var out uiproxy.Histories
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(raw, &out))
	}
	return resp.StatusCode, out, string(raw)
}

// Rollback, release and history through the panel's API on a real API
// server: authorized by the tenant mapping as the other actions; the release
// passes the CRD's validation and releases the hold; the history lists only
// the tenant's own namespace.
func TestPanelRollbackReleaseHistory(t *testing.T) {
	ctx := context.Background()
	ns, other := tenant(t), tenant(t)
	for n, who := range map[string]string{ns: "alice", other: "bob"} {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+argocd.AnnotationArgoCDSubjects+`":"`+who+`"}}}`))
		require.NoError(t, k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, patch))
	}
	since := metav1.NewTime(time.Now().Add(-time.Minute).UTC().Truncate(time.Second))
	mkHistory := func(n, app string, held bool) *as.PromotionHistory {
		h := &as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: as.PromotionHistoryName(app, "prod")},
			Spec: as.PromotionHistorySpec{Application: app, Environment: "prod"}}
		require.NoError(t, k8s.Create(ctx, h))
		h.Status.Entries = []as.PromotionHistoryEntry{
			{PromotionRun: app + "-p1", PromotionRunUID: "u1", Kind: as.PromotionKindPromotion, Snapshot: app + "-v1", CompletionTime: since, Result: as.PromotionRunCompleteResultSuccess, PromotedBy: "alice"},
			{PromotionRun: app + "-rb", PromotionRunUID: "u2", Kind: as.PromotionKindRollback, Snapshot: app + "-v0", CompletionTime: since, Result: as.PromotionRunCompleteResultSuccess},
		}
		if held {
			h.Status.Rejected = []as.RejectedSnapshot{{Snapshot: app + "-v1", PromotionRun: app + "-rb", Time: since}}
			h.Status.Hold = &as.PromotionHold{Since: since, PromotionRun: app + "-rb", Snapshot: app + "-v1"}
		}
		require.NoError(t, k8s.Status().Update(ctx, h))
		return h
	}
	mkHistory(ns, "shop", true)
	mkHistory(ns, "api", false)
	mkHistory(other, "shop", true) // another tenant's, of the same names

	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-prod"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "shop-v0"}}
	require.NoError(t, k8s.Create(ctx, seb))
	bapp := bindingApplication(t, seb, "web")

	prod := url.Values{"environment": {"prod"}}
	for who, want := range map[string]int{"": http.StatusForbidden, "mallory": http.StatusForbidden, "bob": http.StatusForbidden} {
		status, _, body := histories(t, bapp, who, prod)
		assert.Equal(t, want, status, "user %q: %s", who, body)
	}
	status, _, body := histories(t, bapp, "alice", nil)
	assert.Equal(t, http.StatusBadRequest, status, body)

	status, hs, body := histories(t, bapp, "alice", prod)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, ns, hs.Namespace)
	require.Len(t, hs.Items, 2, "both applications of the namespace, nothing of the other tenant's")
	assert.Equal(t, "api", hs.Items[0].Application)
	assert.Empty(t, hs.Items[0].HeldSince)
	shop := hs.Items[1]
	assert.Equal(t, "shop", shop.Application)
	assert.Equal(t, "prod", shop.Environment)
	assert.Equal(t, []string{"shop-rb", "shop-p1"}, []string{shop.Entries[0].PromotionRun, shop.Entries[1].PromotionRun}, "newest first")
	assert.Equal(t, "shop-rb", shop.HeldBy)
	assert.Equal(t, "shop-v1", shop.HeldSnapshot)
	assert.Equal(t, []string{"shop-v1"}, shop.Rejected)

	status, hs, body = histories(t, bapp, "alice", url.Values{"environment": {"prod"}, "application": {"api"}})
	require.Equal(t, http.StatusOK, status, body)
	require.Len(t, hs.Items, 1)
	assert.Equal(t, "api", hs.Items[0].Application)
	status, hs, body = histories(t, bapp, "alice", url.Values{"environment": {"dev"}})
	require.Equal(t, http.StatusOK, status, body)
	assert.Empty(t, hs.Items, "nothing ran in dev")

	// Release: refused for users the mapping does not name; the hold stays.
	held := func(n string) bool {
		h := &as.PromotionHistory{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: n, Name: as.PromotionHistoryName("shop", "prod")}, h))
		return h.Held()
	}
	for _, who := range []string{"mallory", "bob"} {
		status, b := post(t, "release", bapp, who, "", `{"environment":"prod"}`)
		assert.Equal(t, http.StatusForbidden, status, "%s: %v", who, b)
		assert.True(t, held(ns), who)
	}
	// alice is mapped but no release manager: releasing lifts a gate.
	status, b := post(t, "release", bapp, "alice", "", `{"environment":"prod"}`)
	assert.Equal(t, http.StatusForbidden, status, "%v", b)
	assert.Contains(t, b["error"], argocd.AnnotationArgoCDReleaseManagers)
	assert.True(t, held(ns), "a promoter's release is refused")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+argocd.AnnotationArgoCDReleaseManagers+`":"alice"}}}`))
	require.NoError(t, k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch))
	status, b = post(t, "release", bapp, "alice", "", `{}`)
	assert.Equal(t, http.StatusBadRequest, status, "%v", b)
	require.Eventually(t, func() bool {
		status, b = post(t, "release", bapp, "alice", "", `{"environment":"prod"}`)
		return status == http.StatusCreated
	}, 10*time.Second, 200*time.Millisecond, "a release manager releases: %d %v", status, b)
	assert.Equal(t, "PromotionHistory", b["kind"])
	assert.Equal(t, ns, b["namespace"])
	assert.False(t, held(ns), "released")
	assert.True(t, held(other), "the other tenant's hold of the same names stays")
	status, b = post(t, "release", bapp, "alice", "", `{"environment":"prod"}`)
	assert.Equal(t, http.StatusConflict, status, "%v", b)
	assert.Contains(t, b["error"], "is not held")
	status, b = post(t, "release", bapp, "alice", "", `{"environment":"staging"}`)
	assert.Equal(t, http.StatusConflict, status, "%v", b)
	assert.Contains(t, b["error"], "no hold to release")

	// Rollback: the binding's Snapshot out of its Environment, a valid PromotionRun.
	status, b = post(t, "rollback", bapp, "bob", "", `{}`)
	assert.Equal(t, http.StatusForbidden, status, "%v", b)
	status, b = post(t, "rollback", bapp, "alice", "", `{}`)
	require.Equal(t, http.StatusCreated, status, "%v", b)
	pr := &as.PromotionRun{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: b["name"].(string)}, pr))
	assert.Equal(t, as.PromotionRunSpec{Snapshot: "shop-v0", Application: "shop",
		ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Rollback: true},
		RequestedBy:     &as.Requester{User: "argocd:alice"}}, pr.Spec, "the rollback names the Argo CD user who asked")
	// Named and labelled as every client's rollback (as.NewRollback).
	assert.Regexp(t, `^shop-prod-rollback-[a-z0-9]{5}$`, pr.Name)
	assert.Equal(t, map[string]string{as.LabelApplication: "shop", as.LabelEnvironment: "prod"}, pr.Labels)
}
