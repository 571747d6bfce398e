//go:build !unit

package admission

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readDocs returns the YAML documents of file as objects.
func readDocs(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return decodeDocs(t, file, data)
}

func decodeDocs(t *testing.T, file string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, file)
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// The examples of the API contract (the seeds: the API document and ADR-0008)
// stay valid: each is created, as a tenant would with kubectl, against the
// CRDs as shipped, with every admission check on.
func TestSeedExamplesAreAdmitted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "seeds-*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	kinds := map[string]int{}
	for i, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ctx := context.Background()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "seeds-" + string(rune('a'+i))}}
			require.NoError(t, k8s.Create(ctx, ns))
			for _, u := range readDocs(t, file) {
				clusterScoped := u.GetKind() == "DeploymentTargetClass"
				if !clusterScoped {
					u.SetNamespace(ns.Name)
				}
				kinds[u.GetKind()]++
				if assert.NoError(t, k8s.Create(ctx, u), "%s %s", u.GetKind(), u.GetName()) && clusterScoped {
					// Cluster-scoped and immutable: the other file has its own version.
					t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(k8s.Delete(ctx, u))) })
				}
			}
		})
	}
	for _, kind := range []string{
		"GitOpsDeployment", "GitOpsDeploymentManagedEnvironment", "GitOpsDeploymentRepositoryCredentials", "GitOpsDeploymentSyncRun",
		"Environment", "Snapshot", "SnapshotEnvironmentBinding", "PromotionRun", "DeploymentTargetClaim", "DeploymentTarget", "DeploymentTargetClass",
	} {
		assert.Positive(t, kinds[kind], "no seed example of %s was applied", kind)
	}
}

// The samples of manifests/samples (what `make demo` applies, its local
// file:// repository in place of REPO_URL) are admitted too.
func TestSamplesAreAdmitted(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "samples"}}
	require.NoError(t, k8s.Create(ctx, ns))
	files, err := filepath.Glob(filepath.Join("..", "..", "manifests", "samples", "*.yaml"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join("..", "..", "manifests", "samples", "*", "*.yaml"))
	require.NoError(t, err)
	n := 0
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		data = bytes.ReplaceAll(data, []byte("REPO_URL"), []byte("file:///tmp/gitops-service-demo/repo.git"))
		for _, u := range decodeDocs(t, file, data) {
			if u.GetKind() != "DeploymentTargetClass" {
				u.SetNamespace(ns.Name)
			}
			n++
			assert.NoError(t, k8s.Create(ctx, u, client.DryRunAll), "%s: %s %s", file, u.GetKind(), u.GetName())
		}
	}
	require.GreaterOrEqual(t, n, 13)
}
