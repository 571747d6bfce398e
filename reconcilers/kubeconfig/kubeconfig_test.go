package kubeconfig

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

const (
	testURL = "https://api.cluster.example.com:6443"
	testCA  = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
)

// kubeconfig builds a one-context kubeconfig for testURL and lets mutate change it.
func kubeconfig(t testing.TB, mutate func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{Server: testURL, CertificateAuthorityData: []byte(testCA)}
	user := &clientcmdapi.AuthInfo{Token: "sha256~secret-token"}
	cfg.Clusters["prod"] = cluster
	cfg.AuthInfos["deployer"] = user
	cfg.Contexts["prod-deployer"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "deployer", Namespace: "default"}
	cfg.CurrentContext = "prod-deployer"
	if mutate != nil {
		mutate(cluster, user, cfg)
	}
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

func TestParseKubeconfigAccepts(t *testing.T) {
	kc, refusal := ParseKubeconfig(kubeconfig(t, nil), testURL)
	require.Nil(t, refusal)
	assert.Equal(t, "prod-deployer", kc.Context)
	assert.Equal(t, "sha256~secret-token", kc.Token)
	assert.Equal(t, testCA, string(kc.CAData))

	t.Run("server compared case-insensitively and with a trailing slash", func(t *testing.T) {
		data := kubeconfig(t, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.Server = "HTTPS://API.Cluster.example.com:6443/"
		})
		_, refusal := ParseKubeconfig(data, testURL)
		assert.Nil(t, refusal)
		_, refusal = ParseKubeconfig(kubeconfig(t, nil), testURL+"/")
		assert.Nil(t, refusal)
	})
	t.Run("insecure-skip-tls-verify and no CA", func(t *testing.T) {
		data := kubeconfig(t, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.InsecureSkipTLSVerify = true
			c.CertificateAuthorityData = nil
		})
		kc, refusal := ParseKubeconfig(data, testURL)
		require.Nil(t, refusal)
		assert.Empty(t, kc.CAData)
	})
	t.Run("the context of the matching cluster, whatever current-context says", func(t *testing.T) {
		data := kubeconfig(t, func(_ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
			cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other.example.com"}
			cfg.AuthInfos["exec-user"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh"}}
			cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "exec-user"}
			cfg.CurrentContext = "other"
		})
		kc, refusal := ParseKubeconfig(data, testURL)
		require.Nil(t, refusal, "the unused exec user of another cluster does not matter")
		assert.Equal(t, "prod-deployer", kc.Context)
	})
	t.Run("current-context preferred among matching contexts", func(t *testing.T) {
		data := kubeconfig(t, func(_ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
			cfg.AuthInfos["zz-admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
			cfg.Contexts["zz-admin"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "zz-admin"}
			cfg.CurrentContext = "zz-admin"
		})
		kc, refusal := ParseKubeconfig(data, testURL)
		require.Nil(t, refusal)
		assert.Equal(t, "admin-token", kc.Token)
	})
	t.Run("the seed document's example", func(t *testing.T) {
		data := []byte(`apiVersion: v1
clusters:
- cluster:
    insecure-skip-tls-verify: true
    server: https://api.my-cluster.dev.rhcloud.com:6443
  name: api-my-cluster-dev-rhcloud-com:6443
contexts:
- context:
    cluster: api-my-cluster-dev-rhcloud-com:6443
    namespace: default
    user: kube:admin/api-my-cluster-dev-rhcloud-com:6443
  name: default/api-my-cluster-dev-rhcloud-com:6443/kube:admin
current-context: default/api-my-cluster-dev-rhcloud-com:6443/kube:admin
kind: Config
preferences: {}
users:
- name: kube:admin/api-my-cluster-dev-rhcloud-com:6443
  user:
    token: sha256~ABCdEF1gHiJKlMnoP-Q19qrTuv1_W9X2YZABCDefGH4
`)
		kc, refusal := ParseKubeconfig(data, "https://api.my-cluster.dev.rhcloud.com:6443")
		require.Nil(t, refusal)
		assert.Equal(t, "sha256~ABCdEF1gHiJKlMnoP-Q19qrTuv1_W9X2YZABCDefGH4", kc.Token)
	})
}

func TestParseKubeconfigRefuses(t *testing.T) {
	type mut = func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config)
	cases := []struct {
		name   string
		data   []byte
		mutate mut
		reason string
		msg    string
	}{
		{name: "not YAML", data: []byte("badbad: ["), reason: v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, msg: "unable to parse kubeconfig data"},
		{name: "plain text", data: []byte("badbad"), reason: v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, msg: "unable to parse kubeconfig data"},
		{name: "wrong kind", data: []byte("apiVersion: v1\nkind: Pod\n"), reason: v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, msg: "unable to parse kubeconfig data"},
		{name: "too large", data: []byte(strings.Repeat("#", maxKubeconfigSize+1)), reason: v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, msg: "larger than"},
		{name: "empty", data: []byte(""), reason: v1.ManagedEnvironmentReasonUnableToLocateContext, msg: "did not have a cluster entry"},
		{name: "no cluster with the API URL", mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.Server = "https://elsewhere.example.com:6443"
		}, reason: v1.ManagedEnvironmentReasonUnableToLocateContext, msg: "did not have a cluster entry that matched the API URL"},
		{name: "a different port is a different server", mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.Server = "https://api.cluster.example.com:443"
		}, reason: v1.ManagedEnvironmentReasonUnableToLocateContext, msg: "did not have a cluster entry"},
		{name: "no context using the cluster", mutate: func(_ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
			cfg.Contexts["prod-deployer"].Cluster = "something-else"
		}, reason: v1.ManagedEnvironmentReasonUnableToLocateContext, msg: "did not have a context that matched"},
		{name: "context naming an undefined user", mutate: func(_ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
			cfg.Contexts["prod-deployer"].AuthInfo = "nobody"
		}, reason: v1.ManagedEnvironmentReasonUnableToLocateContext, msg: "references user 'nobody'"},
		{name: "no token", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Token = ""
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "must have a service account token"},
		{name: "exec", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "id"}}
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "exec credential plugin"},
		{name: "auth-provider", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://idp"}}
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "auth-provider"},
		{name: "tokenFile", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "tokenFile"},
		{name: "username/password", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Username, u.Password = "admin", "hunter2"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "basic authentication"},
		{name: "client-certificate", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientCertificate = "/etc/kubernetes/pki/admin.crt"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "client-certificate/client-key"},
		{name: "client-key", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientKey = "/etc/kubernetes/pki/admin.key"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "client-certificate/client-key"},
		{name: "client-certificate-data", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientCertificateData = []byte("cert")
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "client certificates are not supported"},
		{name: "client-key-data", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientKeyData = []byte("key")
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "client certificates are not supported"},
		{name: "impersonation", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Impersonate = "system:admin"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "impersonates"},
		{name: "impersonated groups", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ImpersonateGroups = []string{"system:masters"}
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "impersonates"},
		{name: "certificate-authority file", mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.CertificateAuthority = "/etc/kubernetes/pki/ca.crt"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "certificate-authority"},
		{name: "proxy-url", mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.ProxyURL = "socks5://127.0.0.1:1080"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "proxy-url"},
		{name: "tls-server-name", mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.TLSServerName = "kubernetes"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "tls-server-name"},
		{name: "a token does not excuse an exec plugin", mutate: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Exec = &clientcmdapi.ExecConfig{Command: "curl"}
			u.TokenFile = "/etc/passwd"
		}, reason: v1.ManagedEnvironmentReasonUnsupportedCredentials, msg: "(exec); the user reads its token from a file (tokenFile)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			if data == nil {
				data = kubeconfig(t, tc.mutate)
			}
			kc, refusal := ParseKubeconfig(data, testURL)
			require.NotNil(t, refusal, "accepted: %+v", kc)
			assert.Equal(t, tc.reason, refusal.Reason)
			assert.Contains(t, refusal.Message, tc.msg)
			assert.Empty(t, kc.Token)
			for _, secret := range []string{"sha256~secret-token", "hunter2"} {
				assert.NotContains(t, refusal.Message, secret, "a credential leaked into the message")
			}
		})
	}
}

func TestValidateAPIURL(t *testing.T) {
	for _, ok := range []string{
		"https://api.cluster.example.com:6443",
		"https://127.0.0.1:6443",
		"https://rancher.example.com/k8s/clusters/c-abc12",
		"https://api.example.com/",
	} {
		assert.Nil(t, ValidateAPIURL(ok), ok)
	}
	for _, bad := range []struct{ url, msg string }{
		{"https://api.example.com:6443?managedEnvironment=x", "must not have ? or & values"},
		{"https://api.example.com:6443/&x", "must not have ? or & values"},
		{"http://api.example.com:6443", "https://"},
		{"api.example.com:6443", "https://"},
		{"https://", "must name a host"},
		{"https://:6443", "must name a host"},
		{"https://user:pass@api.example.com", "credentials"},
		{"https://api.example.com#frag", "fragment"},
		{"https://api.example.com/#", "fragment"},
		{"https://*.example.com", "characters"},
		{"https://api.example.com/[x]", "[ or ]"},
		{"https://[::1]:6443", "IPv6"},
		{"https://api.example.com/{a,b}", "characters"},
		{"https://api.example.com/ x", "spaces"},
		{"https://api.example.com:port", "not a valid URL"},
		{"", "https://"},
	} {
		r := ValidateAPIURL(bad.url)
		if assert.NotNil(t, r, bad.url) {
			assert.Equal(t, v1.ManagedEnvironmentReasonUnsupportedAPIURL, r.Reason)
			assert.Contains(t, r.Message, bad.msg, bad.url)
		}
	}
}

func TestValidateNamespaces(t *testing.T) {
	ns, r := ValidateNamespaces([]string{"team-b", "team-a", "team-b"})
	require.Nil(t, r)
	assert.Equal(t, []string{"team-a", "team-b"}, ns)
	ns, r = ValidateNamespaces(nil)
	require.Nil(t, r)
	assert.Empty(t, ns)
	for _, bad := range []string{"", "Team-A", "team_a", "*", "kube-*", "!default", "a.b", strings.Repeat("n", 64)} {
		_, r := ValidateNamespaces([]string{"ok", bad})
		if assert.NotNil(t, r, "%q", bad) {
			assert.Equal(t, v1.ManagedEnvironmentReasonInvalidNamespaceList, r.Reason)
			assert.Contains(t, r.Message, "invalid namespace in namespaces list")
		}
	}
}
