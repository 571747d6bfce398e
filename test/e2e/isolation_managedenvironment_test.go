package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// connectionRefused matches a ManagedEnvironment whose connection condition is
// False with reason and msg in its message.
func connectionRefused(reason, msg string) func(client.Object) bool {
	return func(obj client.Object) bool {
		env, ok := obj.(*v1.GitOpsDeploymentManagedEnvironment)
		if !ok {
			return false
		}
		for _, c := range env.Status.Conditions {
			if c.Type == v1.ManagedEnvironmentConditionConnectionInitializationSucceeded &&
				c.Status == metav1.ConditionFalse && c.Reason == reason && strings.Contains(c.Message, msg) {
				return true
			}
		}
		return false
	}
}

// kubeconfigYAML is a one-context kubeconfig for server; user is the YAML of
// its user (indented under "user:"), cluster extra lines under "cluster:".
func kubeconfigYAML(server, user, cluster string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
%s
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
users:
- name: u
  user:
%s
`, server, cluster, user)
}

func credentialsSecret(ns, name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, StringData: data}
}

// badEnvironment is a case whose environment, in the tenant's namespace, uses
// Secret "creds" with kubeconfig kc (created in the tenant's namespace unless
// kc is empty) and apiURL (the e2e API server's when empty).
func badEnvironment(name, reason, msg string, mut func(env *v1.GitOpsDeploymentManagedEnvironment), kc func() string) isolationCase {
	return isolationCase{
		name: name,
		setup: func(t *testing.T, tenant, _ string) {
			if kc == nil {
				return
			}
			require.NoError(t, k8s.Create(context.Background(), credentialsSecret(tenant, "creds", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": kc()})))
		},
		object: func(tenant, _ string) client.Object {
			env := managedEnvironment(tenant, "env", "creds")
			env.Spec.APIURL = kube.Config.Host
			if mut != nil {
				mut(env)
			}
			return env
		},
		condition: connectionRefused(reason, msg),
	}
}

func managedEnvironmentIsolationCases() []isolationCase {
	token := func(purpose string) string { return "    token: " + canary(purpose) }
	server := func() string { return kube.Config.Host }
	return []isolationCase{
		{name: "environment using a Secret that exists only in the neighbour's namespace",
			setup: func(t *testing.T, _, neighbour string) {
				kc, err := kube.KubeconfigFor(canary("neighbour-token"))
				require.NoError(t, err)
				require.NoError(t, k8s.Create(context.Background(), credentialsSecret(neighbour, "theirs", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
			},
			object: func(tenant, _ string) client.Object {
				env := managedEnvironment(tenant, "env", "theirs")
				env.Spec.APIURL = kube.Config.Host
				return env
			},
			condition: connectionRefused(v1.ManagedEnvironmentReasonSecretNotFound, "could not be retrieved")},
		{name: "environment whose Secret has the wrong type",
			setup: func(t *testing.T, tenant, _ string) {
				require.NoError(t, k8s.Create(context.Background(), credentialsSecret(tenant, "creds", corev1.SecretTypeOpaque,
					map[string]string{"kubeconfig": kubeconfigYAML(server(), token("opaque"), "")})))
			},
			object: func(tenant, _ string) client.Object {
				env := managedEnvironment(tenant, "env", "creds")
				env.Spec.APIURL = kube.Config.Host
				return env
			},
			condition: connectionRefused(v1.ManagedEnvironmentReasonInvalidSecretType, "invalid secret type")},
		{name: "environment whose Secret has no kubeconfig",
			setup: func(t *testing.T, tenant, _ string) {
				require.NoError(t, k8s.Create(context.Background(), credentialsSecret(tenant, "creds", v1.ManagedEnvironmentSecretType,
					map[string]string{"token": canary("no-kubeconfig")})))
			},
			object: func(tenant, _ string) client.Object {
				env := managedEnvironment(tenant, "env", "creds")
				env.Spec.APIURL = kube.Config.Host
				return env
			},
			condition: connectionRefused(v1.ManagedEnvironmentReasonMissingKubeConfigField, "missing kubeconfig")},
		{name: "environment with a Secret name that climbs directories",
			object: func(tenant, _ string) client.Object {
				env := managedEnvironment(tenant, "env", "../kube-system/creds")
				env.Spec.APIURL = kube.Config.Host
				return env
			},
			condition: connectionRefused(v1.ManagedEnvironmentReasonSecretNotFound, "could not be retrieved")},
		badEnvironment("kubeconfig that is not YAML", v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, "unable to parse",
			nil, func() string { return "{{{ not: [yaml " + canary("garbage") }),
		badEnvironment("kubeconfig with an exec plugin", v1.ManagedEnvironmentReasonUnsupportedCredentials, "exec",
			nil, func() string {
				return kubeconfigYAML(server(), "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch /tmp/pwned']}", "")
			}),
		badEnvironment("kubeconfig with an auth-provider", v1.ManagedEnvironmentReasonUnsupportedCredentials, "auth-provider",
			nil, func() string {
				return kubeconfigYAML(server(), "    auth-provider: {name: oidc, config: {id-token: "+canary("oidc")+"}}", "")
			}),
		badEnvironment("kubeconfig reading a token file", v1.ManagedEnvironmentReasonUnsupportedCredentials, "tokenFile",
			nil, func() string {
				return kubeconfigYAML(server(), "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "")
			}),
		badEnvironment("kubeconfig with client certificate files", v1.ManagedEnvironmentReasonUnsupportedCredentials, "client-certificate",
			nil, func() string {
				return kubeconfigYAML(server(), "    client-certificate: /etc/kubernetes/pki/admin.crt\n    client-key: /etc/kubernetes/pki/admin.key", "")
			}),
		badEnvironment("kubeconfig impersonating another user", v1.ManagedEnvironmentReasonUnsupportedCredentials, "impersonates",
			nil, func() string {
				return kubeconfigYAML(server(), token("impersonate")+"\n    as: system:admin", "")
			}),
		badEnvironment("kubeconfig reading the CA from a file", v1.ManagedEnvironmentReasonUnsupportedCredentials, "certificate-authority",
			nil, func() string {
				return kubeconfigYAML(server(), token("ca-file"), "    certificate-authority: /etc/kubernetes/pki/ca.crt")
			}),
		badEnvironment("kubeconfig through a proxy", v1.ManagedEnvironmentReasonUnsupportedCredentials, "proxy-url",
			nil, func() string {
				return kubeconfigYAML(server(), token("proxy"), "    proxy-url: http://attacker.example.com:3128")
			}),
		badEnvironment("kubeconfig for another server than apiURL", v1.ManagedEnvironmentReasonUnableToLocateContext, "did not have a cluster entry",
			nil, func() string { return kubeconfigYAML("https://10.0.0.1:6443", token("other-server"), "") }),
		badEnvironment("apiURL over plain http", v1.ManagedEnvironmentReasonUnsupportedAPIURL, "https://",
			func(env *v1.GitOpsDeploymentManagedEnvironment) { env.Spec.APIURL = "http://127.0.0.1:6443" },
			func() string { return kubeconfigYAML("http://127.0.0.1:6443", token("http"), "") }),
		badEnvironment("apiURL with a query smuggling a second server", v1.ManagedEnvironmentReasonUnsupportedAPIURL, "? or &",
			func(env *v1.GitOpsDeploymentManagedEnvironment) {
				env.Spec.APIURL = kube.Config.Host + "?server=https://10.0.0.1"
			}, nil),
		badEnvironment("apiURL with credentials in it", v1.ManagedEnvironmentReasonUnsupportedAPIURL, "credentials",
			func(env *v1.GitOpsDeploymentManagedEnvironment) {
				env.Spec.APIURL = strings.Replace(kube.Config.Host, "https://", "https://admin:"+canary("url-password")+"@", 1)
			}, nil),
		badEnvironment("namespaces list with an invalid name", v1.ManagedEnvironmentReasonInvalidNamespaceList, "invalid namespace",
			func(env *v1.GitOpsDeploymentManagedEnvironment) {
				env.Spec.Namespaces = []string{"ok", "Not_A_Namespace"}
			},
			func() string { return kubeconfigYAML(server(), token("bad-namespaces"), "") }),
		badEnvironment("token the cluster does not accept", v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, "",
			nil, func() string {
				kc, err := kube.KubeconfigFor(canary("rejected-token"))
				if err != nil {
					panic(err)
				}
				return string(kc)
			}),
	}
}
