package environment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

func envWith(mutate func(*as.Environment)) *as.Environment {
	env := &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "prod", UID: "env-uid"}}
	if mutate != nil {
		mutate(env)
	}
	return env
}

func withCredentials(c as.KubernetesClusterCredentials) func(*as.Environment) {
	return func(env *as.Environment) {
		env.Spec.UnstableConfigurationFields = &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: c}
	}
}

func TestCredentialsSource(t *testing.T) {
	good := as.KubernetesClusterCredentials{APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "creds",
		TargetNamespace: "web", AllowInsecureSkipTLSVerify: true, Namespaces: []string{"web", "db"}, ClusterResources: true}
	withClaim := func(env *as.Environment) { env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "prod-dtc" }
	tests := []struct {
		name       string
		env        *as.Environment
		want       *Source
		wantReason string
		wantMsg    string
	}{
		{name: "no unstableConfigurationFields: local namespace", env: envWith(nil)},
		{name: "only clusterType: local namespace", env: envWith(func(env *as.Environment) {
			env.Spec.UnstableConfigurationFields = &as.UnstableEnvironmentConfiguration{ClusterType: as.ConfigurationClusterTypeOpenShift}
		})},
		{name: "credentials", env: envWith(withCredentials(good)), want: &Source{APIURL: good.APIURL, CredentialsSecret: "creds",
			AllowInsecureSkipTLSVerify: true, Namespaces: []string{"web", "db"}, ClusterResources: true}},
		{name: "claim and credentials", env: envWith(func(env *as.Environment) { withClaim(env); withCredentials(good)(env) }),
			wantReason: as.EnvironmentReasonInvalidEnvironment, wantMsg: "cannot have both DeploymentTargetClaim and credentials configuration set"},
		{name: "http apiURL", env: envWith(withCredentials(as.KubernetesClusterCredentials{APIURL: "http://api.example.test", ClusterCredentialsSecret: "creds"})),
			wantReason: as.EnvironmentReasonUnsupportedAPIURL, wantMsg: "must be an https:// URL"},
		{name: "apiURL with a query", env: envWith(withCredentials(as.KubernetesClusterCredentials{APIURL: "https://api.example.test?managedEnvironment=x", ClusterCredentialsSecret: "creds"})),
			wantReason: as.EnvironmentReasonUnsupportedAPIURL, wantMsg: "must not have ? or &"},
		{name: "empty apiURL", env: envWith(withCredentials(as.KubernetesClusterCredentials{ClusterCredentialsSecret: "creds"})),
			wantReason: as.EnvironmentReasonInvalidEnvironment, wantMsg: "apiURL is empty"},
		{name: "empty secret", env: envWith(withCredentials(as.KubernetesClusterCredentials{APIURL: good.APIURL})),
			wantReason: as.EnvironmentReasonInvalidEnvironment, wantMsg: "clusterCredentialsSecret is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := credentialsSource(tc.env, nil, nil)
			refusal := kernel.AsRefusal(err)
			if refusal == nil {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, src)
			if tc.wantReason == "" {
				assert.Nil(t, refusal)
				return
			}
			require.NotNil(t, refusal)
			assert.Equal(t, tc.wantReason, refusal.Reason)
			assert.Contains(t, refusal.Message, tc.wantMsg)
		})
	}
}

func TestDesiredObjects(t *testing.T) {
	env := envWith(nil)
	src := &Source{APIURL: "https://api.example.test:6443", CredentialsSecret: "creds", AllowInsecureSkipTLSVerify: true,
		Namespaces: []string{"web"}, ClusterResources: true}
	me := desiredManagedEnvironment(env, src, "42")
	assert.Equal(t, "managed-environment-prod", me.Name)
	assert.Equal(t, "jane", me.Namespace)
	assert.Equal(t, "managed-environment-secret-prod", me.Spec.ClusterCredentialsSecret, "the ManagedEnvironment reads our copy, not the user's Secret")
	assert.Equal(t, src.APIURL, me.Spec.APIURL)
	assert.True(t, me.Spec.AllowInsecureSkipTLSVerify)
	assert.Equal(t, []string{"web"}, me.Spec.Namespaces)
	assert.True(t, me.Spec.ClusterResources)
	assert.False(t, me.Spec.CreateNewServiceAccount)
	assert.Equal(t, "42", me.Annotations[AnnotationCredentialsVersion])
	assert.True(t, ownedBy(me, "env-uid"))
	assert.False(t, ownedBy(me, "other-uid"))
	assert.True(t, ownedByName(me, "jane", "prod"))
	assert.False(t, ownedByName(me, "jane", "dev"))

	s := desiredSecret(env, []byte("kubeconfig bytes"))
	assert.Equal(t, "managed-environment-secret-prod", s.Name)
	assert.Equal(t, "managed-gitops.redhat.com/managed-environment", string(s.Type))
	assert.Equal(t, map[string][]byte{"kubeconfig": []byte("kubeconfig bytes")}, s.Data)
	assert.True(t, ownedBy(s, "env-uid"))

	// Our labels without the controller reference, or the reverse, are not ours.
	s.OwnerReferences = nil
	assert.False(t, ownedBy(s, "env-uid"))
	assert.False(t, ownedByName(s, "jane", "prod"))
	me.Labels[ownership.LabelManagedBy] = "someone-else"
	assert.False(t, ownedBy(me, "env-uid"))
}
