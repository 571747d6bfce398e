package uiproxy_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// releaseManagers adds the tenant's release managers annotation to ns.
func releaseManagers(ns *corev1.Namespace, subjects string) *corev1.Namespace {
	ns.Annotations[argocd.AnnotationArgoCDReleaseManagers] = subjects
	return ns
}

// TestPanelGateKeepers: the panel writes as the GitOps Service's
// ServiceAccount, which the gate policies exempt, so it separates duties
// itself. Every mapped user may freeze (it tightens a gate); unfreezing and
// releasing a rollback's hold (they lift one) need a user the tenant's
// release managers annotation names, who is also mapped. Group entries,
// invalid entries, another tenant's release manager and a release manager
// the mapping does not name are refused, and a refusal changes nothing.
func TestPanelGateKeepers(t *testing.T) {
	ctx := context.Background()
	since := metav1.NewTime(time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	objs := []client.Object{
		// dev: a promoter; rita: release manager; gatekeepers: a group; "role:admin": invalid;
		// otto: a release manager the mapping does not name.
		releaseManagers(tenantNS("team-a", "dev, rita, gatekeepers"), "rita, gatekeepers, role:admin, otto"),
		releaseManagers(tenantNS("team-b", "bob"), "bob"),
		&as.SnapshotEnvironmentBinding{ObjectMeta: meta("team-a", "shop-prod", "uid-seb", 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "snap-1"}},
		ourApplication("seb-app", ownership.KindBinding, "team-a", "shop-prod", "uid-seb", nil),
		&as.Environment{ObjectMeta: meta("team-a", "prod", "", 0), Spec: as.EnvironmentSpec{
			Gates: &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true, By: "argocd:rita", Reason: "INC-1", Since: &since}}}},
		&as.PromotionHistory{ObjectMeta: meta("team-a", as.PromotionHistoryName("shop", "prod"), "", 0),
			Spec:   as.PromotionHistorySpec{Application: "shop", Environment: "prod"},
			Status: as.PromotionHistoryStatus{Hold: &as.PromotionHold{Since: since, PromotionRun: "rb", Snapshot: "snap-1"}}},
	}
	srv, c := serveActions(t, objs...)
	as_ := func(path, user, body string) actor {
		return actor{method: http.MethodPost, path: path, app: "seb-app", project: project("team-a"), user: user, body: body}
	}
	frozen := func() bool {
		env := &as.Environment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "prod"}, env))
		return env.Spec.Gates.Freeze.Frozen
	}
	held := func() bool {
		h := &as.PromotionHistory{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: as.PromotionHistoryName("shop", "prod")}, h))
		return h.Held()
	}
	unfreeze, release := `{"environment":"prod"}`, `{"environment":"prod"}`

	refused := []struct {
		name string
		a    actor
		says string
	}{
		{"a promoter unfreezing", as_("/api/v1/unfreeze", "dev", unfreeze), "user dev may not unfreeze Environment prod"},
		{"a promoter releasing", as_("/api/v1/release", "dev", release), "user dev may not release the hold on Environment prod"},
		{"a member of a named group unfreezing", func() actor {
			a := as_("/api/v1/unfreeze", "gatekeepers", unfreeze)
			a.user, a.groups = "carol", "gatekeepers"
			return a
		}(), "group entries are not trusted"},
		{"an invalid entry", as_("/api/v1/unfreeze", "role:admin", unfreeze), "may not act here"},
		{"a release manager the mapping does not name", as_("/api/v1/unfreeze", "otto", unfreeze), "user otto may not act here"},
		{"another tenant's release manager", as_("/api/v1/release", "bob", release), "user bob may not act here"},
		{"nobody", as_("/api/v1/release", "", release), "did not say who you are"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, body := tc.a.do(t, srv)
			assert.Equal(t, http.StatusForbidden, status, "%v", body)
			assert.Contains(t, body["error"], tc.says)
			assert.True(t, frozen(), "prod was unfrozen")
			assert.True(t, held(), "the hold was released")
		})
	}
	status, body := as_("/api/v1/unfreeze", "dev", unfreeze).do(t, srv)
	require.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body["error"], argocd.AnnotationArgoCDReleaseManagers+" of namespace team-a", "the refusal names the annotation")

	// The promoter freezes (tightening), and may still roll back.
	status, body = as_("/api/v1/freeze", "dev", `{"environment":"prod","reason":"INC-2"}`).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	env := &as.Environment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "prod"}, env))
	assert.Equal(t, "argocd:dev", env.Spec.Gates.Freeze.By)
	status, body = as_("/api/v1/rollback", "dev", "").do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "PromotionRun", body["kind"])

	// The release manager unfreezes and releases.
	status, body = as_("/api/v1/unfreeze", "rita", unfreeze).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.False(t, frozen())
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "prod"}, env))
	assert.Equal(t, "argocd:rita", env.Spec.Gates.Freeze.By)
	status, body = as_("/api/v1/release", "rita", release).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "PromotionHistory", body["kind"])
	assert.False(t, held())
}
