package kubeconfig

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FuzzParseKubeconfig feeds arbitrary kubeconfigs to the parser. It must never
// panic, and whatever it accepts must have a token and come from a context
// whose cluster and user ask for nothing but a token and CA data. The seeds
// (below and in testdata/fuzz) run with plain `go test`.
func FuzzParseKubeconfig(f *testing.F) {
	f.Add(kubeconfig(f, nil), testURL)
	f.Add(kubeconfig(f, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh"}
	}), testURL)
	f.Add(kubeconfig(f, func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
		c.CertificateAuthority = "/etc/ca.crt"
		u.TokenFile = "/etc/token"
	}), testURL)
	f.Add(kubeconfig(f, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
		u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		cfg.AuthInfos["second"] = &clientcmdapi.AuthInfo{Token: "t2"}
		cfg.Contexts["a-second"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "second"}
	}), testURL+"/")
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://x"}}],`+
		`"contexts":[{"name":"k","context":{"cluster":"c","user":"u"}}],"users":[{"name":"u","user":{"token":"t"}}]}`), "https://x")
	f.Add([]byte("clusters:\n- name: c\n  cluster: {server: https://x}\ncontexts:\n- name: k\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: \"  \", client-key-data: eA==}\n"), "https://x")
	f.Add([]byte("clusters: [{name: c}]\ncontexts: [{name: k}]\nusers: [{name: u}]\n"), "")
	f.Add([]byte("a: &a [*a]"), testURL)
	f.Add([]byte("\x00\xff"), testURL)

	f.Fuzz(func(t *testing.T, data []byte, apiURL string) {
		kc, refusal := ParseKubeconfig(data, apiURL)
		if refusal != nil {
			if refusal.Reason == "" || refusal.Message == "" {
				t.Fatalf("refusal without reason or message: %+v", refusal)
			}
			if kc.Token != "" {
				t.Fatalf("a refusal returned a token")
			}
			return
		}
		if strings.TrimSpace(kc.Token) == "" || kc.Token != strings.TrimSpace(kc.Token) {
			t.Fatalf("accepted without a usable token: %q", kc.Token)
		}
		// Check the context it used independently of the parser's own checks.
		cfg, err := clientcmd.Load(data)
		if err != nil {
			t.Fatalf("accepted a kubeconfig client-go cannot load: %v", err)
		}
		ctx := cfg.Contexts[kc.Context]
		if ctx == nil {
			t.Fatalf("accepted context %q does not exist", kc.Context)
		}
		c, u := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
		if c == nil || u == nil {
			t.Fatalf("accepted context %q lacks its cluster or user", kc.Context)
		}
		if !sameServer(c.Server, apiURL) {
			t.Fatalf("accepted cluster server %q for API URL %q", c.Server, apiURL)
		}
		if u.Exec != nil || u.AuthProvider != nil || u.TokenFile != "" || u.ClientCertificate != "" || u.ClientKey != "" ||
			len(u.ClientCertificateData) > 0 || len(u.ClientKeyData) > 0 || u.Username != "" || u.Password != "" ||
			u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0 {
			t.Fatalf("accepted a user with more than a token: %+v", u)
		}
		if c.CertificateAuthority != "" || c.ProxyURL != "" || c.TLSServerName != "" {
			t.Fatalf("accepted a cluster with a file, proxy or server name: %+v", c)
		}
		if kc.Token != strings.TrimSpace(u.Token) || string(kc.CAData) != string(c.CertificateAuthorityData) {
			t.Fatalf("result does not match the context's user and cluster")
		}
	})
}
