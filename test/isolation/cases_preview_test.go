package isolation

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// previewCases: a PromotionPreview reaches only its own namespace's
// Snapshot, Application and Environment (and through them only the tenant's
// project, repository credentials and cluster credentials).
func previewCases() []hostileCase {
	var out []hostileCase
	preview := func(e tenantEnv, mut func(*as.PromotionPreview)) client.Object {
		pp := &as.PromotionPreview{ObjectMeta: om(e.NS, "preview"), Spec: as.PromotionPreviewSpec{Application: "shop", Snapshot: "shop", TargetEnvironment: "shop"}}
		mut(pp)
		return pp
	}
	add := func(name, msg string, setup func(*testing.T, tenantEnv), mut func(*as.PromotionPreview)) {
		if setup == nil {
			setup = func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, "shop", nil) }
		}
		out = append(out, hostileCase{Kind: "PromotionPreview", Name: name, Setup: setup,
			Object: func(e tenantEnv) client.Object { return preview(e, mut) },
			Want:   want{Type: as.PromotionPreviewConditionFailed, Status: metav1.ConditionTrue, Reason: as.PromotionPreviewReasonInvalid, Msg: msg}})
	}
	add("Snapshot of the neighbour", `Snapshot "theirs" not found`, nil, func(pp *as.PromotionPreview) { pp.Spec.Snapshot = "theirs" })
	add("Application of the neighbour", `Application "theirs" not found`, func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.Snapshot{ObjectMeta: om(e.NS, "theirs"), Spec: as.SnapshotSpec{Application: "theirs"}})
	}, func(pp *as.PromotionPreview) { pp.Spec.Application, pp.Spec.Snapshot = "theirs", "theirs" })
	add("Snapshot of another Application", `is of Application "shop", not "other"`, nil, func(pp *as.PromotionPreview) { pp.Spec.Application = "other" })
	for _, env := range []string{"theirs", "kube-system", argoNS} {
		env := env
		add("target Environment "+env, fmt.Sprintf("Environment %q not found", env), nil,
			func(pp *as.PromotionPreview) { pp.Spec.TargetEnvironment = env })
	}
	// An Environment naming the neighbour's credentials Secret: its cluster
	// never connects, so nothing is read or dry-run with them.
	add("Environment with the neighbour's cluster credentials", "is not connected yet", func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.Environment{ObjectMeta: om(e.NS, "stolen"), Spec: as.EnvironmentSpec{DisplayName: "stolen",
			UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
				APIURL: kube.Config.Host, ClusterCredentialsSecret: "theirs-namespaced", TargetNamespace: neighbourNS}}}})
	}, func(pp *as.PromotionPreview) { pp.Spec.TargetEnvironment = "stolen" })
	// Argo CD's own cluster: without an identity of Argo CD's application
	// controller to act as (--preview-local-identity, none in this suite), a
	// preview has no credentials of the Environment's to dry-run with there,
	// and never uses the sidecar's.
	// A release preview covers only its own namespace's Environments, of
	// its own namespace's Snapshot and Application.
	release := func(pp *as.PromotionPreview) { pp.Spec.TargetEnvironment, pp.Spec.AllEnvironments = "", true }
	add("release preview of the neighbour's Snapshot", `Snapshot "theirs" not found`, nil, func(pp *as.PromotionPreview) { release(pp); pp.Spec.Snapshot = "theirs" })
	add("release preview of the neighbour's Application", `Application "theirs" not found`, func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.Snapshot{ObjectMeta: om(e.NS, "theirs"), Spec: as.SnapshotSpec{Application: "theirs"}})
	}, func(pp *as.PromotionPreview) { release(pp); pp.Spec.Application, pp.Spec.Snapshot = "theirs", "theirs" })
	add("Environment on Argo CD's own cluster", "deploys to Argo CD's own cluster, and previews there are off: the sidecar's --preview-local-identity", nil, func(*as.PromotionPreview) {})
	return out
}
