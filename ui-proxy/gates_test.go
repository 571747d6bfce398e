package uiproxy_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// TestPanelGateActions: Approve and Freeze are authorized as Promote (the
// tenant mapping names the user), act only in the binding's namespace, and
// approve for the Argo CD user argocd-server authenticated; Unfreeze needs a
// release manager (TestPanelGateKeepers).
func TestPanelGateActions(t *testing.T) {
	ctx := context.Background()
	objs := []client.Object{
		tenantNS("team-a", "alice, devs"), tenantNS("team-b", "bob"),
		&as.SnapshotEnvironmentBinding{ObjectMeta: meta("team-a", "shop-dev", "uid-seb", 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-1"}},
		ourApplication("seb-app", ownership.KindBinding, "team-a", "shop-dev", "uid-seb", nil),
		&as.Snapshot{ObjectMeta: meta("team-a", "snap-1", "", 0), Spec: as.SnapshotSpec{Application: "shop"}},
		&as.Environment{ObjectMeta: meta("team-a", "dev", "", 0)},
		&as.Environment{ObjectMeta: meta("team-a", "prod", "", 0), Spec: as.EnvironmentSpec{ParentEnvironment: "dev",
			Gates: &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 1}}}},
		&as.Environment{ObjectMeta: meta("team-b", "prod-b", "", 0)},
		&as.Snapshot{ObjectMeta: meta("team-b", "snap-b", "", 0), Spec: as.SnapshotSpec{Application: "theirs"}},
	}
	srv, c := serveActions(t, objs...)
	approve := actor{method: http.MethodPost, path: "/api/v1/approve", app: "seb-app", project: project("team-a"), body: `{"environment":"prod","snapshot":"snap-1"}`}
	freeze := actor{method: http.MethodPost, path: "/api/v1/freeze", app: "seb-app", project: project("team-a"), body: `{"environment":"prod","reason":"INC-1"}`}
	unfreeze := actor{method: http.MethodPost, path: "/api/v1/unfreeze", app: "seb-app", project: project("team-a"), body: `{"environment":"prod"}`}
	with := func(a actor, f func(*actor)) actor { f(&a); return a }
	approvals := func() []as.PromotionApproval {
		var l as.PromotionApprovalList
		require.NoError(t, c.List(ctx, &l))
		return l.Items
	}
	frozen := func(ns, name string) *as.FreezeSwitch {
		env := &as.Environment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, env))
		if env.Spec.Gates == nil {
			return nil
		}
		return env.Spec.Gates.Freeze
	}

	refused := []struct {
		name   string
		a      actor
		status int
		says   string
	}{
		{"no user approving", approve, http.StatusForbidden, "did not say who you are"},
		{"another tenant's user approving", with(approve, func(a *actor) { a.user = "bob" }), http.StatusForbidden, "user bob may not act here"},
		{"a mapped group only", with(approve, func(a *actor) { a.user, a.groups = "carol", "devs" }), http.StatusForbidden, "group entries are not trusted"},
		{"another tenant's user freezing", with(freeze, func(a *actor) { a.user = "bob" }), http.StatusForbidden, "user bob may not act here"},
		{"another tenant's user unfreezing", with(unfreeze, func(a *actor) { a.user = "bob" }), http.StatusForbidden, "user bob may not act here"},
		{"another tenant's Environment", with(approve, func(a *actor) { a.user, a.body = "alice", `{"environment":"prod-b","snapshot":"snap-1"}` }), http.StatusBadRequest, "no Environment prod-b in namespace team-a"},
		{"another tenant's Snapshot", with(approve, func(a *actor) { a.user, a.body = "alice", `{"environment":"prod","snapshot":"snap-b"}` }), http.StatusBadRequest, "no Snapshot snap-b in namespace team-a"},
		{"freezing another tenant's Environment", with(freeze, func(a *actor) { a.user, a.body = "alice", `{"environment":"prod-b"}` }), http.StatusBadRequest, "no Environment prod-b in namespace team-a"},
		{"another application", with(approve, func(a *actor) {
			a.user, a.body = "alice", `{"environment":"prod","snapshot":"snap-1","application":"other"}`
		}), http.StatusConflict, "not a Snapshot of application other"},
		{"no snapshot", with(approve, func(a *actor) { a.user, a.body = "alice", `{"environment":"prod"}` }), http.StatusBadRequest, "the body must be"},
		{"GET of approve", with(approve, func(a *actor) { a.user, a.method = "alice", http.MethodGet }), http.StatusMethodNotAllowed, "GET is not allowed"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, body := tc.a.do(t, srv)
			assert.Equal(t, tc.status, status, "%v", body)
			assert.Contains(t, body["error"], tc.says)
			assert.Empty(t, approvals(), "an approval was created")
			assert.Nil(t, frozen("team-a", "prod"), "team-a's prod was changed")
			assert.Nil(t, frozen("team-b", "prod-b"), "team-b's prod-b was changed")
		})
	}

	// Alice approves: for her Argo CD identity, never a name she sends.
	status, body := with(approve, func(a *actor) {
		a.user, a.body = "alice", `{"environment":"prod","snapshot":"snap-1","comment":"CHG-1","approver":{"user":"bob"}}`
	}).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "PromotionApproval", body["kind"])
	got := approvals()
	require.Len(t, got, 1)
	assert.Equal(t, "team-a", got[0].Namespace)
	assert.Equal(t, body["name"], got[0].Name)
	// It approves snap-1 as it is: its UID and content digest.
	snap := &as.Snapshot{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "snap-1"}, snap))
	assert.Equal(t, as.PromotionApprovalSpec{Snapshot: "snap-1", SnapshotIdentity: snap.Identity(), Environment: "prod", Comment: "CHG-1", Approver: as.Approver{User: "argocd:alice"}}, got[0].Spec)
	assert.NotEmpty(t, got[0].Spec.Digest)

	// Freeze and unfreeze, naming who did it; the other gates stay.
	status, body = with(freeze, func(a *actor) { a.user = "alice" }).do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "Environment", body["kind"])
	f := frozen("team-a", "prod")
	require.NotNil(t, f)
	assert.True(t, f.Frozen)
	assert.Equal(t, "argocd:alice", f.By)
	assert.Equal(t, "INC-1", f.Reason)
	assert.NotNil(t, f.Since)
	env := &as.Environment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "prod"}, env))
	assert.Equal(t, &as.ApprovalGate{Required: 1}, env.Spec.Gates.Approvals, "freezing kept the approval gate")
	// Unfreezing lifts the gate: alice is mapped but no release manager of team-a.
	status, body = with(unfreeze, func(a *actor) { a.user = "alice" }).do(t, srv)
	require.Equal(t, http.StatusForbidden, status, "%v", body)
	assert.Contains(t, body["error"], argocd.AnnotationArgoCDReleaseManagers)
	assert.True(t, frozen("team-a", "prod").Frozen, "a refused unfreeze changed the switch")
}
