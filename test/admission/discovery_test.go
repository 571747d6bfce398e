//go:build !unit

package admission

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// ourResources are the resources of our two API groups as the API server
// serves them (discovery), subresources left out.
func ourResources(t *testing.T) []metav1.APIResource {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(kube.Config)
	require.NoError(t, err)
	var out []metav1.APIResource
	for _, gv := range []string{v1.GroupVersion.String(), as.GroupVersion.String()} {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		require.NoError(t, err)
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				out = append(out, r)
			}
		}
	}
	return out
}

// Every kind has short names and the gitops category, as served; no short
// name is taken twice.
func TestShortNamesAndCategory(t *testing.T) {
	resources := ourResources(t)
	require.Len(t, resources, 18)
	seen := map[string]string{}
	for _, r := range resources {
		assert.NotEmpty(t, r.ShortNames, "%s has no short name", r.Kind)
		assert.Contains(t, r.Categories, "gitops", "%s is not in the gitops category", r.Kind)
		for _, s := range r.ShortNames {
			assert.Empty(t, seen[s], "short name %s of %s is also %s's", s, r.Kind, seen[s])
			seen[s] = r.Kind
		}
	}
}

// `kubectl get gitops` lists our CRs of every kind, and each short name works
// in kubectl (the stack's kubectl, the version the stack serves).
func TestKubectlGetGitops(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-get"}}
	require.NoError(t, k8s.Create(ctx, ns))
	om := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns.Name, Name: name} }
	objs := []client.Object{
		&v1.GitOpsDeployment{ObjectMeta: om("gd"), Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://git.example.com/a.git", Path: "apps"}, Type: v1.GitOpsDeploymentSpecTypeManual}},
		&v1.GitOpsDeploymentSyncRun{ObjectMeta: om("run"), Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "gd"}},
		&v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om("creds"), Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: "https://git.example.com/a.git", Secret: "s"}},
		&v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om("cluster"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://api.example.com", ClusterCredentialsSecret: "s"}},
		&as.Application{ObjectMeta: om("app")},
		&as.Component{ObjectMeta: om("comp"), Spec: as.ComponentSpec{ComponentName: "comp", Application: "app"}},
		&as.Environment{ObjectMeta: om("dev")},
		&as.Snapshot{ObjectMeta: om("snap"), Spec: as.SnapshotSpec{Application: "app"}},
		&as.SnapshotSubscription{ObjectMeta: om("subs"), Spec: as.SnapshotSubscriptionSpec{Application: "app",
			Components: []as.ComponentSubscription{{Name: "comp", Image: &as.ImageSubscription{Repository: "quay.io/team/comp", Tag: "latest"}}}}},
		&as.SnapshotEnvironmentBinding{ObjectMeta: om("binding"), Spec: as.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "dev", Snapshot: "snap"}},
		&as.PromotionApproval{ObjectMeta: om("approval"), Spec: as.PromotionApprovalSpec{Snapshot: "snap", Environment: "dev", Approver: as.Approver{User: whoAmI(t)}}},
		&as.PromotionHistory{ObjectMeta: om("app.dev"), Spec: as.PromotionHistorySpec{Application: "app", Environment: "dev"}},
		&as.PromotionPreview{ObjectMeta: om("preview"), Spec: as.PromotionPreviewSpec{Snapshot: "snap", Application: "app", TargetEnvironment: "dev"}},
		&as.PromotionRun{ObjectMeta: om("promo"), Spec: as.PromotionRunSpec{Application: "app", Snapshot: "snap", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "dev"}}},
		&as.DeploymentTargetClaim{ObjectMeta: om("claim"), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: "cls"}},
		&as.DeploymentTarget{ObjectMeta: om("target"), Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: "cls",
			KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{DefaultNamespace: "ns", APIURL: "https://api.example.com", ClusterCredentialsSecret: "s"}}},
		// The two cluster-scoped kinds last: the cleanup deletes them.
		&as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-get-ppol"}, Spec: as.PromotionPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns.Name}},
			Rules:             []as.PolicyRule{{Name: "always", Expression: "true"}}}},
		&as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-get-cls"}, Spec: as.DeploymentTargetClassSpec{Provisioner: "p", ReclaimPolicy: as.ReclaimPolicyDelete}},
	}
	for _, o := range objs {
		require.NoError(t, k8s.Create(ctx, o), "%T", o)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, objs[len(objs)-2]); _ = k8s.Delete(ctx, objs[len(objs)-1]) })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := kube.KubeconfigFor(kube.AdminToken)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kubeconfig, data, 0o600))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
		return string(out)
	}

	out := run("get", "gitops", "-n", ns.Name, "-o", "name")
	got := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(got)
	assert.Equal(t, []string{
		"application.appstudio.redhat.com/app",
		"component.appstudio.redhat.com/comp",
		"deploymenttarget.appstudio.redhat.com/target",
		"deploymenttargetclaim.appstudio.redhat.com/claim",
		// Cluster-scoped: listed with the namespaced ones.
		"deploymenttargetclass.appstudio.redhat.com/kubectl-get-cls",
		"environment.appstudio.redhat.com/dev",
		"gitopsdeployment.managed-gitops.redhat.com/gd",
		"gitopsdeploymentmanagedenvironment.managed-gitops.redhat.com/cluster",
		"gitopsdeploymentrepositorycredentials.managed-gitops.redhat.com/creds",
		"gitopsdeploymentsyncrun.managed-gitops.redhat.com/run",
		"promotionapproval.appstudio.redhat.com/approval",
		"promotionhistory.appstudio.redhat.com/app.dev",
		// Cluster-scoped too.
		"promotionpolicy.appstudio.redhat.com/kubectl-get-ppol",
		"promotionpreview.appstudio.redhat.com/preview",
		"promotionrun.appstudio.redhat.com/promo",
		"snapshot.appstudio.redhat.com/snap",
		"snapshotenvironmentbinding.appstudio.redhat.com/binding",
		"snapshotsubscription.appstudio.redhat.com/subs",
	}, got)

	for _, r := range ourResources(t) {
		for _, short := range r.ShortNames {
			out := run("get", short, "-n", ns.Name, "-o", "name")
			assert.True(t, strings.HasPrefix(out, strings.ToLower(r.Kind)+"."), "kubectl get %s is not %s: %s", short, r.Kind, out)
		}
	}
}

// whoAmI is the user name the API server authenticates the suite's client as
// (an approval names its creator: the admission policy checks it).
func whoAmI(t *testing.T) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(kube.Config)
	require.NoError(t, err)
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.UserInfo.Username
}
