package uiproxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// fullDiffs is the sidecar's store of full diffs, as a map.
type fullDiffs map[types.NamespacedName]string

func (f fullDiffs) Get(key types.NamespacedName, _ int64) (string, error) {
	if d, ok := f[key]; ok {
		return d, nil
	}
	return "", fmt.Errorf("not kept")
}

func TestPanelPreview(t *testing.T) {
	at := metav1.Now()
	done := func(pp *as.PromotionPreview, clean bool) *as.PromotionPreview {
		pp.Generation = 1
		pp.Status = as.PromotionPreviewStatus{ObservedGeneration: 1, CompletedAt: &at, Clean: clean, Diff: "capped\n", DiffTruncated: true,
			Components: []as.PreviewComponentSummary{{Name: "web", Changed: 1}}}
		return pp
	}
	objs := []client.Object{
		tenantNS("team-a", "alice"), tenantNS("team-b", "bob"),
		&as.SnapshotEnvironmentBinding{ObjectMeta: meta("team-a", "shop-dev", "uid-seb", 0),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-1"}},
		ourApplication("seb-app", ownership.KindBinding, "team-a", "shop-dev", "uid-seb", nil),
		&as.Snapshot{ObjectMeta: meta("team-a", "snap-1", "", 0), Spec: as.SnapshotSpec{Application: "shop"}},
		&as.Environment{ObjectMeta: meta("team-a", "dev", "", 0)},
		&as.Environment{ObjectMeta: meta("team-a", "staging", "", 0), Spec: as.EnvironmentSpec{ParentEnvironment: "dev"}},
		&as.Environment{ObjectMeta: meta("team-b", "prod", "", 0)},
		done(&as.PromotionPreview{ObjectMeta: meta("team-a", "kept", "", 0), Spec: as.PromotionPreviewSpec{Snapshot: "snap-1", Application: "shop", TargetEnvironment: "staging"}}, true),
		done(&as.PromotionPreview{ObjectMeta: meta("team-a", "capped", "", 0), Spec: as.PromotionPreviewSpec{Snapshot: "snap-1", Application: "shop", TargetEnvironment: "staging"}}, false),
		done(&as.PromotionPreview{ObjectMeta: meta("team-a", "other-app", "", 0), Spec: as.PromotionPreviewSpec{Snapshot: "s", Application: "other", TargetEnvironment: "staging"}}, true),
		done(&as.PromotionPreview{ObjectMeta: meta("team-b", "theirs", "", 0), Spec: as.PromotionPreviewSpec{Snapshot: "snap-1", Application: "shop", TargetEnvironment: "prod"}}, true),
	}
	s := runtime.NewScheme()
	require.NoError(t, argov1alpha1.AddToScheme(s))
	require.NoError(t, v1.AddToScheme(s))
	require.NoError(t, as.AddToScheme(s))
	require.NoError(t, corev1.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	diffs := fullDiffs{{Namespace: "team-a", Name: "kept"}: "the whole diff\n", {Namespace: "team-b", Name: "theirs"}: "secret of team-b\n"}
	srv := httptest.NewServer((&uiproxy.Server{Client: c, Writer: c, ArgoNamespace: argoNS, Diffs: diffs, Token: func() []byte { return []byte(secret) }}).Handler())
	t.Cleanup(srv.Close)

	get := func(name string) actor {
		return actor{method: http.MethodGet, path: "/api/v1/preview?name=" + name, app: "seb-app", project: project("team-a")}
	}
	status, body := get("kept").do(t, srv)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "the whole diff\n", body["diff"], "the full diff the sidecar kept")
	assert.Equal(t, true, body["full"])
	assert.Equal(t, true, body["clean"])

	status, body = get("capped").do(t, srv)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "capped\n", body["diff"], "the status's diff when the sidecar has none")
	assert.Equal(t, false, body["full"])
	assert.Equal(t, true, body["truncated"])
	assert.Equal(t, false, body["clean"])

	for _, name := range []string{"other-app", "theirs", "missing", ""} {
		status, body = get(name).do(t, srv)
		assert.Equal(t, http.StatusNotFound, status, "%s: %v", name, body)
		assert.NotContains(t, fmt.Sprint(body), "secret of team-b")
	}

	post := actor{method: http.MethodPost, path: "/api/v1/preview", app: "seb-app", project: project("team-a"), body: `{"environment":"staging"}`}
	for _, tc := range []struct {
		name   string
		a      actor
		status int
	}{
		{"no user", post, http.StatusForbidden},
		{"another tenant's user", func() actor { a := post; a.user = "bob"; return a }(), http.StatusForbidden},
		{"another tenant's Environment", func() actor { a := post; a.user, a.body = "alice", `{"environment":"prod"}`; return a }(), http.StatusBadRequest},
	} {
		status, body := tc.a.do(t, srv)
		assert.Equal(t, tc.status, status, "%s: %v", tc.name, body)
	}
	var before as.PromotionPreviewList
	require.NoError(t, c.List(context.Background(), &before))
	require.Len(t, before.Items, 4, "nothing created by a refused request")

	a := post
	a.user = "alice"
	status, body = a.do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, "PromotionPreview", body["kind"])
	pp := &as.PromotionPreview{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: body["name"].(string)}, pp))
	assert.Equal(t, as.PromotionPreviewSpec{Snapshot: "snap-1", Application: "shop", TargetEnvironment: "staging"}, pp.Spec)

	// A release preview: every Environment of the path, the same checks.
	all := post
	all.body = `{"allEnvironments":true}`
	status, body = all.do(t, srv)
	assert.Equal(t, http.StatusForbidden, status, "no user: %v", body)
	for _, bad := range []string{`{"allEnvironments":true,"environment":"staging"}`, `{"allEnvironments":false}`, `{}`} {
		a := all
		a.user, a.body = "alice", bad
		status, body = a.do(t, srv)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %v", bad, body)
	}
	all.user = "alice"
	status, body = all.do(t, srv)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	release := &as.PromotionPreview{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: body["name"].(string)}, release))
	assert.Equal(t, as.PromotionPreviewSpec{Snapshot: "snap-1", Application: "shop", AllEnvironments: true}, release.Spec)

	// Its view has each Environment's result and render hashes.
	release.Generation = 1
	release.Status = as.PromotionPreviewStatus{ObservedGeneration: 1, CompletedAt: &at, Clean: true, Environments: []as.PreviewEnvironmentResult{
		{Name: "dev", Clean: true, Components: []as.PreviewComponentSummary{{Name: "web", RenderHash: "sha256:d"}}},
		{Name: "staging", Clean: true, Components: []as.PreviewComponentSummary{{Name: "web", RenderHash: "sha256:s"}}, Diff: "staging diff\n"}}}
	require.NoError(t, c.Update(context.Background(), release))
	status, body = get(release.Name).do(t, srv)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, true, body["allEnvironments"])
	envs, _ := body["environments"].([]any)
	require.Len(t, envs, 2, "%v", body)
	staging := envs[1].(map[string]any)
	assert.Equal(t, "staging", staging["name"])
	assert.Equal(t, "staging diff\n", staging["diff"])
	assert.Equal(t, "sha256:s", staging["components"].([]any)[0].(map[string]any)["renderHash"])
}
