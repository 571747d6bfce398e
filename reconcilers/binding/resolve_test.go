package binding

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	mg "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

func TestManagedDestination(t *testing.T) {
	const apiURL = "https://api.example.test:6443"
	env := func(targetNS string) *as.Environment {
		return &as.Environment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "prod", UID: "env-uid"},
			Spec: as.EnvironmentSpec{UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{
				KubernetesClusterCredentials: as.KubernetesClusterCredentials{APIURL: apiURL, ClusterCredentialsSecret: "creds", TargetNamespace: targetNS}}},
		}
	}
	// me is a connected ManagedEnvironment controlled by the Environment, changed by mutate.
	me := func(mutate func(*mg.GitOpsDeploymentManagedEnvironment)) *mg.GitOpsDeploymentManagedEnvironment {
		m := &mg.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: ownership.ManagedEnvironmentName("prod"), UID: "me-uid", Generation: 2,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: as.GroupVersion.String(), Kind: "Environment", Name: "prod", UID: "env-uid", Controller: ptr.To(true)}}},
			Spec: mg.GitOpsDeploymentManagedEnvironmentSpec{APIURL: apiURL, ClusterCredentialsSecret: "managed-environment-secret-prod"},
			Status: mg.GitOpsDeploymentManagedEnvironmentStatus{Conditions: []metav1.Condition{{
				Type: mg.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: metav1.ConditionTrue, Reason: "Succeeded", ObservedGeneration: 2}}},
		}
		if mutate != nil {
			mutate(m)
		}
		return m
	}
	tests := []struct {
		name       string
		env        *as.Environment
		me         *mg.GitOpsDeploymentManagedEnvironment
		wantServer string
		wantNS     string
	}{
		{name: "connected, targetNamespace", env: env("web"), me: me(nil), wantServer: argocd.ClusterServer(apiURL, "me-uid"), wantNS: "web"},
		{name: "connected, no targetNamespace: the Environment's namespace", env: env(""), me: me(nil), wantServer: argocd.ClusterServer(apiURL, "me-uid"), wantNS: "jane"},
		{name: "no ManagedEnvironment yet", env: env("web")},
		{name: "not connected", env: env("web"), me: me(func(m *mg.GitOpsDeploymentManagedEnvironment) { m.Status.Conditions[0].Status = metav1.ConditionFalse })},
		{name: "no condition yet", env: env("web"), me: me(func(m *mg.GitOpsDeploymentManagedEnvironment) { m.Status.Conditions = nil })},
		{name: "connection verified for an older spec", env: env("web"), me: me(func(m *mg.GitOpsDeploymentManagedEnvironment) { m.Generation = 3 })},
		{name: "still the old apiURL", env: env("web"), me: me(func(m *mg.GitOpsDeploymentManagedEnvironment) { m.Spec.APIURL = "https://old.example.test:6443" })},
		{name: "not controlled by the Environment (someone else's of that name)", env: env("web"), me: me(func(m *mg.GitOpsDeploymentManagedEnvironment) { m.OwnerReferences = nil })},
		{name: "controlled by an earlier Environment of that name", env: env("web"), me: me(func(m *mg.GitOpsDeploymentManagedEnvironment) { m.OwnerReferences[0].UID = "old-env-uid" })},
		{name: "being deleted", env: env("web"), me: me(func(m *mg.GitOpsDeploymentManagedEnvironment) { m.DeletionTimestamp = ptr.To(metav1.Now()) })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.env.Spec.UnstableConfigurationFields
			server, ns, err := managedDestination(tc.env, tc.me, c.APIURL, c.TargetNamespace)
			if tc.wantServer == "" {
				var inputErr *kernel.Refusal
				require.True(t, errors.As(err, &inputErr), "want a refusal, got %v", err)
				assert.Contains(t, inputErr.Message, `is not connected yet (GitOpsDeploymentManagedEnvironment "managed-environment-prod")`)
				assert.Empty(t, server)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantServer, server)
			assert.Equal(t, tc.wantNS, ns)
		})
	}
}

func TestDestinationWithoutCredentialsIsLocal(t *testing.T) {
	for name, u := range map[string]*as.UnstableEnvironmentConfiguration{
		"no unstableConfigurationFields": nil,
		"only clusterType":               {ClusterType: as.ConfigurationClusterTypeKubernetes},
	} {
		t.Run(name, func(t *testing.T) {
			env := &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "dev"}, Spec: as.EnvironmentSpec{UnstableConfigurationFields: u}}
			// No reader: an Environment without credentials reads nothing.
			server, ns, err := destination(t.Context(), nil, env)
			require.NoError(t, err)
			assert.Equal(t, argocd.LocalServer, server)
			assert.Equal(t, "jane", ns)
		})
	}
}
