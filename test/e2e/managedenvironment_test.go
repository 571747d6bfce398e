package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

// The "remote" cluster ManagedEnvironments point at: a second real API server
// with a kube-controller-manager (namespace deletion, GC and ServiceAccount
// token Secrets), started once by the first test that needs it and stopped by
// TestMain after the leak check. Its static tokens are leak canaries.
var (
	remoteOnce sync.Once
	remoteKube *stack.Kube
	remoteK8s  client.Client
	remoteErr  error
	// stopRemotePods stops the remote cluster's RunPods.
	stopRemotePods context.CancelFunc = func() {}

	// remoteAdminToken is in system:masters; remotePowerlessToken authenticates
	// but RBAC allows it nothing.
	remoteAdminToken, remotePowerlessToken string
)

// remote returns the remote cluster, starting it on first use.
func remote(t *testing.T) *stack.Kube {
	t.Helper()
	remoteOnce.Do(func() {
		start := time.Now()
		remoteAdminToken = canary("remote-admin-token")
		remotePowerlessToken = canary("remote-powerless-token")
		remoteKube, remoteErr = stack.StartKube(context.Background(), stack.KubeOptions{
			Name:              "e2e-remote",
			ControllerManager: true,
			Controllers:       workloadControllers(),
			ExtraTokens: map[string]stack.TokenUser{
				remoteAdminToken:     {Name: "remote-admin", Groups: []string{"system:masters"}},
				remotePowerlessToken: {Name: "powerless"},
			},
		})
		if remoteErr == nil {
			var ctx context.Context
			ctx, stopRemotePods = context.WithCancel(context.Background())
			remoteErr = remoteKube.RunPods(ctx, stack.PodRunLabel+"=true")
		}
		if remoteErr == nil {
			remoteK8s, remoteErr = client.New(remoteKube.Config, client.Options{Scheme: sidecar.NewScheme()})
		}
		fmt.Fprintf(os.Stderr, "e2e: remote cluster up in %s\n", time.Since(start).Round(100*time.Millisecond))
	})
	require.NoError(t, remoteErr, "starting the remote cluster")
	return remoteKube
}

// stopRemote stops the remote cluster if it was started.
func stopRemote() {
	stopRemotePods()
	if remoteKube != nil {
		remoteKube.Stop()
	}
}

// remoteLogDirs are the remote cluster's dirs for the leak check.
func remoteLogDirs() []string {
	if remoteKube == nil {
		return nil
	}
	return []string{remoteKube.Dir}
}

// remoteNamespace creates a namespace on the remote cluster.
func remoteNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(6)}}
	require.NoError(t, remoteK8s.Create(context.Background(), ns))
	return ns.Name
}

// remoteEnvironment creates, in tenant, a credentials Secret named secret with
// a kubeconfig for the remote cluster authenticating with token, and a
// ManagedEnvironment named name using it (mut may change it before creation).
func remoteEnvironment(t *testing.T, tenant, name, secret, token string, mut func(*v1.GitOpsDeploymentManagedEnvironment)) *v1.GitOpsDeploymentManagedEnvironment {
	t.Helper()
	r := remote(t)
	kc, err := r.KubeconfigFor(token)
	require.NoError(t, err)
	require.NoError(t, k8s.Create(context.Background(),
		credentialsSecret(tenant, secret, v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
	env := managedEnvironment(tenant, name, secret)
	env.Spec.APIURL = r.URL
	if mut != nil {
		mut(env)
	}
	require.NoError(t, k8s.Create(context.Background(), env))
	return env
}

// waitEnvironment polls the ManagedEnvironment until ok holds, and returns it.
func waitEnvironment(t *testing.T, env *v1.GitOpsDeploymentManagedEnvironment, what string, ok func(client.Object) bool) *v1.GitOpsDeploymentManagedEnvironment {
	t.Helper()
	return stack.WaitFor(t, k8s, env, deployWait, "became "+what, func(me *v1.GitOpsDeploymentManagedEnvironment) bool { return ok(me) })
}

func connected(obj client.Object) bool {
	env := obj.(*v1.GitOpsDeploymentManagedEnvironment)
	c := meta.FindStatusCondition(env.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1.ManagedEnvironmentReasonSucceeded && c.ObservedGeneration == env.Generation
}

// clusterSecrets lists the Argo CD Secrets written for the environment.
func clusterSecrets(t *testing.T, env *v1.GitOpsDeploymentManagedEnvironment) []corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	require.NoError(t, k8s.List(context.Background(), &list, client.InNamespace(argo.Namespace),
		client.MatchingLabels{ownership.LabelOwnerUID: string(env.UID)}))
	return list.Items
}

// clusterConfig decodes a cluster Secret's config.
func clusterConfig(t *testing.T, s *corev1.Secret) argov1alpha1.ClusterConfig {
	t.Helper()
	var cfg argov1alpha1.ClusterConfig
	require.NoError(t, json.Unmarshal(s.Data["config"], &cfg))
	return cfg
}

// remoteOwned counts, per kind, the objects on the remote cluster that carry
// the environment's owner label.
func remoteOwned(t *testing.T, env *v1.GitOpsDeploymentManagedEnvironment) map[string]int {
	t.Helper()
	ctx := context.Background()
	sel := client.MatchingLabels{ownership.LabelOwnerUID: string(env.UID)}
	lists := map[string]client.ObjectList{
		"ServiceAccount":     &corev1.ServiceAccountList{},
		"Secret":             &corev1.SecretList{},
		"ClusterRole":        &rbacv1.ClusterRoleList{},
		"ClusterRoleBinding": &rbacv1.ClusterRoleBindingList{},
		"Role":               &rbacv1.RoleList{},
		"RoleBinding":        &rbacv1.RoleBindingList{},
	}
	out := map[string]int{}
	for kind, list := range lists {
		require.NoError(t, remoteK8s.List(ctx, list, sel))
		if n := meta.LenList(list); n > 0 {
			out[kind] = n
		}
	}
	return out
}

func getRemoteConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	return cm, remoteK8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm)
}

func toEnvironment(env, ns string) func(*v1.GitOpsDeployment) {
	return func(gd *v1.GitOpsDeployment) {
		gd.Spec.Destination.Environment = env
		gd.Spec.Destination.Namespace = ns
	}
}

// (a) A GitOpsDeployment whose destination is a ManagedEnvironment deploys to
// that cluster, not to the local one, and is deleted from it with cascade.
func TestManagedEnvironmentDeploysToRemoteCluster(t *testing.T) {
	ctx := context.Background()
	tenant := tenantNamespace(t)
	env := remoteEnvironment(t, tenant, "staging", "staging-creds", remoteAdminTokenFor(t), nil)
	target := remoteNamespace(t, "target")
	env = waitEnvironment(t, env, "connected", connected)
	kubectlWaitReady(t, tenant, resManagedEnv, env.Name)

	// The cluster Secret Argo CD reads: the tenant's project, the environment's
	// own server URL, the user's token.
	secrets := clusterSecrets(t, env)
	require.Len(t, secrets, 1)
	s := secrets[0]
	assert.Equal(t, argocd.ClusterSecretName(string(env.UID)), s.Name)
	assert.Equal(t, argocd.SecretTypeCluster, s.Labels[argocd.LabelSecretType])
	assert.Equal(t, argocd.ClusterServer(remoteKube.URL, string(env.UID)), string(s.Data["server"]))
	tenantNS := &corev1.Namespace{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Name: tenant}, tenantNS))
	assert.Equal(t, argocd.ProjectName(string(tenantNS.UID)), string(s.Data["project"]))
	assert.Equal(t, remoteAdminToken, clusterConfig(t, &s).BearerToken)
	assert.Empty(t, s.Annotations[argocd.AnnotationServiceAccount])

	repo, sha := gitRepo(t, map[string]string{
		"app/configmap.yaml": configMap("settings", "remote"),
		"app/service.yaml":   service,
	})
	gd := deploy(t, tenant, "to-staging", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, func(gd *v1.GitOpsDeployment) {
		toEnvironment("staging", target)(gd)
		gd.Finalizers = []string{v1.FinalizerResourcesFinalizer}
	})
	got := waitStatus(t, gd, "Synced/Healthy on the remote cluster", syncedHealthyAt(sha))
	assert.Equal(t, "staging", got.Status.ReconciledState.Destination.Name)
	assert.Equal(t, target, got.Status.ReconciledState.Destination.Namespace)
	assert.Len(t, got.Status.Resources, 2)

	cm, err := getRemoteConfigMap(target, "settings")
	require.NoError(t, err, "the ConfigMap is not on the remote cluster")
	assert.Equal(t, "remote", cm.Data["value"])
	require.NoError(t, remoteK8s.Get(ctx, types.NamespacedName{Namespace: target, Name: "guestbook"}, &corev1.Service{}))
	// Nothing landed on the local cluster.
	_, err = getConfigMap(target, "settings")
	assert.True(t, apierrors.IsNotFound(err), "the ConfigMap is on the local cluster: %v", err)
	_, err = getConfigMap(tenant, "settings")
	assert.True(t, apierrors.IsNotFound(err), "the ConfigMap is in the tenant namespace: %v", err)

	// Deleting with the finalizer removes what was deployed on the remote cluster.
	require.NoError(t, k8s.Delete(ctx, gd))
	waitDeleted(t, gd)
	_, err = getRemoteConfigMap(target, "settings")
	assert.True(t, apierrors.IsNotFound(err), "the ConfigMap stayed on the remote cluster: %v", err)
}

// (b) createNewServiceAccount: the sidecar installs a ServiceAccount with
// cluster-wide rights on the remote cluster, Argo CD deploys with its token,
// and deleting the environment removes all of it.
func TestManagedEnvironmentCreateNewServiceAccount(t *testing.T) {
	ctx := context.Background()
	tenant := tenantNamespace(t)
	env := remoteEnvironment(t, tenant, "prod", "prod-creds", remoteAdminTokenFor(t),
		func(env *v1.GitOpsDeploymentManagedEnvironment) { env.Spec.CreateNewServiceAccount = true })
	target := remoteNamespace(t, "target")
	env = waitEnvironment(t, env, "connected", connected)
	assert.Contains(t, env.Finalizers, v1.FinalizerManagedEnvironment)

	secrets := clusterSecrets(t, env)
	require.Len(t, secrets, 1)
	saRef := secrets[0].Annotations[argocd.AnnotationServiceAccount]
	require.NotEmpty(t, saRef, "the cluster Secret does not name the ServiceAccount")
	saNS, saName, _ := strings.Cut(saRef, "/")
	cfg := clusterConfig(t, &secrets[0])
	assert.NotEqual(t, remoteAdminToken, cfg.BearerToken, "Argo CD got the user's token, not the ServiceAccount's")
	require.NotEmpty(t, cfg.BearerToken)

	// On the remote cluster: the ServiceAccount, its token Secret, a ClusterRole
	// and a ClusterRoleBinding to it; no namespaced roles.
	sa := &corev1.ServiceAccount{}
	require.NoError(t, remoteK8s.Get(ctx, types.NamespacedName{Namespace: saNS, Name: saName}, sa))
	assert.Equal(t, map[string]int{"ServiceAccount": 1, "Secret": 1, "ClusterRole": 1, "ClusterRoleBinding": 1}, remoteOwned(t, env))
	var crbs rbacv1.ClusterRoleBindingList
	require.NoError(t, remoteK8s.List(ctx, &crbs, client.MatchingLabels{ownership.LabelOwnerUID: string(env.UID)}))
	require.Len(t, crbs.Items, 1)
	assert.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: saNS}}, crbs.Items[0].Subjects)
	token := &corev1.Secret{}
	require.NoError(t, remoteK8s.Get(ctx, types.NamespacedName{Namespace: saNS, Name: strings.Replace(saName, "argocd-manager-", "argocd-manager-token-", 1)}, token))
	assert.Equal(t, cfg.BearerToken, string(token.Data[corev1.ServiceAccountTokenKey]))

	// Argo CD deploys with the ServiceAccount's token.
	repo, sha := gitRepo(t, map[string]string{"app/configmap.yaml": configMap("with-sa", "x")})
	gd := deploy(t, tenant, "with-sa", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, toEnvironment("prod", target))
	waitStatus(t, gd, "Synced/Healthy with the ServiceAccount's token", syncedHealthyAt(sha))
	_, err := getRemoteConfigMap(target, "with-sa")
	require.NoError(t, err)

	// Deleting the environment removes the ServiceAccount, its roles and token
	// from the remote cluster, and the cluster Secret from Argo CD.
	require.NoError(t, k8s.Delete(ctx, gd))
	waitDeleted(t, gd)
	require.NoError(t, k8s.Delete(ctx, env))
	waitDeleted(t, env)
	assert.Empty(t, remoteOwned(t, env), "left on the remote cluster")
	err = remoteK8s.Get(ctx, types.NamespacedName{Namespace: saNS, Name: saName}, &corev1.ServiceAccount{})
	assert.True(t, apierrors.IsNotFound(err), "ServiceAccount: %v", err)
	assert.Empty(t, clusterSecrets(t, env), "the cluster Secret outlived its environment")
	// What was deployed is not the environment's to remove.
	_, err = getRemoteConfigMap(target, "with-sa")
	assert.NoError(t, err)
}

// (c) An environment limited to namespaces: the ServiceAccount gets Roles in
// those namespaces only; namespaced resources there deploy, while a manifest
// with a cluster-scoped resource, or one in another namespace, is refused by
// Argo CD and never applied.
func TestManagedEnvironmentNamespacesRefuseClusterScoped(t *testing.T) {
	ctx := context.Background()
	remote(t)
	tenant := tenantNamespace(t)
	allowed := remoteNamespace(t, "allowed")
	other := remoteNamespace(t, "other")
	env := remoteEnvironment(t, tenant, "limited", "limited-creds", remoteAdminToken, func(env *v1.GitOpsDeploymentManagedEnvironment) {
		env.Spec.CreateNewServiceAccount = true
		env.Spec.Namespaces = []string{allowed}
	})
	env = waitEnvironment(t, env, "connected", connected)
	assert.Equal(t, map[string]int{"ServiceAccount": 1, "Secret": 1, "Role": 1, "RoleBinding": 1}, remoteOwned(t, env))
	var roles rbacv1.RoleList
	require.NoError(t, remoteK8s.List(ctx, &roles, client.MatchingLabels{ownership.LabelOwnerUID: string(env.UID)}))
	require.Len(t, roles.Items, 1)
	assert.Equal(t, allowed, roles.Items[0].Namespace)
	secrets := clusterSecrets(t, env)
	require.Len(t, secrets, 1)
	assert.Equal(t, allowed, string(secrets[0].Data["namespaces"]))
	assert.Equal(t, "false", string(secrets[0].Data["clusterResources"]))

	// Namespaced resources in the allowed namespace deploy.
	repo, sha := gitRepo(t, map[string]string{
		"good/configmap.yaml":           configMap("inside", "x"),
		"cluster-scoped/configmap.yaml": configMap("alongside", "x"),
		"cluster-scoped/role.yaml":      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: planted-" + allowed + "\nrules: []\n",
		"outside/configmap.yaml":        strings.Replace(configMap("elsewhere", "x"), "metadata:\n", "metadata:\n  namespace: "+other+"\n", 1),
	})
	good := deploy(t, tenant, "good", repo.URL, "good", v1.GitOpsDeploymentSpecTypeAutomated, toEnvironment("limited", allowed))
	waitStatus(t, good, "Synced/Healthy in the allowed namespace", syncedHealthyAt(sha))
	_, err := getRemoteConfigMap(allowed, "inside")
	require.NoError(t, err)

	// A cluster-scoped resource is refused, and so is a resource in a namespace
	// outside the list; neither is ever created.
	refused := func(gd *v1.GitOpsDeployment, what string) *v1.GitOpsDeployment {
		t.Helper()
		var last string
		got := waitStatus(t, gd, "refused by Argo CD because of "+what, func(gd *v1.GitOpsDeployment) bool {
			if gd.Status.Sync.Status == "" || gd.Status.Sync.Status == v1.SyncStatusCodeSynced {
				return false
			}
			if op := gd.Status.OperationState; op != nil && (op.Phase == v1.OperationFailed || op.Phase == v1.OperationError) &&
				strings.Contains(op.Message+fmt.Sprint(op.SyncResult), what) {
				last = op.Message
				return true
			}
			for _, c := range gd.Status.Conditions {
				if c.Status == v1.GitOpsConditionStatusTrue && c.Type != v1.GitOpsDeploymentConditionErrorOccurred && strings.Contains(c.Message, what) {
					last = c.Message
					return true
				}
			}
			return false
		})
		t.Logf("%s/%s refused: sync %s: %s", gd.Namespace, gd.Name, got.Status.Sync.Status, last)
		return got
	}
	clusterScoped := deploy(t, tenant, "cluster-scoped", repo.URL, "cluster-scoped", v1.GitOpsDeploymentSpecTypeAutomated, toEnvironment("limited", allowed))
	refused(clusterScoped, "ClusterRole")
	outside := deploy(t, tenant, "outside", repo.URL, "outside", v1.GitOpsDeploymentSpecTypeAutomated, toEnvironment("limited", allowed))
	refused(outside, other)
	require.Never(t, func() bool {
		crErr := remoteK8s.Get(ctx, types.NamespacedName{Name: "planted-" + allowed}, &rbacv1.ClusterRole{})
		_, cmErr := getRemoteConfigMap(other, "elsewhere")
		return crErr == nil || cmErr == nil
	}, 10*time.Second, poll, "a cluster-scoped resource or one outside the environment's namespaces was created")
	// Argo CD refuses the whole sync: the namespaced resource beside the
	// ClusterRole is not applied either.
	_, err = getRemoteConfigMap(allowed, "alongside")
	assert.True(t, apierrors.IsNotFound(err), "alongside: %v", err)

	// Deleting the environment removes the Role and RoleBinding too.
	for _, gd := range []*v1.GitOpsDeployment{good, clusterScoped, outside} {
		require.NoError(t, k8s.Delete(ctx, gd))
		waitDeleted(t, gd)
	}
	require.NoError(t, k8s.Delete(ctx, env))
	waitDeleted(t, env)
	assert.Empty(t, remoteOwned(t, env), "left on the remote cluster")
}

// (d) Credentials that do not work give the environment a False condition and
// Argo CD no cluster Secret; a deployment using it gets ErrorOccurred and no
// Application.
func TestManagedEnvironmentWrongCredentials(t *testing.T) {
	remote(t)
	tenant := tenantNamespace(t)
	cases := []struct {
		name, token, reason, msg string
		createSA                 bool
	}{
		{"token the remote cluster rejects", canary("remote-rejected-token"), v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, "401", false},
		{"token without rights", remotePowerlessToken, v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, "does not have permission", false},
		{"token without rights to install a ServiceAccount", remotePowerlessToken, v1.ManagedEnvironmentReasonUnableToInstallServiceAccount, "forbidden", true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("broken-%d", i)
			env := remoteEnvironment(t, tenant, name, name+"-creds", tc.token, func(env *v1.GitOpsDeploymentManagedEnvironment) {
				env.Spec.CreateNewServiceAccount = tc.createSA
			})
			env = waitEnvironment(t, env, tc.reason, connectionRefused(tc.reason, tc.msg))
			assert.Empty(t, clusterSecrets(t, env), "a cluster Secret was written for credentials that do not work")

			gd := deploy(t, tenant, name, "https://git.example.com/tenant/apps.git", "app", v1.GitOpsDeploymentSpecTypeAutomated, toEnvironment(name, "default"))
			waitStatus(t, gd, "ErrorOccurred", func(gd *v1.GitOpsDeployment) bool { return errorOccurred(v1.ErrMsgManagedEnvUnresolved)(gd) })
			var apps argov1alpha1.ApplicationList
			require.NoError(t, k8s.List(context.Background(), &apps, client.InNamespace(argo.Namespace),
				client.MatchingLabels{ownership.LabelOwnerUID: string(gd.UID)}))
			assert.Empty(t, apps.Items, "an Application was written for a broken environment")
			assert.Empty(t, clusterSecrets(t, env))
			if tc.createSA {
				assert.Empty(t, remoteOwned(t, env), "the powerless token installed something")
			}
		})
	}

	// Working credentials replaced by broken ones: the cluster Secret goes.
	t.Run("credentials that stop working", func(t *testing.T) {
		ctx := context.Background()
		env := remoteEnvironment(t, tenant, "switched", "switched-good", remoteAdminToken, nil)
		env = waitEnvironment(t, env, "connected", connected)
		require.Len(t, clusterSecrets(t, env), 1)
		kc, err := remoteKube.KubeconfigFor(canary("remote-revoked-token"))
		require.NoError(t, err)
		require.NoError(t, k8s.Create(ctx, credentialsSecret(tenant, "switched-bad", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(env), env))
		patch := client.MergeFrom(env.DeepCopy()) // the sidecar writes the status meanwhile
		env.Spec.ClusterCredentialsSecret = "switched-bad"
		require.NoError(t, k8s.Patch(ctx, env, patch))
		waitEnvironment(t, env, "refused", connectionRefused(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, "401"))
		require.Eventually(t, func() bool { return len(clusterSecrets(t, env)) == 0 }, deployWait, poll,
			"the cluster Secret of an environment whose credentials stopped working was kept")
	})
}

// remoteAdminTokenFor starts the remote cluster if needed and returns its admin token.
func remoteAdminTokenFor(t *testing.T) string {
	t.Helper()
	remote(t)
	return remoteAdminToken
}
