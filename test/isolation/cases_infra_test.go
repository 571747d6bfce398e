package isolation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/namespace"
	"github.com/gitops-service/gitops-service/reconcilers/repositorycredentials"
	"github.com/gitops-service/gitops-service/test/hostile"
)

// Issue 21, defects 4 to 6: what the shared infrastructure lets a tenant do
// to others and to the platform.

var (
	hostileOnce sync.Once
	hostileSrv  *hostile.Server
)

// hostileServer is the one server the matrix's URL cases point at; when the
// matrix ends, no credential may have reached its plain http or other port.
func hostileServer(t *testing.T) *hostile.Server {
	hostileOnce.Do(func() {
		hostileSrv = hostile.Start(t)
		t.Cleanup(func() { assert.Empty(t, hostileSrv.Leaks(), "a credential reached plain http or another port") })
		trust(t, hostileSrv)
	})
	return hostileSrv
}

// trust makes Argo CD (and so the sidecar's repository check) trust h's
// certificate for its host.
func trust(t *testing.T, h *hostile.Server) {
	cm := &corev1.ConfigMap{ObjectMeta: om(argoNS, "argocd-tls-certs-cm")}
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)
	if apierrors.IsNotFound(err) {
		cm.Data = map[string]string{"127.0.0.1": string(h.CAData)}
		require.NoError(t, k8s.Create(context.Background(), cm))
		return
	}
	require.NoError(t, err)
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["127.0.0.1"] = string(h.CAData)
	require.NoError(t, k8s.Update(context.Background(), cm))
}

// The answers of the hostile server: bodies and messages with a canary
// (checked absent from every condition by the matrix), redirects to plain
// http, to another port, to another service on the same host.
var answerPaths = []string{"/5xx", "/status", "/to-http", "/to-port", "/to-tls"}

func infraCases() []hostileCase {
	var out []hostileCase
	for _, path := range answerPaths {
		out = append(out, hostileCase{Kind: "ManagedEnvironment", Name: "API URL answering " + path,
			Setup: func(t *testing.T, e tenantEnv) {
				h := hostileServer(t)
				cfg := clientcmdapi.NewConfig()
				cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: h.URL + path, CertificateAuthorityData: h.CAData}
				cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: canary("hostile-api-token")}
				cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
				cfg.CurrentContext = "x"
				kc, err := clientcmd.Write(*cfg)
				require.NoError(t, err)
				create(t, &corev1.Secret{ObjectMeta: om(e.NS, "creds"), Type: v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kc}})
			},
			Object: func(e tenantEnv) client.Object {
				return &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(e.NS, "env"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
					APIURL: hostileSrv.URL + path, ClusterCredentialsSecret: "creds"}}
			},
			Want: want{Type: v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: metav1.ConditionFalse,
				Reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, Msg: "HTTP "},
		})
	}

	// Namespaces a claim could squat: the platform's (made first), one of
	// another tenant's, a class the tenant is not selected for, a tenant at
	// its class's limit.
	claim := func(name, class string) func(e tenantEnv) client.Object {
		return func(e tenantEnv) client.Object {
			return &as.DeploymentTargetClaim{ObjectMeta: om(e.NS, name), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(class)}}
		}
	}
	nsClass := func(t *testing.T, name, params string) {
		c := &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: as.DeploymentTargetClassSpec{Provisioner: as.ProvisionerNamespace, ReclaimPolicy: as.ReclaimPolicyDelete}}
		if params != "" {
			c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(params)}
		}
		if err := k8s.Create(context.Background(), c); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	for _, claimName := range []string{"manager", "system", "gitops", "monitoring"} {
		out = append(out, hostileCase{Kind: "DeploymentTargetClaim", Name: "default namespace taken " + claimName,
			Setup: func(t *testing.T, e tenantEnv) {
				nsClass(t, "iso-infra-default", "")
				create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace.DefaultNamespaceName(e.NS, claimName)}})
			},
			Object: claim(claimName, "iso-infra-default"),
			Want:   errorOccurred(as.DeploymentTargetReasonProvisioningFailed, "exists and was not provisioned for this claim"),
		})
		out = append(out, hostileCase{Kind: "DeploymentTargetClaim", Name: "legacy pattern onto the platform's " + claimName,
			Setup: func(t *testing.T, e tenantEnv) {
				nsClass(t, "iso-infra-legacy", `{"namespacePattern": "{namespace}-{claim}"}`)
				create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.NS + "-" + claimName}})
			},
			Object: claim(claimName, "iso-infra-legacy"),
			Want:   errorOccurred(as.DeploymentTargetReasonProvisioningFailed, "exists and was not provisioned for this claim"),
		})
	}
	out = append(out, hostileCase{Kind: "DeploymentTargetClaim", Name: "class for selected tenants only",
		Setup: func(t *testing.T, e tenantEnv) {
			nsClass(t, "iso-infra-selected", `{"tenantNamespaceSelector": {"matchLabels": {"example.com/self-service": "true"}}}`)
		},
		Object: claim("qa", "iso-infra-selected"),
		Want:   errorOccurred(as.DeploymentTargetReasonClassNotPermitted, "tenantNamespaceSelector"),
	})
	out = append(out, hostileCase{Kind: "DeploymentTargetClaim", Name: "class limit reached",
		Setup: func(t *testing.T, e tenantEnv) {
			nsClass(t, "iso-infra-limited", `{"maxClaimsPerNamespace": 1}`)
			// The namespace of an earlier claim of the tenant.
			create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.NS + "-earlier", Labels: map[string]string{
				ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelOwnerKind: namespace.OwnerKindClaim,
				ownership.LabelTenantNS: e.NS, ownership.LabelOwnerUID: "earlier-claim-uid", namespace.LabelClass: "iso-infra-limited"}}})
		},
		Object: claim("qa", "iso-infra-limited"),
		Want:   errorOccurred(as.DeploymentTargetReasonClaimLimitReached, "maxClaimsPerNamespace 1"),
	})
	return out
}

// TestClusterNamesNeverCollide: tenants whose <namespace>-<environment> is an
// admin's cluster name ("prod" + "east" = "prod-east"), or another tenant's,
// connect; every Argo CD cluster keeps a name of its own, ours are labelled
// for the admins' cluster generators to leave out, and no admin cluster
// Secret is written.
func TestClusterNamesNeverCollide(t *testing.T) {
	ctx := context.Background()
	kc, err := kube.KubeconfigFor(kube.AdminToken)
	require.NoError(t, err)
	pairs := [][2]string{{"clash-prod", "east"}, {"clash-prod-east", "x"}, {"clash-a", "b-c"}, {"clash-a-b", "c"}}
	var admins []*corev1.Secret
	for _, adminName := range []string{"clash-prod-east", "clash-prod-east-x", "clash-a-b-c", "in-cluster"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: "admin-" + strings.ReplaceAll(adminName, "_", "-"),
			Labels: map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster}},
			StringData: map[string]string{"name": adminName, "server": "https://" + adminName + ".example.com"}}
		create(t, s)
		admins = append(admins, s)
	}
	var envs []*v1.GitOpsDeploymentManagedEnvironment
	for _, p := range pairs {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p[0]}}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		create(t, &corev1.Secret{ObjectMeta: om(p[0], "creds-"+p[1]), Type: v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kc}})
		env := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(p[0], p[1]), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL: kube.Config.Host, ClusterCredentialsSecret: "creds-" + p[1]}}
		create(t, env)
		envs = append(envs, env)
	}
	for _, env := range envs {
		s := &corev1.Secret{}
		require.Eventually(t, func() bool {
			return k8s.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: argocd.ClusterSecretName(string(env.UID))}, s) == nil
		}, wait, tick, "no cluster Secret for %s/%s", env.Namespace, env.Name)
		assert.Equal(t, "true", s.Labels[argocd.LabelTenantCluster])
		assert.True(t, strings.HasPrefix(string(s.Data["name"]), argocd.ClusterNamePrefix), string(s.Data["name"]))
	}
	var all corev1.SecretList
	require.NoError(t, k8s.List(ctx, &all, client.InNamespace(argoNS), client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeCluster}))
	names := map[string][]string{}
	for _, s := range all.Items {
		names[string(s.Data["name"])] = append(names[string(s.Data["name"])], s.Name)
	}
	for name, secrets := range names {
		assert.Len(t, secrets, 1, "Argo CD clusters named %q: %v", name, secrets)
	}
	for _, a := range admins {
		after := &corev1.Secret{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(a), after))
		assert.Equal(t, a.ResourceVersion, after.ResourceVersion, "the admin's cluster Secret %s was written", a.Name)
	}
	t.Logf("%d Argo CD clusters, %d of tenants, all names distinct", len(names), len(envs))
}

// TestRepositoryURLsRevealNothing: RepositoryCredentials whose repository
// answers with a canary (a 5xx body, a Status message) or redirects to plain
// http, another port or another service of the host. The Argo CD repository
// Secret is written before the check (Argo CD reports what it finds), so
// these are not refusals of the matrix: each ends with InvalidRepositoryURL
// naming only the HTTP code, and neither its conditions nor its Events carry
// the canary; the credentials never reach plain http or another port.
func TestRepositoryURLsRevealNothing(t *testing.T) {
	ctx := context.Background()
	h := hostile.Start(t)
	trust(t, h)
	password := canary("hostile-repo-password")
	for i, path := range answerPaths {
		ns := fmt.Sprintf("url-rc-%d", i)
		url := h.URL + path + "/org/repo"
		create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		create(t, &corev1.Secret{ObjectMeta: om(ns, "creds"), Type: v1.RepositoryCredentialSecretType, StringData: map[string]string{
			repositorycredentials.KeyURL: url, repositorycredentials.KeyUsername: "jane", repositorycredentials.KeyPassword: password}})
		rc := &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om(ns, "repo"), Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: url, Secret: "creds"}}
		create(t, rc)
		refused := errorOccurred(v1.RepositoryCredentialReasonInvalidRepositoryURL, "HTTP ")
		require.Eventually(t, func() bool {
			return k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc) == nil && refused.matches(rc)
		}, wait, tick, "%s: no refusal %s; conditions %+v", path, refused, rc.Status.Conditions)
		for _, c := range rc.Status.Conditions {
			assert.NotContains(t, c.Message, canaryMark, "%s: condition %s", path, c.Type)
		}
		var events corev1.EventList
		require.NoError(t, k8s.List(ctx, &events, client.InNamespace(ns)))
		assert.NotEmpty(t, events.Items, "%s: no Event", path)
		for _, e := range events.Items {
			assert.NotContains(t, e.Message, canaryMark, "%s: Event %s", path, e.Reason)
		}
	}
	assert.Empty(t, h.Leaks(), "the credentials reached plain http or another port")
}
