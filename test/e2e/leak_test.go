package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The leak canary: every credential a test plants (tokens, passwords, keys)
// contains canaryPrefix. After the whole run, checkLeaks fails the run if the
// prefix shows up in any component's log, any Event, or any status or
// annotation of any object: the only place a credential may live is a Secret's
// data.
var (
	canaryPrefix = "canary" + randomHex(8)
	canaryMu     sync.Mutex
	canaryUsed   int
)

// canary returns a fresh credential value that the leak check watches for.
func canary(purpose string) string {
	canaryMu.Lock()
	canaryUsed++
	canaryMu.Unlock()
	return canaryPrefix + "-" + purpose + "-" + randomHex(8)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// checkLeaks returns a description of every place the canary leaked to.
func checkLeaks(ctx context.Context, logDirs ...string) ([]string, error) {
	var leaks []string
	for _, dir := range logDirs {
		err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || !strings.HasSuffix(path, ".log") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, canaryPrefix) {
					leaks = append(leaks, fmt.Sprintf("log %s:%d", path, i+1))
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var events corev1.EventList
	if err := k8s.List(ctx, &events); err != nil {
		return nil, err
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, canaryPrefix) || strings.Contains(e.Reason, canaryPrefix) {
			leaks = append(leaks, fmt.Sprintf("event %s/%s", e.Namespace, e.Name))
		}
	}
	// Status and annotations of every object of every kind that could carry it.
	kinds := []schema.GroupVersionKind{
		{Group: "managed-gitops.redhat.com", Version: "v1alpha1", Kind: "GitOpsDeploymentList"},
		{Group: "managed-gitops.redhat.com", Version: "v1alpha1", Kind: "GitOpsDeploymentSyncRunList"},
		{Group: "managed-gitops.redhat.com", Version: "v1alpha1", Kind: "GitOpsDeploymentRepositoryCredentialsList"},
		{Group: "managed-gitops.redhat.com", Version: "v1alpha1", Kind: "GitOpsDeploymentManagedEnvironmentList"},
		{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationList"},
		{Group: "argoproj.io", Version: "v1alpha1", Kind: "AppProjectList"},
		{Group: "", Version: "v1", Kind: "SecretList"},
		{Group: "", Version: "v1", Kind: "ConfigMapList"},
	}
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := k8s.List(ctx, list, client.InNamespace("")); err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for _, item := range list.Items {
			parts := map[string]any{"annotations": item.GetAnnotations(), "labels": item.GetLabels(), "status": item.Object["status"]}
			// Argo CD objects' specs are written by us; a tenant CR's spec is
			// what the tenant wrote (a test may plant a canary there, e.g. a
			// password in an apiURL, to see that it is not copied anywhere).
			if gvk.Group == "argoproj.io" {
				parts["spec"] = item.Object["spec"]
			}
			b, _ := json.Marshal(parts)
			if strings.Contains(string(b), canaryPrefix) {
				leaks = append(leaks, fmt.Sprintf("%s %s/%s", strings.TrimSuffix(gvk.Kind, "List"), item.GetNamespace(), item.GetName()))
			}
		}
	}
	return leaks, nil
}

// TestLeakCheckFindsAPlantedLeak proves the final leak check can fail: a
// canary put where credentials must never be is found.
func TestLeakCheckFindsAPlantedLeak(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leaky",
		Annotations: map[string]string{"note": "token " + canary("selftest")}}}
	require.NoError(t, k8s.Create(ctx, cm))
	leaks, err := checkLeaks(ctx)
	require.NoError(t, err)
	assert.Contains(t, leaks, "ConfigMap "+ns+"/leaky")
	require.NoError(t, k8s.Delete(ctx, cm))
	waitDeleted(t, cm)
}

func waitDeleted(t *testing.T, obj client.Object) {
	t.Helper()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	}, deployWait, poll, "%s was not deleted", obj.GetName())
}
