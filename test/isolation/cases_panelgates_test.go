package isolation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// mapPanel sets the tenant mapping and the release managers of ns, as the
// platform admin does.
func mapPanel(t *testing.T, ns, subjects, releaseManagers string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		argocd.AnnotationArgoCDSubjects: subjects, argocd.AnnotationArgoCDReleaseManagers: releaseManagers}}})
	require.NoError(t, err)
	require.NoError(t, k8s.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType, patch)))
}

// TestPromoterCannotLiftGatesThroughThePanel (issue 33, item 3): the panel's
// backend writes as the GitOps Service's ServiceAccount, which the gate
// policies exempt. Mallory, an Argo CD user the tenant mapping names (she may
// promote) but not one of its release managers, and a release manager of
// another tenant, is held by her prod's freeze and a rollback's hold: through
// the panel's API (the real API server behind it) she may freeze, but every
// way to unfreeze or release is refused with the reason, also when she
// claims the release managers' group; nothing changes. The tenant's release
// manager then lifts both.
func TestPromoterCannotLiftGatesThroughThePanel(t *testing.T) {
	ctx := context.Background()
	e, theirs := freshTenant(t, "panelgates"), freshTenant(t, "panelgates")
	mallory, rita := "mallory-"+rand.String(4), "rita-"+rand.String(4)
	mapPanel(t, e.NS, mallory+","+rita+",gatekeepers", rita+",gatekeepers")
	mapPanel(t, theirs.NS, mallory, mallory)

	since := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	create(t, &as.Application{ObjectMeta: om(e.NS, "shop"), Spec: as.ApplicationSpec{DisplayName: "shop"}})
	create(t, &as.Snapshot{ObjectMeta: om(e.NS, "snap"),
		Spec: as.SnapshotSpec{Application: "shop", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/x/fe:v1"}}}})
	create(t, &as.Environment{ObjectMeta: om(e.NS, "prod"), Spec: as.EnvironmentSpec{
		Gates: &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true, By: rita, Reason: "INC-9", Since: &since}}}})
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, "shop-prod"),
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "snap"}}
	create(t, seb)
	hist := &as.PromotionHistory{ObjectMeta: om(e.NS, as.PromotionHistoryName("shop", "prod")),
		Spec: as.PromotionHistorySpec{Application: "shop", Environment: "prod"}}
	createWithStatus(t, hist, func() { hist.Status.Hold = &as.PromotionHold{Since: since, PromotionRun: "rb", Snapshot: "snap"} })
	// The binding's Application, as Argo CD makes it from the binding's ApplicationSet.
	nsObj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: e.NS}, nsObj))
	labels, ann := ownership.Meta(ownership.KindBinding, e.NS, seb.Name, string(seb.UID))
	labels[as.LabelComponent] = "fe"
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "panelgates-" + rand.String(6), Labels: labels, Annotations: ann},
		Spec: argov1alpha1.ApplicationSpec{Project: argocd.ProjectName(string(nsObj.UID)),
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/shop/gitops.git", Path: "fe"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: e.NS}}}
	create(t, app)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), app) })

	srv := httptest.NewServer((&uiproxy.Server{Client: k8s, Writer: k8s, ArgoNamespace: argoNS,
		Token: func() []byte { return []byte("isolation") }}).Handler())
	defer srv.Close()
	call := func(path, user, groups, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(uiproxy.HeaderToken, "isolation")
		req.Header.Set(uiproxy.HeaderApplication, argoNS+":"+app.Name)
		req.Header.Set(uiproxy.HeaderProject, app.Spec.Project)
		req.Header.Set(uiproxy.HeaderUsername, user)
		if groups != "" {
			req.Header.Set("Argocd-User-Groups", groups)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		msg, _ := out["error"].(string)
		return resp.StatusCode, msg
	}
	frozen := func() bool {
		env := &as.Environment{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: e.NS, Name: "prod"}, env))
		return env.Spec.Gates != nil && env.Spec.Gates.Freeze != nil && env.Spec.Gates.Freeze.Frozen
	}
	held := func() bool {
		h := &as.PromotionHistory{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(hist), h))
		return h.Held()
	}
	env := `{"environment":"prod"}`

	// Freezing tightens the gate: mallory may.
	status, msg := call("/api/v1/freeze", mallory, "", `{"environment":"prod","reason":"INC-10"}`)
	require.Equal(t, http.StatusCreated, status, msg)
	for name, try := range map[string]func() (int, string){
		"unfreeze":                       func() (int, string) { return call("/api/v1/unfreeze", mallory, "", env) },
		"release":                        func() (int, string) { return call("/api/v1/release", mallory, "", env) },
		"unfreeze claiming the group":    func() (int, string) { return call("/api/v1/unfreeze", mallory, "gatekeepers", env) },
		"release claiming the group":     func() (int, string) { return call("/api/v1/release", mallory, "gatekeepers", env) },
		"unfreeze with a padded name":    func() (int, string) { return call("/api/v1/unfreeze", " "+mallory+" ", "", env) },
		"release of another Environment": func() (int, string) { return call("/api/v1/release", mallory, "", `{"environment":"staging"}`) },
	} {
		status, msg := try()
		assert.Equal(t, http.StatusForbidden, status, "%s: %s", name, msg)
		assert.Contains(t, msg, argocd.AnnotationArgoCDReleaseManagers, "%s: the refusal names the annotation", name)
	}
	assert.True(t, frozen(), "mallory unfroze prod through the panel")
	assert.True(t, held(), "mallory released the hold through the panel")

	// The tenant's release manager lifts both.
	status, msg = call("/api/v1/unfreeze", rita, "", env)
	require.Equal(t, http.StatusCreated, status, msg)
	assert.False(t, frozen())
	status, msg = call("/api/v1/release", rita, "", env)
	require.Equal(t, http.StatusCreated, status, msg)
	assert.False(t, held())
}
