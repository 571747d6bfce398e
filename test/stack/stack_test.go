package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestRealStack starts etcd, kube-apiserver, kube-controller-manager and Argo
// CD, has Argo CD sync a ConfigMap from a local Git repo, and checks that
// namespaces (namespace controller), cascading deletes, service-account
// tokens and Argo CD logins work.
func TestRealStack(t *testing.T) {
	if _, err := Binaries(); err != nil {
		if Required() {
			t.Fatalf("%v (%s=1)", err, EnvRequire)
		}
		t.Skipf("real test stack not available (set %s=1 to fail instead): %v", EnvRequire, err)
	}
	if testing.Short() {
		t.Skip("skipping real stack in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	start := time.Now()
	k, err := StartKube(ctx, KubeOptions{
		Name:              "local",
		ControllerManager: true,
		ExtraTokens:       map[string]TokenUser{"viewer-token": {Name: "viewer", Groups: []string{"viewers"}}},
	})
	if err != nil {
		t.Fatalf("StartKube: %v", err)
	}
	t.Cleanup(k.Stop)
	kubeUp := time.Since(start)

	var argo *ArgoCD
	t.Cleanup(func() {
		if t.Failed() {
			var buf bytes.Buffer
			k.WriteLogs(&buf)
			argo.WriteLogs(&buf)
			t.Logf("component logs:\n%s", buf.String())
		}
	})

	argo, err = StartArgoCD(ctx, k, ArgoOptions{})
	if err != nil {
		t.Fatalf("StartArgoCD: %v", err)
	}
	t.Cleanup(argo.Stop)
	t.Logf("stack started in %s (kube %s, argo cd %s)", time.Since(start).Round(time.Millisecond),
		kubeUp.Round(time.Millisecond), (time.Since(start) - kubeUp).Round(time.Millisecond))

	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}

	// The extra static token authenticates (and RBAC forbids it everything).
	vcs, err := kubernetes.NewForConfig(k.TokenConfig("viewer-token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vcs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("viewer listing namespaces: got %v, want Forbidden", err)
	}
	if b, err := k.KubeconfigFor("viewer-token"); err != nil || !bytes.Contains(b, []byte("certificate-authority-data")) {
		t.Fatalf("KubeconfigFor: %v\n%s", err, b)
	}

	ns := "stack-test-" + randomHex(3)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// serviceaccount-token-controller fills token Secrets.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "robot"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "service account token Secret filled", func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, "robot-token", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(s.Data[corev1.ServiceAccountTokenKey]) > 0 && len(s.Data[corev1.ServiceAccountRootCAKey]) > 0, nil
	})

	// Git repo with one ConfigMap.
	repo, err := NewGitRepo(t.TempDir(), "apps")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := repo.Commit(map[string]string{"app/configmap.yaml": configMapYAML("hello")}, "add configmap")
	if err != nil {
		t.Fatal(err)
	}

	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata": map[string]any{
			"name":       "stack-test",
			"namespace":  argo.Namespace,
			"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
		},
		"spec": map[string]any{
			"project": "default",
			"source": map[string]any{
				"repoURL":        repo.URL,
				"targetRevision": "main",
				"path":           "app",
			},
			"destination": map[string]any{
				"server":    "https://kubernetes.default.svc",
				"namespace": ns,
			},
			"syncPolicy": map[string]any{
				"automated": map[string]any{"prune": true, "selfHeal": true},
			},
		},
	}}
	appStart := time.Now()
	if _, err := dyn.Resource(ApplicationGVR).Namespace(argo.Namespace).Create(ctx, app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSynced := func(what, wantSHA, wantGreeting string) {
		waitFor(ctx, t, 2*time.Minute, what, func(ctx context.Context) (bool, error) {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "stack-test", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, errors.New("ConfigMap not there yet")
			} else if err != nil {
				return false, err
			}
			if cm.Data["greeting"] != wantGreeting {
				return false, fmt.Errorf("greeting %q", cm.Data["greeting"])
			}
			u, err := dyn.Resource(ApplicationGVR).Namespace(argo.Namespace).Get(ctx, "stack-test", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
			rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
			health, _, _ := unstructured.NestedString(u.Object, "status", "health", "status")
			if sync != "Synced" || health != "Healthy" || rev != wantSHA {
				return false, fmt.Errorf("app sync=%q health=%q revision=%q", sync, health, rev)
			}
			return true, nil
		})
	}
	waitSynced("Application synced and healthy", sha, "hello")
	t.Logf("Application created -> Synced/Healthy in %s", time.Since(appStart).Round(time.Millisecond))
	checkAccounts(ctx, t, argo)

	// Push a change and ask for a refresh.
	pushed := time.Now()
	sha, err = repo.Commit(map[string]string{"app/configmap.yaml": configMapYAML("hello again")}, "update configmap")
	if err != nil {
		t.Fatal(err)
	}
	if err := argo.Refresh(ctx, "", "stack-test"); err != nil {
		t.Fatal(err)
	}
	waitSynced("change pushed to Git applied", sha, "hello again")
	t.Logf("git push + refresh -> applied in %s", time.Since(pushed).Round(time.Millisecond))

	// Cascading delete of the Application removes its resources.
	deleted := time.Now()
	if err := dyn.Resource(ApplicationGVR).Namespace(argo.Namespace).Delete(ctx, "stack-test", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, time.Minute, "Application and its ConfigMap deleted", func(ctx context.Context) (bool, error) {
		if _, err := dyn.Resource(ApplicationGVR).Namespace(argo.Namespace).Get(ctx, "stack-test", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("Application still there (%v)", err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "stack-test", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("ConfigMap still there (%v)", err)
		}
		return true, nil
	})
	t.Logf("Application cascading delete in %s", time.Since(deleted).Round(time.Millisecond))

	// The namespace controller finishes namespace deletion.
	deleted = time.Now()
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, time.Minute, "namespace deleted", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("namespace phase %s", n.Status.Phase)
	})
	t.Logf("namespace deleted in %s", time.Since(deleted).Round(time.Millisecond))
}

func configMapYAML(greeting string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: stack-test
data:
  greeting: %q
`, greeting)
}

// waitFor polls cond every 200ms until it returns true; on timeout it fails
// the test with the last error cond returned.
func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not done after %s: %v (last: %v)", what, timeout, err, last)
	}
}
