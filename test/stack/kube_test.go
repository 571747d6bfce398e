package stack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const widgetCRD = `# a comment-only document first
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-crd
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.stack.test.io
spec:
  group: stack.test.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`

// TestKube starts only etcd, kube-apiserver and kube-controller-manager and
// checks CRD installation, the admin kubeconfig and garbage collection.
func TestKube(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := startTestKube(ctx, t, KubeOptions{Name: "kube-test", ControllerManager: true})

	// The admin kubeconfig file works on its own.
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}

	// CRDs: install twice (create, then update), then use.
	f := filepath.Join(t.TempDir(), "crds.yaml")
	if err := os.WriteFile(f, []byte(widgetCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := k.InstallCRDs(ctx, filepath.Dir(f)); err != nil {
			t.Fatalf("InstallCRDs #%d: %v", i+1, err)
		}
	}
	dyn, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "stack.test.io", Version: "v1", Resource: "widgets"}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stack.test.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if _, err := dyn.Resource(gvr).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Widget: %v", err)
	}

	// Garbage collector: deleting an owner removes its dependents.
	owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
	}}}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gcStart := time.Now()
	waitFor(ctx, t, time.Minute, "dependent garbage-collected", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
	t.Logf("garbage collection in %s", time.Since(gcStart).Round(time.Millisecond))

	k.Stop()
	if _, err := os.Stat(k.Dir); !os.IsNotExist(err) && !keepDirs() {
		t.Fatalf("dir %s not removed: %v", k.Dir, err)
	}
	k.Stop() // idempotent
	var buf bytes.Buffer
	k.WriteLogs(&buf)
	if !bytes.Contains(buf.Bytes(), []byte("[kube-test/kube-apiserver]")) {
		t.Fatalf("WriteLogs after Stop lacks apiserver lines:\n%.2000s", buf.String())
	}
}

// startTestKube starts etcd, kube-apiserver and kube-controller-manager for a
// test (skipped without the binaries unless the stack is required), stopped
// at its end, with the component logs printed if it failed.
func startTestKube(ctx context.Context, t *testing.T, o KubeOptions) *Kube {
	t.Helper()
	b := resolveBinaries()
	if err := b.require(b.Etcd, b.KubeAPIServer, b.KubeControllerManager); err != nil {
		if Required() {
			t.Fatalf("%v (%s=1)", err, EnvRequire)
		}
		t.Skipf("kube binaries not available (set %s=1 to fail instead): %v", EnvRequire, err)
	}
	if testing.Short() {
		t.Skip("skipping real stack in -short mode")
	}
	start := time.Now()
	k, err := StartKube(ctx, o)
	if err != nil {
		t.Fatalf("StartKube: %v", err)
	}
	t.Cleanup(k.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			var buf bytes.Buffer
			k.WriteLogs(&buf)
			t.Logf("component logs:\n%s", buf.String())
		}
	})
	t.Logf("kube started in %s", time.Since(start).Round(time.Millisecond))
	return k
}
