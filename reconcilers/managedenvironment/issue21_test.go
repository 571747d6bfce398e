//go:build !unit

package managedenvironment_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/test/hostile"
)

// Issue 21 defect 4: tenant <ns> with environment "east" got the Argo CD
// cluster name <ns>-east, which an admin's cluster already had: Argo CD then
// failed (or misrouted) every admin Application with destination.name <ns>-east.
func TestClusterNameNeverTakesAnAdminsCluster(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	admin := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "cluster-admin-" + rand.String(6),
			Labels: map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster}},
		StringData: map[string]string{"name": ns + "-east", "server": "https://prod-east.example.com"},
	}
	require.NoError(t, k8s.Create(context.Background(), admin))
	credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	env := newEnv(t, ns, "east", "creds", nil)
	got := waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	env.UID = got.UID
	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })

	var list corev1.SecretList
	require.NoError(t, k8s.List(context.Background(), &list, client.InNamespace(argoNS),
		client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeCluster}))
	names := map[string]int{}
	for _, c := range list.Items {
		names[string(c.Data["name"])]++
	}
	assert.Equal(t, 1, names[ns+"-east"], "two Argo CD clusters are named %s-east", ns)
	assert.Equal(t, "gitops-service:"+ns+"/east", string(s.Data["name"]))
	assert.Equal(t, "true", s.Labels[argocd.LabelTenantCluster])
	after := &corev1.Secret{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(admin), after))
	assert.Equal(t, admin.ResourceVersion, after.ResourceVersion, "the admin's cluster Secret was written")
	assert.NotContains(t, after.Labels, argocd.LabelTenantCluster)
}

// A cluster Secret written before the name changed (name <ns>-<env>, no
// tenant-cluster label) is brought to the new name in place: the same
// Secret, so Argo CD keeps the cluster and its Applications.
func TestClusterNameMigratesInPlace(t *testing.T) {
	t.Parallel()
	rk := remote(t)
	ns := tenant(t)
	credentialsSecret(t, ns, "creds", remoteKubeconfig(t, rk.AdminToken, nil))
	env := newEnv(t, ns, "staging", "creds", nil)
	got := waitCondition(t, env, metav1.ConditionTrue, v1.ManagedEnvironmentReasonSucceeded, "")
	env.UID = got.UID
	s := waitClusterSecret(t, env, func(*corev1.Secret) bool { return true })
	// As the previous version wrote it.
	s.Data["name"] = []byte(ns + "-staging")
	delete(s.Labels, argocd.LabelTenantCluster)
	require.NoError(t, k8s.Update(context.Background(), s))
	nudge(t, env)
	migrated := waitClusterSecret(t, env, func(n *corev1.Secret) bool {
		return string(n.Data["name"]) == "gitops-service:"+ns+"/staging" && n.Labels[argocd.LabelTenantCluster] == "true"
	})
	assert.Equal(t, s.UID, migrated.UID, "the cluster Secret was replaced, not migrated")
	assert.Equal(t, string(s.Data["server"]), string(migrated.Data["server"]))
}

// Issue 21 defect 6: the API URL is the tenant's choice and the sidecar
// connects from inside the cluster. Whatever the server answers (a 5xx body,
// which client-go quotes, a Status message, a redirect), the condition and the
// Events carry an HTTP code or a kind of failure, never what it sent; and a
// redirect to plain http or to another port never gets the bearer token.
func TestHostileAPIURLRevealsNothing(t *testing.T) {
	t.Parallel()
	h := hostile.Start(t)
	ns := tenant(t)
	token := "tenant-token-" + rand.String(12)
	for i, path := range []string{"/5xx", "/status", "/to-http", "/to-port", "/to-tls"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			apiURL := h.URL + path
			cfg := clientcmdapi.NewConfig()
			cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: apiURL, CertificateAuthorityData: h.CAData}
			cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
			cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
			cfg.CurrentContext = "x"
			kc, err := clientcmd.Write(*cfg)
			require.NoError(t, err)
			secret := "hostile-" + strings.Trim(path, "/")
			credentialsSecret(t, ns, secret, kc)
			env := newEnv(t, ns, secret, secret, func(e *envT) {
				e.Spec.APIURL = apiURL
				// The service account path connects too, and reports its own errors.
				e.Spec.CreateNewServiceAccount = i%2 == 1
			})
			reason := v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials
			if i%2 == 1 {
				reason = v1.ManagedEnvironmentReasonUnableToInstallServiceAccount
			}
			got := waitCondition(t, env, metav1.ConditionFalse, reason, "HTTP ")
			env.UID = got.UID
			for _, c := range got.Status.Conditions {
				assertReveals(t, h, token, c.Message)
			}
			var events corev1.EventList
			require.NoError(t, k8s.List(context.Background(), &events, client.InNamespace(ns)))
			seen := 0
			for _, e := range events.Items {
				if e.InvolvedObject.UID == env.UID {
					seen++
					assertReveals(t, h, token, e.Message)
				}
			}
			assert.NotZero(t, seen, "no Event for the failing environment")
			assertNoClusterSecret(t, got)
		})
	}
	t.Cleanup(func() { assert.Empty(t, h.Leaks(), "the bearer token reached plain http or another port") })
}

func assertReveals(t *testing.T, h *hostile.Server, token, text string) {
	t.Helper()
	assert.NotContains(t, text, h.Canary)
	assert.NotContains(t, text, "10.0.0.7")
	assert.NotContains(t, text, token)
	assert.Less(t, len(text), 600, text)
}
