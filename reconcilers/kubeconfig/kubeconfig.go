// Package kubeconfig validates the cluster a user points us at (API URL,
// namespaces) and takes from a user's kubeconfig only a bearer token and a CA.
package kubeconfig

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// KubeconfigKey is the key of the credentials Secret that holds the kubeconfig.
const KubeconfigKey = "kubeconfig"

// maxKubeconfigSize bounds what is parsed (a Secret holds at most 1 MiB anyway).
const maxKubeconfigSize = 1 << 20

// Kubeconfig is what we take from a user's kubeconfig: the bearer token of the
// user of a context whose cluster's server is the environment's apiURL, and
// that cluster's CA. Nothing else of a kubeconfig is ever used.
type Kubeconfig struct {
	// Context is the name of the context used.
	Context string
	// Token is the user's bearer token; never empty in an accepted kubeconfig.
	Token string
	// CAData is the cluster's certificate-authority-data, if any.
	CAData []byte
}

// ValidateAPIURL accepts an https URL with a host, no credentials, query or
// fragment, and none of the glob characters (but '?', excluded anyway) that
// Argo CD's AppProject destinations would interpret.
func ValidateAPIURL(apiURL string) *kernel.Refusal {
	if strings.ContainsAny(apiURL, "?&") {
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must not have ? or & values")
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL %q is not a valid URL", apiURL)
	}
	switch {
	case u.Scheme != "https":
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must be an https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must name a host")
	case u.User != nil:
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must not contain credentials")
	case u.Fragment != "" || strings.Contains(apiURL, "#"):
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must not have a fragment")
	case strings.ContainsAny(apiURL, "[]"):
		// Argo CD matches AppProject destinations as globs, where [..] is a class.
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must not contain [ or ]: use a host name instead of an IPv6 address")
	case strings.ContainsAny(apiURL, "*{}!\\ \t\r\n"):
		return kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "the API URL must not contain spaces or any of the characters * { } ! \\")
	}
	return nil
}

// ValidateNamespaces checks spec.namespaces (each a DNS-1123 label) and returns
// them sorted and without duplicates.
func ValidateNamespaces(namespaces []string) ([]string, *kernel.Refusal) {
	set := map[string]bool{}
	for _, ns := range namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, kernel.Refuse(v1.ManagedEnvironmentReasonInvalidNamespaceList,
				"ManagedEnvironment contains an invalid namespace in namespaces list: %q: %s", ns, strings.Join(errs, "; "))
		}
		set[ns] = true
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out, nil
}

// sameServer compares API server URLs the way users write them: case-insensitive,
// with or without a trailing slash.
func sameServer(a, b string) bool {
	return strings.EqualFold(strings.TrimRight(a, "/"), strings.TrimRight(b, "/"))
}

// ParseKubeconfig finds, in a kubeconfig, a context whose cluster's server is
// apiURL (current-context is preferred when it is one of them, else the first
// by name) and returns its user's bearer token and the cluster's CA data. Only
// a token and CA data are accepted: anything that would make the sidecar or
// Argo CD run a program, read a file, use another identity or another route
// is refused, each with its own message.
func ParseKubeconfig(data []byte, apiURL string) (kc Kubeconfig, refusal *kernel.Refusal) {
	if len(data) > maxKubeconfigSize {
		return Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
			"unable to parse kubeconfig data: larger than %d bytes", maxKubeconfigSize)
	}
	cfg, err := load(data)
	if err != nil {
		return Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, "unable to parse kubeconfig data: %s", err)
	}

	var clusters []string
	for name, c := range cfg.Clusters {
		if c != nil && sameServer(c.Server, apiURL) {
			clusters = append(clusters, name)
		}
	}
	if len(clusters) == 0 {
		return Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToLocateContext,
			"the kubeconfig did not have a cluster entry that matched the API URL '%s'", apiURL)
	}
	sort.Strings(clusters)
	matching := map[string]bool{}
	for _, c := range clusters {
		matching[c] = true
	}
	var contexts []string
	for name, c := range cfg.Contexts {
		if c != nil && matching[c.Cluster] {
			contexts = append(contexts, name)
		}
	}
	if len(contexts) == 0 {
		return Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToLocateContext,
			"the kubeconfig did not have a context that matched the cluster specified in the API URL of the GitOpsDeploymentManagedEnvironment. Context was expected to reference cluster '%s'", clusters[0])
	}
	sort.Strings(contexts)
	name := contexts[0]
	for _, c := range contexts {
		if c == cfg.CurrentContext {
			name = c
		}
	}
	ctx := cfg.Contexts[name]
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok || user == nil {
		return Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToLocateContext,
			"the kubeconfig context '%s' references user '%s', which the kubeconfig does not define", name, ctx.AuthInfo)
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if problems := unsupported(cluster, user); len(problems) > 0 {
		return Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedCredentials,
			"the kubeconfig context '%s' is not supported: %s. Only a bearer token (user 'token') with the cluster's 'certificate-authority-data' is accepted",
			name, strings.Join(problems, "; "))
	}
	if strings.TrimSpace(user.Token) == "" {
		return Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonUnsupportedCredentials,
			"kubeconfig must have a service account token for the user in context \"%s\"", name)
	}
	return Kubeconfig{Context: name, Token: strings.TrimSpace(user.Token), CAData: append([]byte(nil), cluster.CertificateAuthorityData...)}, nil
}

// load parses a kubeconfig. client-go's decoder is not meant for hostile input,
// so a panic in it is a parse error here, not a crash.
func load(data []byte) (cfg *clientcmdapi.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			cfg, err = nil, fmt.Errorf("malformed kubeconfig")
		}
	}()
	cfg, err = clientcmd.Load(data)
	if err == nil && cfg == nil {
		err = fmt.Errorf("empty kubeconfig")
	}
	return cfg, err
}

// unsupported lists what, in the cluster and user of the chosen context, we
// refuse. Each is something a kubeconfig can ask the client to do beyond
// sending a token: run a program, read a local file, present another identity
// or go through a proxy.
func unsupported(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) []string {
	var out []string
	add := func(cond bool, msg string) {
		if cond {
			out = append(out, msg)
		}
	}
	add(u.Exec != nil, "the user runs an exec credential plugin (exec)")
	add(u.AuthProvider != nil, "the user uses an auth-provider plugin (auth-provider)")
	add(u.TokenFile != "", "the user reads its token from a file (tokenFile)")
	add(u.Username != "" || u.Password != "", "the user uses basic authentication (username/password)")
	add(u.ClientCertificate != "" || u.ClientKey != "", "the user reads a client certificate or key from a file (client-certificate/client-key)")
	add(len(u.ClientCertificateData) > 0 || len(u.ClientKeyData) > 0, "client certificates are not supported (client-certificate-data/client-key-data)")
	add(u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0,
		"the user impersonates another identity (as/as-uid/as-groups/as-user-extra)")
	add(c.CertificateAuthority != "", "the cluster reads its CA from a file (certificate-authority); use certificate-authority-data")
	add(c.ProxyURL != "", "the cluster is reached through a proxy (proxy-url)")
	add(c.TLSServerName != "", "the cluster overrides the TLS server name (tls-server-name)")
	return out
}
