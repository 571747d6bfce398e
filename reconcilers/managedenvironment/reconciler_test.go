//go:build !unit

package managedenvironment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	wait = 30 * time.Second
	tick = stack.Tick
	// watched bounds the wait for a change of a watched Secret to be acted
	// on: well below the 30 s retry, so only the watch can meet it.
	watched = 10 * time.Second
)

type envT = v1.GitOpsDeploymentManagedEnvironment

func tenant(t *testing.T) string { return stack.Tenant(t, k8s).Name }

// remoteKubeconfig is a kubeconfig of the remote cluster for token (server URL,
// CA data, token), changed by mutate.
func remoteKubeconfig(t *testing.T, token string, mutate func(cfg *clientcmdapi.Config)) []byte {
	t.Helper()
	b, err := remote(t).KubeconfigFor(token)
	require.NoError(t, err)
	if mutate == nil {
		return b
	}
	cfg, err := clientcmd.Load(b)
	require.NoError(t, err)
	mutate(cfg)
	b, err = clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

// onlyUser returns the single user of a kubeconfig made by remoteKubeconfig.
func onlyUser(cfg *clientcmdapi.Config) *clientcmdapi.AuthInfo {
	for _, u := range cfg.AuthInfos {
		return u
	}
	return nil
}

func onlyCluster(cfg *clientcmdapi.Config) *clientcmdapi.Cluster {
	for _, c := range cfg.Clusters {
		return c
	}
	return nil
}

func credentialsSecret(t *testing.T, ns, name string, kubeconfig []byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       v1.ManagedEnvironmentSecretType,
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}
	require.NoError(t, k8s.Create(context.Background(), s))
	return s
}

func newEnv(t *testing.T, ns, name, secret string, mutate func(*envT)) *envT {
	t.Helper()
	env := &envT{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: remote(t).URL, ClusterCredentialsSecret: secret},
	}
	if mutate != nil {
		mutate(env)
	}
	require.NoError(t, k8s.Create(context.Background(), env))
	return env
}

// waitCondition waits for ConnectionInitializationSucceeded with the status and
// reason, and a message containing msgPart.
func waitCondition(t *testing.T, env *envT, status metav1.ConditionStatus, reason, msgPart string) *envT {
	t.Helper()
	return waitConditionWithin(t, wait, env, status, reason, msgPart)
}

// waitConditionWithin is waitCondition with its own bound.
func waitConditionWithin(t *testing.T, within time.Duration, env *envT, status metav1.ConditionStatus, reason, msgPart string) *envT {
	t.Helper()
	got := &envT{}
	if !assert.Eventually(t, func() bool {
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(env), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
		return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, msgPart) && c.ObservedGeneration == got.Generation
	}, within, tick) {
		t.Fatalf("ManagedEnvironment %s/%s never got %s/%s %q within %s; last status: %+v", env.Namespace, env.Name, status, reason, msgPart, within, got.Status)
	}
	return got
}

// waitReady waits for env's Ready condition with status and reason, at its
// current generation.
func waitReady(t *testing.T, env *envT, status metav1.ConditionStatus, reason string) {
	t.Helper()
	got := &envT{}
	if !assert.Eventually(t, func() bool {
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(env), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.Conditions, "Ready")
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == got.Generation && got.Status.ObservedGeneration == got.Generation
	}, wait, tick) {
		t.Fatalf("ManagedEnvironment %s/%s never got Ready %s/%s; last status: %+v", env.Namespace, env.Name, status, reason, got.Status)
	}
}

func clusterSecretKey(env *envT) types.NamespacedName {
	return types.NamespacedName{Namespace: argoNS, Name: argocd.ClusterSecretName(string(env.UID))}
}

func waitClusterSecret(t *testing.T, env *envT, cond func(*corev1.Secret) bool) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), clusterSecretKey(env), s) == nil && cond(s)
	}, wait, tick, "cluster Secret of %s/%s never reached the expected state", env.Namespace, env.Name)
	return s
}

func clusterConfig(t *testing.T, s *corev1.Secret) argov1alpha1.ClusterConfig {
	t.Helper()
	var cfg argov1alpha1.ClusterConfig
	require.NoError(t, json.Unmarshal(s.Data["config"], &cfg))
	return cfg
}

// assertNoClusterSecret checks, for a moment, that no cluster Secret exists for env.
func assertNoClusterSecret(t *testing.T, env *envT) {
	t.Helper()
	require.Never(t, func() bool {
		var list corev1.SecretList
		require.NoError(t, k8s.List(context.Background(), &list, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelOwnerUID: string(env.UID)}))
		return len(list.Items) > 0
	}, time.Second, 100*time.Millisecond, "a cluster Secret exists for the failing environment %s", env.Name)
}

func waitGone(t *testing.T, c client.Client, obj client.Object) { stack.WaitGone(t, c, obj, wait) }

func waitWarningEvent(t *testing.T, env *envT, reason, msgPart string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var events corev1.EventList
		require.NoError(t, k8s.List(context.Background(), &events, client.InNamespace(env.Namespace)))
		for _, e := range events.Items {
			if e.InvolvedObject.UID == env.UID && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, msgPart) {
				return true
			}
		}
		return false
	}, wait, tick, "no Warning Event %s %q for %s", reason, msgPart, env.Name)
}

// nudge makes the sidecar look at env again at once (tenant Secrets are not
// watched; without it the next look is after the retry interval).
func nudge(t *testing.T, env *envT) {
	t.Helper()
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	if env.Annotations == nil {
		env.Annotations = map[string]string{}
	}
	env.Annotations["nudge"] = rand.String(6)
	require.NoError(t, k8s.Update(context.Background(), env))
}

func nsUID(t *testing.T, ns string) types.UID {
	t.Helper()
	obj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, obj))
	return obj.UID
}

func TestConnectsWithToken(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	env := newEnv(t, ns, "staging", "creds", nil)

	got := waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	waitReady(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded)
	env.UID = got.UID
	assert.Contains(t, got.Finalizers, v1.FinalizerManagedEnvironment)
	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })
	assert.Equal(t, "cluster", s.Labels["argocd.argoproj.io/secret-type"])
	assert.True(t, ownership.IsOwnedBy(s.Labels, ownership.KindManagedEnvironment, string(env.UID)))
	assert.Equal(t, rk.URL+"?managedEnvironment="+string(env.UID), string(s.Data["server"]))
	assert.Equal(t, argocd.ProjectName(string(nsUID(t, ns))), string(s.Data["project"]))
	assert.Equal(t, "gitops-service:"+ns+"/staging", string(s.Data["name"]))
	assert.Equal(t, "true", s.Labels[argocd.LabelTenantCluster])
	assert.NotContains(t, s.Data, "namespaces")
	cfg := clusterConfig(t, s)
	assert.Equal(t, rk.AdminToken, cfg.BearerToken)
	assert.Equal(t, rk.CAData, cfg.TLSClientConfig.CAData)
	assert.False(t, cfg.TLSClientConfig.Insecure)
	assert.Empty(t, s.Annotations[argocd.AnnotationServiceAccount])

	// The condition never carries the token.
	c := meta.FindStatusCondition(got.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
	assert.NotContains(t, c.Message, rk.AdminToken)

	// A no-op look writes nothing.
	secretRV := s.ResourceVersion
	nudge(t, env)
	nudgedRV := env.ResourceVersion
	time.Sleep(2 * time.Second)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s))
	assert.Equal(t, nudgedRV, env.ResourceVersion, "a no-op reconcile wrote the ManagedEnvironment")
	assert.Equal(t, secretRV, s.ResourceVersion, "a no-op reconcile wrote the cluster Secret")

	// Someone editing our cluster Secret sees it put back.
	s.Data["server"] = []byte("https://evil.example.com")
	require.NoError(t, k8s.Update(context.Background(), s))
	waitClusterSecret(t, env, func(s *corev1.Secret) bool {
		return string(s.Data["server"]) == rk.URL+"?managedEnvironment="+string(env.UID)
	})
	// ... and deleted ones recreated.
	require.NoError(t, k8s.Delete(context.Background(), s))
	waitClusterSecret(t, env, func(n *corev1.Secret) bool { return n.UID != s.UID })

	// Deleting the environment removes its cluster Secret, then the environment.
	require.NoError(t, k8s.Delete(context.Background(), env))
	waitGone(t, k8s, env)
	waitGone(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ClusterSecretName(string(env.UID))}})
}

func TestInsecureSkipTLSVerify(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	noCA := remoteKubeconfig(t, rk.AdminToken, func(cfg *clientcmdapi.Config) {
		onlyCluster(cfg).CertificateAuthorityData = nil
	})
	credentialsSecret(t, ns, "creds", noCA)
	env := newEnv(t, ns, "no-ca", "creds", nil)
	waitCondition(t, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
		"Certificate signed by unknown authority. Note that the '.spec.allowInsecureSkipTLSVerify' field can be used to ignore this error.")
	assertNoClusterSecret(t, env)

	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	env.Spec.AllowInsecureSkipTLSVerify = true
	require.NoError(t, k8s.Update(context.Background(), env))
	waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })
	cfg := clusterConfig(t, s)
	assert.True(t, cfg.TLSClientConfig.Insecure)
	assert.Empty(t, cfg.TLSClientConfig.CAData)
}

// TestBadInputGivesConditionAndNoClusterSecret: every bad input ends in a False
// condition with the original reason, a Warning Event and no cluster Secret.
func TestBadInputGivesConditionAndNoClusterSecret(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	neighbour := tenant(t)
	valid := remoteKubeconfig(t, rk.AdminToken, nil)
	// A perfectly good Secret with the referenced name, in another namespace.
	credentialsSecret(t, neighbour, "neighbours-creds", valid)

	type tc struct {
		name   string
		secret func(name string) // creates the credentials Secret (or not)
		mutate func(*envT)
		reason string
		msg    string
	}
	withKubeconfig := func(kc []byte) func(string) {
		return func(name string) { credentialsSecret(t, ns, name, kc) }
	}
	cases := []tc{
		{name: "missing secret", secret: func(string) {}, reason: v1.ManagedEnvironmentReasonSecretNotFound, msg: "could not be retrieved"},
		{name: "secret of another namespace", secret: func(string) {}, mutate: func(e *envT) { e.Spec.ClusterCredentialsSecret = "neighbours-creds" },
			reason: v1.ManagedEnvironmentReasonSecretNotFound, msg: "'neighbours-creds'"},
		{name: "wrong type", secret: func(name string) {
			require.NoError(t, k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Data: map[string][]byte{"kubeconfig": valid}}))
		}, reason: v1.ManagedEnvironmentReasonInvalidSecretType, msg: "invalid secret type: Opaque"},
		{name: "missing key", secret: func(name string) {
			require.NoError(t, k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Type: v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"config": valid}}))
		}, reason: v1.ManagedEnvironmentReasonMissingKubeConfigField, msg: "missing kubeconfig field in Secret"},
		{name: "unparsable", secret: withKubeconfig([]byte("badbad")), reason: v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, msg: "unable to parse kubeconfig data"},
		{name: "no cluster with the API URL", secret: withKubeconfig(valid), mutate: func(e *envT) { e.Spec.APIURL = "https://127.0.0.1:1" },
			reason: v1.ManagedEnvironmentReasonUnableToLocateContext, msg: "did not have a cluster entry that matched the API URL"},
		{name: "exec", secret: withKubeconfig(remoteKubeconfig(t, "", func(cfg *clientcmdapi.Config) {
			onlyUser(cfg).Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch /tmp/pwned"}}
		})), reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "exec credential plugin"},
		{name: "auth-provider", secret: withKubeconfig(remoteKubeconfig(t, rk.AdminToken, func(cfg *clientcmdapi.Config) {
			onlyUser(cfg).AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		})), reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "auth-provider"},
		{name: "client certificate", secret: withKubeconfig(remoteKubeconfig(t, "", func(cfg *clientcmdapi.Config) {
			u := onlyUser(cfg)
			u.ClientCertificateData, u.ClientKeyData = []byte("cert"), []byte("key")
		})), reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "client certificates are not supported"},
		{name: "token file", secret: withKubeconfig(remoteKubeconfig(t, "", func(cfg *clientcmdapi.Config) {
			onlyUser(cfg).TokenFile = "/etc/hostname"
		})), reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "tokenFile"},
		{name: "CA file", secret: withKubeconfig(remoteKubeconfig(t, rk.AdminToken, func(cfg *clientcmdapi.Config) {
			onlyCluster(cfg).CertificateAuthority = "/etc/ssl/certs/ca-certificates.crt"
		})), reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "certificate-authority"},
		{name: "http API URL", secret: withKubeconfig(valid), mutate: func(e *envT) { e.Spec.APIURL = strings.Replace(rk.URL, "https://", "http://", 1) },
			reason: v1.ManagedEnvironmentReasonUnsupportedAPIURL, msg: "https://"},
		{name: "API URL with a query", secret: withKubeconfig(valid), mutate: func(e *envT) { e.Spec.APIURL = rk.URL + "?managedEnvironment=other" },
			reason: v1.ManagedEnvironmentReasonUnsupportedAPIURL, msg: "must not have ? or & values"},
		{name: "bad token", secret: withKubeconfig(remoteKubeconfig(t, "not-a-token-"+rand.String(8), nil)),
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, msg: "401 Unauthorized"},
		{name: "token without rights", secret: withKubeconfig(remoteKubeconfig(t, powerlessToken, nil)),
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, msg: "Provided service account does not have permission to access resources in the cluster"},
		{name: "namespace missing on the cluster", secret: withKubeconfig(valid), mutate: func(e *envT) { e.Spec.Namespaces = []string{"no-such-namespace"} },
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, msg: "'no-such-namespace' of .spec.namespaces does not exist"},
		// Issue 13 defect 7: only the first namespace was checked.
		{name: "second namespace missing on the cluster", secret: withKubeconfig(valid), mutate: func(e *envT) { e.Spec.Namespaces = []string{"default", "no-such-namespace-2"} },
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, msg: "'no-such-namespace-2' of .spec.namespaces does not exist"},
		{name: "invalid namespace list", secret: withKubeconfig(valid), mutate: func(e *envT) { e.Spec.Namespaces = []string{"team-a", "*"} },
			reason: v1.ManagedEnvironmentReasonInvalidNamespaceList, msg: "invalid namespace in namespaces list"},
		{name: "nothing listening", secret: withKubeconfig(remoteKubeconfig(t, rk.AdminToken, func(cfg *clientcmdapi.Config) {
			onlyCluster(cfg).Server = "https://127.0.0.1:1"
		})), mutate: func(e *envT) { e.Spec.APIURL = "https://127.0.0.1:1" },
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, msg: "connection refused"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			secret := fmt.Sprintf("creds-%d", i)
			c.secret(secret)
			env := newEnv(t, ns, fmt.Sprintf("bad-%d", i), secret, c.mutate)
			got := waitCondition(t, env, metav1.ConditionFalse, c.reason, c.msg)
			cond := meta.FindStatusCondition(got.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
			assert.True(t, strings.HasSuffix(cond.Message, "Argo CD has no cluster for this environment until this is fixed."), cond.Message)
			assert.NotContains(t, cond.Message, rk.AdminToken)
			assertNoClusterSecret(t, got)
			waitWarningEvent(t, got, c.reason, c.msg)
			assert.NotContains(t, got.Finalizers, v1.FinalizerManagedEnvironment, "nothing was written, so nothing holds the deletion")
		})
	}
}

// TestFixingClearsTheCondition: a fix is picked up, and an environment that
// breaks later loses its cluster Secret.
func TestFixingClearsTheCondition(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	env := newEnv(t, ns, "later", "creds", nil)
	waitCondition(t, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonSecretNotFound, "")
	waitReady(t, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonSecretNotFound)

	// The Secret is watched: once created it is used, well before the retry.
	secret := credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	waitConditionWithin(t, watched, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })

	// The token is replaced by one that does not work: the condition says so
	// (now, not at the 5-minute recheck) and the cluster Secret goes.
	secret.Data["kubeconfig"] = remoteKubeconfig(t, "revoked-"+rand.String(8), nil)
	require.NoError(t, k8s.Update(context.Background(), secret))
	waitConditionWithin(t, watched, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, "Argo CD has no cluster for this environment")
	waitGone(t, k8s, s)

	// Fixed again.
	secret.Data["kubeconfig"] = remoteKubeconfig(t, rk.AdminToken, nil)
	require.NoError(t, k8s.Update(context.Background(), secret))
	got := waitConditionWithin(t, watched, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	assert.Empty(t, meta.FindStatusCondition(got.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded).Message)
	waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })
}

func remoteObjects(uid types.UID, namespaces ...string) (sa *corev1.ServiceAccount, token *corev1.Secret, cr *rbacv1.ClusterRole, crb *rbacv1.ClusterRoleBinding, roles []*rbacv1.Role, bindings []*rbacv1.RoleBinding) {
	sa = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "argocd-manager-" + string(uid)}}
	token = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "argocd-manager-token-" + string(uid)}}
	cr = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "argocd-manager-cluster-role-" + string(uid)}}
	crb = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "argocd-manager-cluster-role-binding-" + string(uid)}}
	for _, ns := range namespaces {
		roles = append(roles, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "argocd-manager-role-" + string(uid)}})
		bindings = append(bindings, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "argocd-manager-role-binding-" + string(uid)}})
	}
	return
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := remoteK8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func remoteNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "target-" + rand.String(6)}}
	require.NoError(t, remoteK8s.Create(context.Background(), ns))
	return ns.Name
}

func TestCreateNewServiceAccount(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	env := newEnv(t, ns, "with-sa", "creds", func(e *envT) { e.Spec.CreateNewServiceAccount = true })
	got := waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	waitReady(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded)
	env.UID = got.UID

	sa, token, cr, crb, _, _ := remoteObjects(env.UID)
	for _, obj := range []client.Object{sa, token, cr, crb} {
		require.True(t, exists(t, obj), "%T %s missing on the remote cluster", obj, obj.GetName())
		assert.True(t, ownership.IsOwnedBy(obj.GetLabels(), ownership.KindManagedEnvironment, string(env.UID)), "%T not labelled", obj)
	}
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
	}, cr.Rules)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: "kube-system"}}, crb.Subjects)
	assert.Equal(t, cr.Name, crb.RoleRef.Name)

	// Argo CD gets the ServiceAccount's token, not the user's.
	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })
	cfg := clusterConfig(t, s)
	assert.NotEqual(t, rk.AdminToken, cfg.BearerToken)
	assert.Equal(t, string(token.Data["token"]), cfg.BearerToken)
	assert.Equal(t, "kube-system/"+sa.Name, s.Annotations[argocd.AnnotationServiceAccount])
	saClient, err := client.New(rk.TokenConfig(cfg.BearerToken), client.Options{})
	require.NoError(t, err)
	require.NoError(t, saClient.List(context.Background(), &corev1.NamespaceList{}), "the ServiceAccount's token works with cluster-wide rights")

	// Deleting the environment removes everything from the remote cluster.
	require.NoError(t, k8s.Delete(context.Background(), env))
	waitGone(t, k8s, env)
	for _, obj := range []client.Object{sa, token, cr, crb} {
		waitGone(t, remoteK8s, obj)
	}
	waitGone(t, k8s, s)
}

func TestCreateNewServiceAccountWithNamespaces(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	a, b := remoteNamespace(t), remoteNamespace(t)
	credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	env := newEnv(t, ns, "namespaced-sa", "creds", func(e *envT) {
		e.Spec.CreateNewServiceAccount = true
		e.Spec.Namespaces = []string{b, a}
	})
	got := waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	waitReady(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded)
	env.UID = got.UID
	sa, token, cr, crb, roles, bindings := remoteObjects(env.UID, a, b)
	require.True(t, exists(t, sa))
	require.True(t, exists(t, token))
	assert.False(t, exists(t, cr), "no ClusterRole for a namespaced environment")
	assert.False(t, exists(t, crb), "no ClusterRoleBinding for a namespaced environment")
	for i := range roles {
		require.True(t, exists(t, roles[i]), "Role in %s", roles[i].Namespace)
		require.True(t, exists(t, bindings[i]), "RoleBinding in %s", bindings[i].Namespace)
		assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: "kube-system"}}, bindings[i].Subjects)
	}
	var allRoles rbacv1.RoleList
	require.NoError(t, remoteK8s.List(context.Background(), &allRoles, client.MatchingLabels{ownership.LabelOwnerUID: string(env.UID)}))
	assert.Len(t, allRoles.Items, 2, "Roles only in the listed namespaces")

	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })
	sorted := []string{a, b}
	sort.Strings(sorted)
	assert.Equal(t, strings.Join(sorted, ","), string(s.Data["namespaces"]))
	assert.Equal(t, "false", string(s.Data["clusterResources"]))
	// The token can work in the listed namespaces, not elsewhere.
	saClient, err := client.New(rk.TokenConfig(clusterConfig(t, s).BearerToken), client.Options{})
	require.NoError(t, err)
	require.NoError(t, saClient.List(context.Background(), &corev1.ConfigMapList{}, client.InNamespace(a)))
	assert.True(t, apierrors.IsForbidden(saClient.List(context.Background(), &corev1.ConfigMapList{}, client.InNamespace("default"))))

	// Dropping a namespace removes its Role and RoleBinding.
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	env.Spec.Namespaces = []string{b}
	require.NoError(t, k8s.Update(context.Background(), env))
	var roleA *rbacv1.Role
	for _, r := range roles {
		if r.Namespace == a {
			roleA = r
		}
	}
	waitGone(t, remoteK8s, roleA)
	waitClusterSecret(t, env, func(s *corev1.Secret) bool { return string(s.Data["namespaces"]) == b })

	// Becoming cluster-wide swaps the Roles for a ClusterRole.
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	env.Spec.Namespaces = nil
	require.NoError(t, k8s.Update(context.Background(), env))
	require.Eventually(t, func() bool { return exists(t, cr) && exists(t, crb) }, wait, tick)
	for i := range roles {
		waitGone(t, remoteK8s, roles[i])
		waitGone(t, remoteK8s, bindings[i])
	}

	require.NoError(t, k8s.Delete(context.Background(), env))
	waitGone(t, k8s, env)
	for _, obj := range []client.Object{sa, token, cr, crb} {
		waitGone(t, remoteK8s, obj)
	}
}

// TestDeletionLetsGoWithoutCredentials: when the user's credentials are gone
// (e.g. the whole namespace is being deleted), deletion does not hang.
func TestDeletionLetsGoWithoutCredentials(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	secret := credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	env := newEnv(t, ns, "orphan", "creds", func(e *envT) { e.Spec.CreateNewServiceAccount = true })
	got := waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	waitReady(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded)
	env.UID = got.UID
	require.NoError(t, k8s.Delete(context.Background(), secret))
	require.NoError(t, k8s.Delete(context.Background(), env))
	waitGone(t, k8s, env)
	waitWarningEvent(t, env, "CleanupAbandoned", "remove ServiceAccount kube-system/argocd-manager-"+string(env.UID))
	waitGone(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ClusterSecretName(string(env.UID))}})

	// Clean up what it left on the remote cluster.
	sa, token, cr, crb, _, _ := remoteObjects(env.UID)
	for _, obj := range []client.Object{crb, cr, token, sa} {
		require.NoError(t, client.IgnoreNotFound(remoteK8s.Delete(context.Background(), obj)))
	}
}

// TestNameCollisionIsNeverAdopted: a Secret in the Argo CD namespace under our
// name that we did not make is neither changed nor deleted.
func TestNameCollisionIsNeverAdopted(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	env := newEnv(t, ns, "collide", "creds", nil)
	got := waitCondition(t, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonSecretNotFound, "")
	squatter := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ClusterSecretName(string(got.UID)), Labels: map[string]string{"team": "other"}},
		StringData: map[string]string{"server": "https://elsewhere.example.com"},
	}
	require.NoError(t, k8s.Create(context.Background(), squatter))
	credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	waitConditionWithin(t, watched, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonClusterSecretNameCollision, "was not created by the GitOps Service")
	after := &corev1.Secret{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(squatter), after))
	assert.Equal(t, "https://elsewhere.example.com", string(after.Data["server"]))
	assert.Equal(t, squatter.ResourceVersion, after.ResourceVersion, "someone else's Secret was modified")

	require.NoError(t, k8s.Delete(context.Background(), env))
	waitGone(t, k8s, env)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(squatter), after), "someone else's Secret was deleted")
}

// TestServiceAccountNotOursIsNeverAdopted: a ServiceAccount on the target
// cluster under the name we would give ours, that we did not make, is left
// as it is, and the condition names it (not a connection failure).
func TestServiceAccountNotOursIsNeverAdopted(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	env := newEnv(t, ns, "sa-taken", "creds", func(e *envT) { e.Spec.CreateNewServiceAccount = true })
	got := waitCondition(t, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonSecretNotFound, "")
	sa, _, _, _, _, _ := remoteObjects(got.UID)
	sa.Labels = map[string]string{"team": "other"}
	require.NoError(t, remoteK8s.Create(context.Background(), sa))
	t.Cleanup(func() { _ = remoteK8s.Delete(context.Background(), sa) })
	credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	waitConditionWithin(t, watched, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
		"ServiceAccount kube-system/"+sa.Name+" exists and was not created by the GitOps Service for this environment")
	assertNoClusterSecret(t, env)
	after := &corev1.ServiceAccount{}
	require.NoError(t, remoteK8s.Get(context.Background(), client.ObjectKeyFromObject(sa), after))
	assert.Equal(t, sa.ResourceVersion, after.ResourceVersion, "someone else's ServiceAccount was modified")

	require.NoError(t, k8s.Delete(context.Background(), env))
	waitGone(t, k8s, env)
	require.NoError(t, remoteK8s.Get(context.Background(), client.ObjectKeyFromObject(sa), after), "someone else's ServiceAccount was deleted")
}

// TestDeploymentAndProjectUseTheEnvironment: a GitOpsDeployment of the tenant
// targets the connected environment's cluster, and the tenant's AppProject
// allows exactly that cluster's namespaces; when the environment fails, the
// destination is withdrawn.
func TestDeploymentAndProjectUseTheEnvironment(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	secret := credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	env := newEnv(t, ns, "prod", "creds", func(e *envT) { e.Spec.Namespaces = []string{"default", "kube-public"} })
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: v1.GitOpsDeploymentSpec{
			Source:      v1.ApplicationSource{RepoURL: "https://git.example.com/app.git", Path: "deploy"},
			Destination: v1.ApplicationDestination{Environment: "prod", Namespace: "default"},
			Type:        v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	require.NoError(t, k8s.Create(context.Background(), gd))
	got := waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	server := argocd.ClusterServer(rk.URL, string(got.UID))

	app := &argov1alpha1.Application{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}, app) == nil
	}, wait, tick, "no Application for the GitOpsDeployment")
	assert.Equal(t, server, app.Spec.Destination.Server)
	assert.Equal(t, "default", app.Spec.Destination.Namespace)

	projectKey := types.NamespacedName{Namespace: argoNS, Name: argocd.ProjectName(string(nsUID(t, ns)))}
	proj := &argov1alpha1.AppProject{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), projectKey, proj) == nil && len(proj.Spec.Destinations) == 3
	}, wait, tick, "AppProject never listed the environment's namespaces; last: %+v", proj.Spec.Destinations)
	assert.Equal(t, []argov1alpha1.ApplicationDestination{
		{Server: argocd.LocalServer, Namespace: ns},
		{Server: server, Namespace: "default"},
		{Server: server, Namespace: "kube-public"},
	}, proj.Spec.Destinations)
	assert.Empty(t, proj.Spec.ClusterResourceWhitelist)
	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })
	assert.Equal(t, proj.Name, string(s.Data["project"]))

	// The environment fails: its destinations leave the project.
	require.NoError(t, k8s.Delete(context.Background(), secret))
	waitConditionWithin(t, watched, env, metav1.ConditionFalse, v1.ManagedEnvironmentReasonSecretNotFound, "")
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), projectKey, proj) == nil && len(proj.Spec.Destinations) == 1
	}, wait, tick, "the failing environment's destinations stayed in the AppProject: %+v", proj.Spec.Destinations)

	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
	require.NoError(t, k8s.Delete(context.Background(), gd))
}
