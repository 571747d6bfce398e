package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/test/stack"
)

// A field only Argo CD 3.x knows, set by hand on our Application, survives our
// reconciles (we write with v2 structs, which do not have it).
func TestArgoCD3OnlyFieldSurvivesReconciles(t *testing.T) {
	if stack.ArgoCDMajor() == "2" {
		t.Skipf("Argo CD %s has no spec.syncPolicy.automated.enabled (its CRD prunes it)", stack.ArgoCDVersion)
	}
	ctx := context.Background()
	ns := tenantNamespace(t)
	repo, sha := gitRepo(t, map[string]string{
		"v1/configmap.yaml": configMap("from-v1", "1"),
		"v2/configmap.yaml": configMap("from-v2", "2"),
	})
	gd := deploy(t, ns, "fields", repo.URL, "v1", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "Synced at v1", syncedHealthyAt(sha))

	dyn, err := dynamic.NewForConfig(kube.Config)
	require.NoError(t, err)
	apps := dyn.Resource(stack.ApplicationGVR).Namespace(argo.Namespace)
	name := argocd.ApplicationName(string(gd.UID))
	// Set by someone else (an admin, a policy engine) with a merge patch.
	_, err = apps.Patch(ctx, name, types.MergePatchType,
		[]byte(`{"spec":{"syncPolicy":{"automated":{"enabled":true},"retry":{"refresh":true}}}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// Our reconcile rewrites the Application's source.
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(gd), gd))
	patch := client.MergeFrom(gd.DeepCopy())
	gd.Spec.Source.Path = "v2"
	require.NoError(t, k8s.Patch(ctx, gd, patch))
	waitStatus(t, gd, "reconciled at v2", func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.ReconciledState.Source.Path == "v2" && gd.Status.Sync.Status == v1.SyncStatusCodeSynced
	})

	app, err := apps.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	path, _, _ := unstructured.NestedString(app.Object, "spec", "source", "path")
	assert.Equal(t, "v2", path, "our own change was written")
	enabled, found, _ := unstructured.NestedBool(app.Object, "spec", "syncPolicy", "automated", "enabled")
	assert.True(t, found && enabled, "spec.syncPolicy.automated.enabled was dropped by our write")
	refresh, found, _ := unstructured.NestedBool(app.Object, "spec", "syncPolicy", "retry", "refresh")
	assert.True(t, found && refresh, "spec.syncPolicy.retry.refresh was dropped by our write")
}
