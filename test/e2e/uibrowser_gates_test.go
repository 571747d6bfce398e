package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// bindingApplication is the Argo CD Application of component in the binding
// of appa in env.
func bindingApplication(t *testing.T, ns, env, component string) argov1alpha1.Application {
	t.Helper()
	ctx := context.Background()
	var apps argov1alpha1.ApplicationList
	require.Eventually(t, func() bool {
		var sebs as.SnapshotEnvironmentBindingList
		if k8s.List(ctx, &sebs, client.InNamespace(ns)) != nil {
			return false
		}
		for _, b := range sebs.Items {
			if b.Spec.Application == "appa" && b.Spec.Environment == env {
				return k8s.List(ctx, &apps, client.InNamespace(argo.Namespace), client.MatchingLabels{ownership.LabelOwnerUID: string(b.UID),
					as.LabelComponent: component}) == nil && len(apps.Items) == 1
			}
		}
		return false
	}, deployWait, poll, "no Application for %s in %s", component, env)
	return apps.Items[0]
}

// panelGates drives the gates, Preview, Rollback and history of the panel in
// alice's browser (TestUIPanelInTheBrowser's tenant, whose dev runs snap-2
// and staging snap-2 after snap-1): a promotion into staging, which needs
// alice's approval, waits and says why; Approve approves as the Argo CD user
// argocd-server authenticated and the run goes on; Freeze and Unfreeze
// toggle staging's freeze switch (Unfreeze only once alice is a release
// manager of the tenant); Preview of dev's Snapshot into staging
// shows the image change; Rollback rolls staging back and the history says
// so. Then the CLI, through the real argocd binary with alice's Argo CD
// login, shows that history, releases the rollback's hold and follows a
// rollback that is refused.
func panelGates(t *testing.T, alice *browserUser, ns string, devApp argov1alpha1.Application) {
	ctx := context.Background()
	applyApprovalPolicy(t)
	stagingApp := bindingApplication(t, ns, "staging", "frontend")
	const approver = "argocd:alice"
	staging := &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staging"}}
	// And an analysis check, whose result the panel shows under the step.
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"status":"ok"}`) }))
	defer ready.Close()
	require.NoError(t, k8s.Patch(ctx, staging, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"gates":{"approvals":{"required":1,"users":["`+approver+`"]}},`+
			`"analysis":{"checks":[{"name":"ready","web":{"url":"`+ready.URL+`/healthz","jsonField":"status","successCondition":{"operator":"==","value":"ok"}}}]}}}`))))
	gated := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-1-to-staging-gated"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-1", Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging"}}}
	require.NoError(t, k8s.Create(ctx, gated))
	waitPromotion(t, gated, "awaiting approval", func(r *as.PromotionRun) bool { return waitingCondition(r, as.WaitingReasonAwaitingApproval) != nil })

	// The waiting reason, the gate and Approve.
	alice.openPanel(stagingApp.Name)
	alice.waitText(`[data-gs="waiting"]`, "Waiting ("+as.WaitingReasonAwaitingApproval+")")
	alice.waitText(`[data-gs="waiting"]`, "0 of 1")
	alice.waitText(`[data-gs-env="staging"] [data-gs="approvals"]`, "1 approval(s) by "+approver)
	alice.screenshotOf(`[data-gs="panel"]`, "gates-waiting")
	// Argo CD's buttons are upper case (CSS): innerText is too.
	alice.waitText(`[data-gs-env="staging"] [data-gs="approve-button"]`, "APPROVE SNAP-1")
	alice.click(`[data-gs-env="staging"] [data-gs="approve-button"]`)
	alice.waitText(`[data-gs="action"][data-gs-done="true"]`, "PromotionApproval snap-1-into-staging-panel-")
	var approvals as.PromotionApprovalList
	require.NoError(t, k8s.List(ctx, &approvals, client.InNamespace(ns)))
	require.Len(t, approvals.Items, 1)
	assert.Equal(t, as.Approver{User: approver}, approvals.Items[0].Spec.Approver, "the approver is the Argo CD user argocd-server authenticated")
	assert.Equal(t, "snap-1", approvals.Items[0].Spec.Snapshot)
	assert.Equal(t, "staging", approvals.Items[0].Spec.Environment)
	waitPromotion(t, gated, "Success after the approval", promotionSucceeded)
	alice.waitText(`[data-gs-step="staging"] [data-gs-check="ready"]`, "Successful")
	alice.waitText(`[data-gs-step="staging"] [data-gs-check="ready"]`, "1 ok, 0 failed")
	alice.waitText(`[data-gs-env="staging"] [data-gs="snapshot"]`, "snap-1")
	assert.Zero(t, alice.count(`[data-gs="waiting"]`), "a completed run waits for nothing")

	// Freeze, then Unfreeze: staging's freeze switch, the approval gate kept.
	alice.click(`[data-gs-env="staging"] [data-gs="freeze-button"]`)
	alice.waitText(`[data-gs-env="staging"] [data-gs="frozen"]`, "Frozen by "+approver)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(staging), staging))
	require.NotNil(t, staging.Spec.Gates.Freeze)
	assert.True(t, staging.Spec.Gates.Freeze.Frozen)
	assert.Equal(t, approver, staging.Spec.Gates.Freeze.By)
	assert.NotNil(t, staging.Spec.Gates.Approvals, "Freeze changed the other gates")
	alice.screenshotOf(`[data-gs-env="staging"]`, "gates-frozen")
	// Unfreezing lifts a gate: refused while alice is mapped but not one of
	// the tenant's release managers, with the reason; staging stays frozen.
	alice.click(`[data-gs-env="staging"] [data-gs="unfreeze-button"]`)
	alice.waitText(`[data-gs="action-error"]`, "Unfreeze refused: user alice may not unfreeze Environment staging")
	alice.waitText(`[data-gs="action-error"]`, argocd.AnnotationArgoCDReleaseManagers)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(staging), staging))
	assert.True(t, staging.Spec.Gates.Freeze.Frozen, "a refused Unfreeze unfroze staging")
	// The platform admin names alice a release manager of her tenant.
	require.NoError(t, k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+argocd.AnnotationArgoCDReleaseManagers+`":"alice"}}}`))))
	alice.click(`[data-gs-env="staging"] [data-gs="unfreeze-button"]`)
	alice.waitText(`[data-gs-env="staging"] [data-gs="freeze-button"]`, "FREEZE")
	assert.Zero(t, alice.count(`[data-gs-env="staging"] [data-gs="frozen"]`))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(staging), staging))
	require.NotNil(t, staging.Spec.Gates.Freeze)
	assert.False(t, staging.Spec.Gates.Freeze.Frozen)
	assert.Equal(t, approver, staging.Spec.Gates.Freeze.By)
	// Approve and Freeze made no run: nothing is left in flight, Promote and Rollback stay usable.
	alice.waitText(`[data-gs="action"][data-gs-done="true"]`, "Unfreeze done: Environment staging")
	assert.Equal(t, 1, alice.count(`[data-gs="promote-button"]:not([disabled])`), "Promote disabled after Unfreeze")
	assert.Equal(t, 1, alice.count(`[data-gs="rollback-button"]:not([disabled])`), "Rollback disabled after Unfreeze")

	// Preview of dev's snap-2 into staging (runs snap-1): the images change.
	alice.openPanel(devApp.Name)
	alice.waitText(`[data-gs="promote-action"]`, "snap-2")
	alice.click(`[data-gs="preview-button"]`)
	shown := alice.waitText(`[data-gs="preview"]`, "Succeeded")
	var previews as.PromotionPreviewList
	require.NoError(t, k8s.List(ctx, &previews, client.InNamespace(ns)))
	require.Len(t, previews.Items, 1)
	pp := previews.Items[0]
	assert.Equal(t, as.PromotionPreviewSpec{Snapshot: "snap-2", Application: "appa", TargetEnvironment: "staging"}, pp.Spec)
	assert.True(t, pp.Status.Clean, "%+v", pp.Status)
	assert.Contains(t, shown, pp.Name)
	for _, c := range pp.Status.Components {
		assert.Contains(t, shown, c.Name)
	}
	diff := alice.waitText(`[data-gs="preview-diff"]`, "quay.io/example/frontend:v2")
	assert.Contains(t, diff, "quay.io/example/frontend:v1")
	assert.Contains(t, diff, "quay.io/example/backend:v2")
	alice.screenshotOf(`[data-gs="promote-action"]`, "preview")
	if viaArgoCD() {
		// The same preview with alice's Argo CD login (no kubeconfig): the
		// CLI makes it through the panel's API, shows the diff, exits 0.
		out, code := gitopsWith(t, argoLogin(t, "alice"), "promote", "snap-2", "--to", "staging", "--preview")
		require.Equal(t, 0, code, out)
		var removed, added bool
		for _, l := range strings.Split(out, "\n") {
			removed = removed || (strings.HasPrefix(l, "-") && strings.HasSuffix(l, "image: quay.io/example/frontend:v1"))
			added = added || (strings.HasPrefix(l, "+") && strings.HasSuffix(l, "image: quay.io/example/frontend:v2"))
		}
		assert.True(t, removed && added, "the image change as a unified diff:\n%s", out)
		require.NoError(t, k8s.List(ctx, &previews, client.InNamespace(ns)))
		require.Len(t, previews.Items, 2, "the CLI's preview is a second PromotionPreview")
		for _, p := range previews.Items {
			assert.Equal(t, as.PromotionPreviewSpec{Snapshot: "snap-2", Application: "appa", TargetEnvironment: "staging"}, p.Spec)
			if p.Name != pp.Name {
				assert.Contains(t, out, "PromotionPreview "+p.Name+" created", out)
				assert.True(t, p.Status.Clean, "%+v", p.Status)
			}
		}
	}

	// History and Rollback of staging.
	alice.openPanel(stagingApp.Name)
	history := alice.waitText(`[data-gs="history"]`, gated.Name)
	assert.Contains(t, history, "snap-2-to-staging-")
	assert.Contains(t, history, approver, "who approved the gated promotion")
	alice.click(`[data-gs="rollback-button"]`)
	alice.waitText(`[data-gs="action"]`, "PromotionRun appa-staging-rollback-")
	alice.waitText(`[data-gs="action"][data-gs-done="true"]`, "Success")
	var runs as.PromotionRunList
	require.NoError(t, k8s.List(ctx, &runs, client.InNamespace(ns)))
	var rollbacks []as.PromotionRun
	for _, r := range runs.Items {
		if strings.HasPrefix(r.Name, "appa-staging-rollback-") {
			rollbacks = append(rollbacks, r)
		}
	}
	require.Len(t, rollbacks, 1)
	assert.Equal(t, as.PromotionRunSpec{Snapshot: "snap-1", Application: "appa",
		ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging", Rollback: true},
		RequestedBy:     &as.Requester{User: approver}}, rollbacks[0].Spec, "the rollback names the Argo CD user who asked")
	alice.waitText(`[data-gs-env="staging"] [data-gs="snapshot"]`, "snap-2")
	alice.waitText(`[data-gs="held"]`, "held since")
	alice.waitText(`[data-gs="rejected"]`, "snap-1")
	alice.waitText(`[data-gs="history"]`, rollbacks[0].Name)
	alice.screenshotOf(`[data-gs="panel"]`, "rollback-history")

	// The CLI with alice's Argo CD login: the history, then the release.
	if !viaArgoCD() {
		return
	}
	login := argoLogin(t, "alice")
	out, code := gitopsWith(t, login, "history", "staging", "--application", "appa")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, rollbacks[0].Name)
	assert.Contains(t, out, gated.Name)
	assert.Contains(t, out, "appa: rejected Snapshots: snap-1")
	assert.Contains(t, out, "appa: automated promotion out of staging held since")
	out, code = gitopsWith(t, login, "rollback", "staging", "--application", "appa", "--release")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "released the hold on automated promotion out of staging (rollback "+rollbacks[0].Name+" of snap-1)")
	h := &as.PromotionHistory{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: as.PromotionHistoryName("appa", "staging")}, h))
	assert.False(t, h.Held(), "released through Argo CD")
	out, code = gitopsWith(t, login, "history", "staging", "--application", "appa", "-o", "jsonpath={.items[0].spec.environment}")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "staging", out)
	out, code = gitopsWith(t, login, "history", "staging")
	require.Equal(t, 0, code, out)
	assert.NotContains(t, out, "held since", "the hold is released")
	// A rollback through Argo CD, followed to its end: snap-1, the only
	// other Snapshot verified in staging, is rejected, so it is refused.
	out, code = gitopsWith(t, login, "rollback", "staging", "--application", "appa")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, "rollback of snap-2 out of staging (application appa)")
	assert.Contains(t, out, "nothing to roll back to")
}

// argoLogin is the environment of a plugin run by user logged in to Argo CD
// (password <user>-password) without a kubeconfig.
func argoLogin(t *testing.T, user string) []string {
	t.Helper()
	cli, err := argo.Login(context.Background(), user, user+"-password")
	require.NoError(t, err)
	return []string{"HOME=" + argoHome(t, cli), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}
}
