package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// Issue 21 defect 4, against Argo CD: an admin's cluster is named
// <tenant>-east, and the tenant has a ManagedEnvironment "east". The tenant's
// cluster used to be named <tenant>-east too, and Argo CD refused every admin
// Application with destination.name <tenant>-east (two clusters of one name).
// Now the admin's Application deploys to the admin's cluster as before.
func TestManagedEnvironmentLeavesAdminClusterNamesAlone(t *testing.T) {
	ctx := context.Background()
	tenant := tenantNamespace(t)
	env := remoteEnvironment(t, tenant, "east", "east-creds", remoteAdminTokenFor(t), nil)
	waitEnvironment(t, env, "connected", connected)

	// The admin's own cluster (global, the remote API server under another server URL).
	adminName := tenant + "-east"
	config, err := json.Marshal(argov1alpha1.ClusterConfig{BearerToken: remoteAdminToken,
		TLSClientConfig: argov1alpha1.TLSClientConfig{CAData: remoteKube.CAData}})
	require.NoError(t, err)
	admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Namespace, Name: "admin-cluster-" + rand.String(5),
		Labels: map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster}},
		Data: map[string][]byte{"name": []byte(adminName), "server": []byte(remoteKube.URL + "?admin=east"), "config": config}}
	require.NoError(t, k8s.Create(ctx, admin))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), admin) })

	target := remoteNamespace(t, "admin-east")
	repo, _ := gitRepo(t, map[string]string{"app/configmap.yaml": configMap("settings", "admin")})
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Namespace, Name: "admin-east-" + rand.String(5)},
		Spec: argov1alpha1.ApplicationSpec{Project: "default",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: repo.URL, Path: "app"},
			Destination: argov1alpha1.ApplicationDestination{Name: adminName, Namespace: target},
			SyncPolicy:  &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{}}}}
	require.NoError(t, k8s.Create(ctx, app))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), app) })

	require.Eventually(t, func() bool {
		_, err := getRemoteConfigMap(target, "settings")
		return err == nil
	}, deployWait, poll, "the admin's Application did not deploy to the admin's cluster %s", adminName)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(app), app))
	for _, c := range app.Status.Conditions {
		assert.False(t, strings.Contains(c.Message, "same name"), "%s: %s", c.Type, c.Message)
	}
	for _, s := range clusterSecrets(t, env) {
		assert.True(t, strings.HasPrefix(string(s.Data["name"]), argocd.ClusterNamePrefix), string(s.Data["name"]))
	}
}
