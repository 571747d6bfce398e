package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoutil "github.com/argoproj/argo-cd/v2/util/argo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

// previewFiles is component web's manifests at the previewed revision: the
// Deployment (its image set by the Snapshot), a Service the target
// namespace's quota refuses and a ClusterRole the Environment's credentials
// may not create. The ConfigMap web-old that runs there is gone from them.
const previewDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: quay.io/example/web:placeholder
`

func previewFiles() map[string]string {
	return map[string]string{
		"components/web/kustomization.yaml": "resources:\n- deployment.yaml\n- service.yaml\n- clusterrole.yaml\n",
		"components/web/deployment.yaml":    previewDeployment,
		"components/web/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
`,
		"components/web/clusterrole.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: web-preview-reader
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
`,
	}
}

// namespaceDeployer is a token of a ServiceAccount of the remote cluster that
// administers namespace ns only (and may read that namespace, which the
// Environment's connection check does).
func namespaceDeployer(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}}
	require.NoError(t, remoteK8s.Create(ctx, sa))
	require.NoError(t, remoteK8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"}}))
	reader := "read-namespace-" + ns
	require.NoError(t, remoteK8s.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: reader},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns}, Verbs: []string{"get"}}}}))
	require.NoError(t, remoteK8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: reader},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader}}))
	cs, err := kubernetes.NewForConfig(remoteKube.Config)
	require.NoError(t, err)
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "deployer",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tok.Status.Token
}

// tracked marks obj as Argo CD's Application app deployed it, with the
// tracking method the stack's Argo CD uses by default.
func tracked(t *testing.T, obj client.Object, gvk string, app string) {
	t.Helper()
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: raw}
	gv, kind, _ := strings.Cut(gvk, ":")
	u.SetAPIVersion(gv)
	u.SetKind(kind)
	method := argov1alpha1.TrackingMethod("annotation")
	if stack.ArgoCDMajor() == "2" {
		method = "label"
	}
	require.NoError(t, argoutil.NewResourceTracking().SetAppInstance(u, "app.kubernetes.io/instance", app, "", method, ""))
	obj.SetLabels(u.GetLabels())
	obj.SetAnnotations(u.GetAnnotations())
}

// resourceVersions are the resourceVersions of every object of the kinds a
// preview reads in namespace ns of the remote cluster, and of its ClusterRoles.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	return versionsOf(t, remoteK8s, true, ns)
}

// versionsOf are the resourceVersions of the Deployments, ConfigMaps,
// Services and ResourceQuotas of the namespaces through c (and of all
// ClusterRoles with clusterRoles).
func versionsOf(t *testing.T, c client.Client, clusterRoles bool, namespaces ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var lists []client.ObjectList
	for range namespaces {
		lists = append(lists, &appsv1.DeploymentList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{}, &corev1.ResourceQuotaList{})
	}
	if clusterRoles {
		lists = append(lists, &rbacv1.ClusterRoleList{})
	}
	for i, list := range lists {
		opts := []client.ListOption{}
		if _, cluster := list.(*rbacv1.ClusterRoleList); !cluster {
			opts = append(opts, client.InNamespace(namespaces[i/4]))
		}
		require.NoError(t, c.List(context.Background(), list, opts...))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, o := range items {
			m, _ := meta.Accessor(o)
			out[fmt.Sprintf("%T/%s/%s", o, m.GetNamespace(), m.GetName())] = m.GetResourceVersion()
		}
	}
	return out
}

func waitPreview(t *testing.T, pp *as.PromotionPreview, what string, ok func(*as.PromotionPreview) bool) *as.PromotionPreview {
	t.Helper()
	got := &as.PromotionPreview{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(pp), got) == nil && ok(got)
	}, 3*time.Minute, 500*time.Millisecond, "PromotionPreview %s never %s; last status: %+v", pp.Name, what, &got.Status)
	return got
}

// changedLines are the -/+ lines of a unified diff, without its headers.
func changedLines(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
			out = append(out, l)
		}
	}
	return out
}

// objectDiff is the part of a preview's diff about one object.
func objectDiff(diff, header string) string {
	i := strings.Index(diff, header)
	if i < 0 {
		return ""
	}
	rest := diff[i:]
	if j := strings.Index(rest[1:], "\n--- "); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

func TestPromotionPreviewAgainstTheLiveCluster(t *testing.T) {
	ctx := context.Background()
	remote(t)
	ns := tenantNamespace(t)
	targetNS := remoteNamespace(t, "preview")
	token := namespaceDeployer(t, targetNS)

	repo, _ := gitRepo(t, previewFiles())
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa"}, Spec: as.ApplicationSpec{DisplayName: "App A"}}))
	comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: as.ComponentSpec{ComponentName: "web", Application: "appa", ContainerImage: "quay.io/example/web:placeholder"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: repo.URL, Branch: "main", Context: "components/web"}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	kc, err := remoteKube.KubeconfigFor(token)
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, credentialsSecret(ns, "staging-creds", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staging"}, Spec: as.EnvironmentSpec{
		DisplayName: "Staging", DeploymentStrategy: as.DeploymentStrategyManual,
		UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
			APIURL: remoteKube.URL, TargetNamespace: targetNS, ClusterCredentialsSecret: "staging-creds", Namespaces: []string{targetNS}}}}}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-2"}, Spec: as.SnapshotSpec{Application: "appa",
		Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/example/web:v2"}}}}))

	// What runs in the target namespace: web at v1 and a ConfigMap the new
	// revision no longer has, as Argo CD's Application for the binding a
	// PromotionRun would create deployed them; and an object of nobody's.
	app := "appa-staging-generated-binding-appa-staging-web"
	live := &appsv1.Deployment{}
	require.NoError(t, yaml.Unmarshal([]byte(strings.Replace(previewDeployment, "placeholder", "v1", 1)), live))
	live.Namespace = targetNS
	tracked(t, live, "apps/v1:Deployment", app)
	require.NoError(t, remoteK8s.Create(ctx, live))
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "web-old"}, Data: map[string]string{"k": "v"}}
	tracked(t, old, "v1:ConfigMap", app)
	require.NoError(t, remoteK8s.Create(ctx, old))
	require.NoError(t, remoteK8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "someone-elses"}}))
	require.NoError(t, remoteK8s.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "no-services"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}}))
	// The remote cluster runs no quota controller: its usage is set as that
	// controller would (admission enforces only a quota with a status).
	quota := &corev1.ResourceQuota{}
	require.NoError(t, remoteK8s.Get(ctx, client.ObjectKey{Namespace: targetNS, Name: "no-services"}, quota))
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}
	require.NoError(t, remoteK8s.Status().Update(ctx, quota))
	// The remote's controllers settle the Deployment (its ReplicaSet, its
	// status) first: then only a write of the preview would change anything.
	before := settled(t, "the remote namespace", func() map[string]string { return resourceVersions(t, targetNS) })
	got := completedPreview(t, ns, "snap-2-to-staging", "staging")

	require.Len(t, got.Status.Components, 1, "status: %+v", got.Status)
	web := got.Status.Components[0]
	assert.Empty(t, web.RenderError)
	assert.Equal(t, app, web.ArgoApplication)
	assert.Equal(t, 2, web.Added, "Service and ClusterRole; status: %+v", web)
	assert.Equal(t, 1, web.Changed, "the Deployment; status: %+v", web)
	assert.Equal(t, 1, web.Removed, "ConfigMap web-old is pruned; status: %+v", web)
	assert.Equal(t, 2, web.Errors, "status: %+v", web)
	assert.False(t, got.Status.Clean)
	errs := map[string]string{}
	for _, e := range web.DryRunErrors {
		errs[e.Kind+"/"+e.Name] = e.Message
	}
	assert.Contains(t, errs["Service/web"], "quota", "the quota refuses the Service: %v", errs)
	// The tenant's AppProject permits no cluster-scoped kind: refused as
	// Argo CD's sync refuses it, before any request (not the cluster's RBAC).
	assert.Equal(t, "resource rbac.authorization.k8s.io:ClusterRole is not permitted in project "+projectOf(t, ns), errs["rbac.authorization.k8s.io/ClusterRole/web-preview-reader"], "%v", errs)

	deployDiff := objectDiff(got.Status.Diff, "--- live/web/apps/Deployment "+targetNS+"/web")
	require.NotEmpty(t, deployDiff, "no diff of the Deployment in:\n%s", got.Status.Diff)
	assert.Equal(t, []string{"-      - image: quay.io/example/web:v1", "+      - image: quay.io/example/web:v2"}, changedLines(deployDiff),
		"the image change is the Deployment's one-line diff:\n%s", deployDiff)
	pruned := objectDiff(got.Status.Diff, "--- live/web/ConfigMap "+targetNS+"/web-old")
	assert.Contains(t, pruned, "+++ /dev/null", "web-old shows as pruned:\n%s", got.Status.Diff)
	assert.NotContains(t, got.Status.Diff, "someone-elses", "an object the app does not track is not pruned")
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)

	// Nothing was written: not on the target cluster, not for Argo CD.
	assert.Equal(t, before, resourceVersions(t, targetNS))
	// The CLI: the same preview, a colored unified diff on a terminal (plain
	// here), exit code 1 for the dry-run's errors.
	out, code := gitops(t, kube.Kubeconfig, "promote", "snap-2", "--to", "staging", "--preview", "-n", ns)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "\n-      - image: quay.io/example/web:v1\n+      - image: quay.io/example/web:v2\n", out)
	assert.Contains(t, out, "web: dry-run refused Service "+targetNS+"/web", out)
	assert.Contains(t, out, "would fail: 2 dry-run error(s)", out)
	assert.Equal(t, before, resourceVersions(t, targetNS), "the CLI's preview wrote nothing either")

	var sebs as.SnapshotEnvironmentBindingList
	require.NoError(t, k8s.List(ctx, &sebs, client.InNamespace(ns)))
	assert.Empty(t, sebs.Items, "a preview creates no binding")
	var sets argov1alpha1.ApplicationSetList
	require.NoError(t, k8s.List(ctx, &sets, client.InNamespace(argo.Namespace)))
	for _, s := range sets.Items {
		assert.NotEqual(t, ns, s.Labels[ownership.LabelTenantNS], "a preview creates no ApplicationSet")
	}
}

// TestPromotionPreviewRefusesAnotherTenantsObjects: a preview names only its
// own namespace's Snapshot, Application and Environment.
func TestPromotionPreviewRefusesAnotherTenantsObjects(t *testing.T) {
	ctx := context.Background()
	owner, other := tenantNamespace(t), tenantNamespace(t)
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "appa"}}))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "staging"}}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "snap"}, Spec: as.SnapshotSpec{Application: "appa",
		Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/example/web:v1"}}}}))
	// The other tenant has an Application of the same name, nothing else.
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "appa"}}))
	pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "steal"},
		Spec: as.PromotionPreviewSpec{Snapshot: "snap", Application: "appa", TargetEnvironment: "staging"}}
	require.NoError(t, k8s.Create(ctx, pp))
	got := waitPreview(t, pp, "refused", func(p *as.PromotionPreview) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, as.PromotionPreviewConditionFailed)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	c := meta.FindStatusCondition(got.Status.Conditions, as.PromotionPreviewConditionFailed)
	assert.Equal(t, as.PromotionPreviewReasonInvalid, c.Reason)
	assert.Contains(t, c.Message, fmt.Sprintf("Snapshot %q not found in namespace %q", "snap", other))
	assert.Nil(t, got.Status.CompletedAt)
	assert.Empty(t, got.Status.Components)
}

// projectOf is the name of the AppProject of tenant namespace ns.
func projectOf(t *testing.T, ns string) string {
	t.Helper()
	n := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Name: ns}, n))
	return "gitops-tenant-" + string(n.UID)
}

// applicationController is the identity Argo CD's application controller
// applies with, bound as Argo CD's install binds it (its ClusterRole allows
// everything): the stack runs Argo CD with an admin kubeconfig instead.
func applicationController(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Namespace, Name: "argocd-application-controller"}}
	if err := k8s.Create(ctx, sa); err != nil {
		require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-argocd-application-controller"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: argo.Namespace, Name: sa.Name}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"}}
	require.NoError(t, k8s.Create(ctx, crb))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crb) })
}

// A preview of an Environment on Argo CD's own cluster reads and dry-runs as
// Argo CD's application controller, but only what the tenant's AppProject
// permits there: the image change shows as the Deployment's one-line diff;
// a ClusterRole and a ConfigMap of another namespace are reported not
// permitted, as Argo CD's sync reports them, and nothing of theirs is read
// (the other namespace's ConfigMap, of the same name, never shows) or
// written anywhere.
func TestPromotionPreviewOnArgoCDsOwnCluster(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	applicationController(t)
	// Another namespace (another tenant's, or a system one) with a ConfigMap
	// the manifests name too.
	victim := tenantNamespace(t)
	secret := canary("other-namespace-configmap")
	require.NoError(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "web-settings"}, Data: map[string]string{"value": secret}}))

	files := previewFiles()
	files["components/web/kustomization.yaml"] = "resources:\n- deployment.yaml\n- clusterrole.yaml\n- elsewhere.yaml\n- role.yaml\n"
	files["components/web/elsewhere.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\n  namespace: " + victim + "\ndata:\n  value: from-git\n"
	// A kind the project permits but the tenant's own role (edit) may not read.
	files["components/web/role.yaml"] = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: web-role\nrules: []\n"
	repo, _ := gitRepo(t, files)
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa"}, Spec: as.ApplicationSpec{DisplayName: "App A"}}))
	comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: as.ComponentSpec{ComponentName: "web", Application: "appa", ContainerImage: "quay.io/example/web:placeholder"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: repo.URL, Branch: "main", Context: "components/web"}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	// No cluster of its own: dev deploys to the tenant's namespace on Argo CD's cluster.
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}, Spec: as.EnvironmentSpec{
		DisplayName: "Dev", DeploymentStrategy: as.DeploymentStrategyManual}}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-2"}, Spec: as.SnapshotSpec{Application: "appa",
		Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/example/web:v2"}}}}))

	// What runs: web at v1, as Argo CD's Application for the binding a
	// PromotionRun would create deployed it.
	app := "appa-dev-generated-binding-appa-dev-web"
	live := &appsv1.Deployment{}
	require.NoError(t, yaml.Unmarshal([]byte(strings.Replace(previewDeployment, "placeholder", "v1", 1)), live))
	live.Namespace = ns
	tracked(t, live, "apps/v1:Deployment", app)
	require.NoError(t, k8s.Create(ctx, live))
	// A live Role the Application tracks: were Roles read, it would be a prune candidate.
	oldRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old-role"}}
	tracked(t, oldRole, "rbac.authorization.k8s.io/v1:Role", app)
	require.NoError(t, k8s.Create(ctx, oldRole))
	before := settled(t, "the namespaces", func() map[string]string { return versionsOf(t, k8s, false, ns, victim) })
	got := completedPreview(t, ns, "snap-2-to-dev", "dev")

	require.Len(t, got.Status.Components, 1, "status: %+v", got.Status)
	web := got.Status.Components[0]
	assert.Empty(t, web.RenderError)
	assert.Equal(t, app, web.ArgoApplication)
	assert.Equal(t, 1, web.Changed, "the Deployment; status: %+v", web)
	assert.Equal(t, 3, web.Added, "the ClusterRole, the other namespace's ConfigMap and the Role, never compared with anything live; status: %+v", web)
	assert.Equal(t, 0, web.Removed, "Roles are not read (the tracked old-role is no prune candidate); status: %+v", web)
	assert.Equal(t, 3, web.Errors, "status: %+v", web)
	assert.False(t, got.Status.Clean)
	errs := map[string]string{}
	for _, e := range web.DryRunErrors {
		errs[e.Kind+"/"+e.Namespace+"/"+e.Name] = e.Message
	}
	project := projectOf(t, ns)
	assert.Equal(t, map[string]string{
		"rbac.authorization.k8s.io/ClusterRole//web-preview-reader": "resource rbac.authorization.k8s.io:ClusterRole is not permitted in project " + project,
		"ConfigMap/" + victim + "/web-settings":                     "namespace " + victim + " is not permitted in project '" + project + "'",
		"rbac.authorization.k8s.io/Role/" + ns + "/web-role":        "resource roles.rbac.authorization.k8s.io is not previewed: the tenant's own role (ClusterRole edit) in namespace " + ns + " may not get and list it",
	}, errs)

	// Read as the application controller: the live Deployment is compared.
	deployDiff := objectDiff(got.Status.Diff, "--- live/web/apps/Deployment "+ns+"/web")
	require.NotEmpty(t, deployDiff, "no diff of the Deployment in:\n%s", got.Status.Diff)
	assert.Equal(t, []string{"-      - image: quay.io/example/web:v1", "+      - image: quay.io/example/web:v2"}, changedLines(deployDiff),
		"the image change is the Deployment's one-line diff:\n%s", deployDiff)
	// Nothing of the other namespace was read.
	assert.NotContains(t, got.Status.Diff, secret, "the other namespace's ConfigMap reached the status")
	assert.Contains(t, objectDiff(got.Status.Diff, "--- /dev/null\n+++ preview/web/ConfigMap "+victim+"/web-settings"), "value: from-git",
		"the rendered ConfigMap shows as an addition, compared with nothing live:\n%s", got.Status.Diff)
	b, err := json.Marshal(got.Status)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret)

	// Nothing was written: not in either namespace, and no ClusterRole.
	assert.Equal(t, before, versionsOf(t, k8s, false, ns, victim))
	assert.True(t, apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "web-preview-reader"}, &rbacv1.ClusterRole{})), "the preview created the ClusterRole")
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: victim, Name: "web-settings"}, cm))
	assert.Equal(t, map[string]string{"value": secret}, cm.Data)
	var sebs as.SnapshotEnvironmentBindingList
	require.NoError(t, k8s.List(ctx, &sebs, client.InNamespace(ns)))
	assert.Empty(t, sebs.Items, "a preview creates no binding")
}

// settled waits until versions (resourceVersions) stay the same for 2 s, the
// controllers done with what they own, and returns them: then only a write
// of the preview would change anything.
func settled(t *testing.T, what string, versions func() map[string]string) map[string]string {
	t.Helper()
	var before map[string]string
	require.Eventually(t, func() bool {
		first := versions()
		time.Sleep(2 * time.Second)
		before = versions()
		return assert.ObjectsAreEqual(first, before)
	}, time.Minute, 100*time.Millisecond, what+" never settled")
	return before
}

// completedPreview creates PromotionPreview name of snap-2 of appa to env in
// ns and waits for it to complete.
func completedPreview(t *testing.T, ns, name, env string) *as.PromotionPreview {
	t.Helper()
	pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: as.PromotionPreviewSpec{Snapshot: "snap-2", Application: "appa", TargetEnvironment: env}}
	require.NoError(t, k8s.Create(context.Background(), pp))
	return waitPreview(t, pp, "completed", func(p *as.PromotionPreview) bool { return p.Status.CompletedAt != nil })
}
