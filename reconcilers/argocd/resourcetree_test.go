package argocd

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// Argo CD 3.x by default: status.resources without health, the health in the tree.
func TestMirrorStatusHealthFromTree(t *testing.T) {
	app := &argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
		ResourceHealthSource: argov1alpha1.ResourceHealthLocationAppTree,
		Health:               argov1alpha1.HealthStatus{Status: "Progressing"},
		Resources: []argov1alpha1.ResourceStatus{
			{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings", Status: "Synced"},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web", Status: "Synced"},
			{Version: "v1", Kind: "Service", Namespace: "team-a", Name: "web", Status: "OutOfSync"},
		},
	}}
	require.True(t, HealthInTree(app))
	tree := &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
		{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"},
			Health: &argov1alpha1.HealthStatus{Status: "Progressing", Message: "Waiting for rollout to finish: 0 of 1 updated replicas are available..."}},
		// A Deployment of the same name in another namespace is another resource.
		{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-b", Name: "settings"},
			Health: &argov1alpha1.HealthStatus{Status: "Degraded"}},
		{ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "Service", Namespace: "team-a", Name: "web"},
			Health: &argov1alpha1.HealthStatus{Status: "Healthy"}},
		// Children (no status.resources entry) are not mirrored.
		{ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: "team-a", Name: "web-5d8f"},
			Health: &argov1alpha1.HealthStatus{Status: "Progressing"}},
	}}

	st := MirrorStatus(app, nil, tree)
	require.Len(t, st.Resources, 3)
	assert.Nil(t, st.Resources[0].Health, "a ConfigMap has no health in the tree, so none here")
	require.NotNil(t, st.Resources[1].Health)
	assert.Equal(t, v1.HealthStatusCode("Progressing"), st.Resources[1].Health.Status)
	assert.Contains(t, st.Resources[1].Health.Message, "0 of 1 updated replicas")
	require.NotNil(t, st.Resources[2].Health)
	assert.Equal(t, v1.HealthStatusHealthy, st.Resources[2].Health.Status)

	// Without the tree, nothing is made up.
	for _, r := range MirrorStatus(app, nil, nil).Resources {
		assert.Nil(t, r.Health)
	}
}

// Health in status.resources (2.14, or 3.x with controller.resource.health.persist)
// wins over the tree.
func TestMirrorStatusInlineHealthWins(t *testing.T) {
	app := &argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
		Resources: []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "Service", Namespace: "a", Name: "s",
			Health: &argov1alpha1.HealthStatus{Status: "Healthy"}}},
	}}
	assert.False(t, HealthInTree(app))
	tree := &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
		{ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "Service", Namespace: "a", Name: "s"}, Health: &argov1alpha1.HealthStatus{Status: "Degraded"}},
	}}
	st := MirrorStatus(app, nil, tree)
	assert.Equal(t, v1.HealthStatusHealthy, st.Resources[0].Health.Status)
}
