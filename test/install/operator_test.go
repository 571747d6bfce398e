package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/test/stack"
)

func needOperator(t *testing.T) {
	t.Helper()
	if _, err := stack.ArgoCDOperatorDir(); err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the Argo CD operator built by hack/build-argocd-operator.sh:", err)
	}
}

// The platform's ArgoCD resource: its own argocd-cm keys (another proxy
// extension, switched on by the platform, with the account proxyUser that
// uses it and the policy of proxyUserPolicy("metrics"); its backend's URL is
// replaced by the test's; its reconciliation timeout), a controller flag, its
// RBAC policy, and entries of its own in every list our
// manifests/operator/argocd-gitops-service.yaml sets: flags, a volume and its
// mount and an environment variable of argocd-server, a flag and an
// environment variable of the applicationset controller.
const platformArgoCD = `apiVersion: argoproj.io/v1beta1
kind: ArgoCD
metadata:
  name: argocd
  namespace: argocd
spec:
  extraConfig:
    timeout.reconciliation: 240s
    extension.config.metrics: |
      services:
      - url: http://argocd-metrics-server:9003
    accounts.platform-user: login
  cmdParams:
    controller.status.processors: "30"
    server.enable.proxy.extension: "true"
  rbac:
    policy: |
      g, platform, role:admin
      p, platform-user, applications, get, platform/*, allow
      p, platform-user, extensions, invoke, metrics, allow
    defaultPolicy: role:readonly
  server:
    extraCommandArgs:
    - --enable-proxy-extension
    - --insecure
    env:
    - name: PLATFORM_SETTING
      value: kept
    volumes:
    - name: platform-plugins
      emptyDir: {}
    volumeMounts:
    - name: platform-plugins
      mountPath: /tmp/platform-plugins
  applicationSet:
    extraCommandArgs:
    - --loglevel=debug
    env:
    - name: PLATFORM_APPSET
      value: kept
`

// poll calls check every half second until it returns nil or timeout passes,
// then fails the test with check's last error; it returns how long it took.
func poll(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	for time.Since(start) < timeout && ctx.Err() == nil {
		if last = check(); last == nil {
			return time.Since(start)
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(t, last, "%s: not within %s", what, timeout)
	return time.Since(start)
}

// The README's operator block run verbatim against an Argo CD made by the Argo
// CD operator's real controller (built from ../shared/vendor/argocd-operator
// and run against the test stack's kube-apiserver): the operator writes our
// keys into argocd-cm and argocd-cmd-params-cm from the ArgoCD resource, and
// our flag, volume and mount into argocd-server; every setting of the
// platform's stays; the key the sidecar writes at run time and the admin key
// survive its reconciles; a key of ours removed by hand comes back by itself;
// the stack's argocd-server answers GET /api/v1/settings; the uninstall
// removes exactly ours.
func TestOperatorInstallPath(t *testing.T) {
	bins := needStack(t)
	needOperator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-operator"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	op, err := stack.StartArgoCDOperator(ctx, kube, ns)
	require.NoError(t, err)
	defer op.Stop()
	defer func() {
		if t.Failed() {
			t.Logf("operator log (last lines):\n%s", op.Tail(60))
		}
	}()

	// The other extension's backend is real, so that its route through argocd-server is checked.
	metrics := stack.StartExtensionBackend()
	defer metrics.Close()
	argocd := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(strings.Replace(platformArgoCD, metricsBackendURL, metrics.URL, 1)), &argocd.Object))
	require.NoError(t, c.Create(ctx, argocd))
	cm := func(name string) (*corev1.ConfigMap, error) {
		var m corev1.ConfigMap
		return &m, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m)
	}
	theirs := map[string]map[string]string{
		"argocd-cm":            {"timeout.reconciliation": "240s", "extension.config.metrics": otherExtensionConfig(metrics), "accounts." + proxyUser: "login"},
		"argocd-cmd-params-cm": {"controller.status.processors": "30", "server.enable.proxy.extension": "true"},
		"argocd-rbac-cm":       {"policy.csv": "g, platform, role:admin\n" + proxyUserPolicy("metrics"), "policy.default": "role:readonly"},
	}
	has := func(want map[string]map[string]string) error {
		for name, data := range want {
			m, err := cm(name)
			if err != nil {
				return err
			}
			for k, v := range data {
				if m.Data[k] != v {
					return fmt.Errorf("%s %s = %q, want %q", name, k, m.Data[k], v)
				}
			}
			if m.Labels["app.kubernetes.io/part-of"] != "argocd" {
				return fmt.Errorf("%s lost the label app.kubernetes.io/part-of=argocd: %v", name, m.Labels)
			}
		}
		return nil
	}
	server := func() (*appsv1.Deployment, error) {
		var d appsv1.Deployment
		return &d, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-server"}, &d)
	}
	appset := func() (*corev1.Container, error) {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-applicationset-controller"}, &d); err != nil {
			return nil, err
		}
		return &d.Spec.Template.Spec.Containers[0], nil
	}
	appsetKept := func() error {
		ctr, err := appset()
		if err != nil {
			return err
		}
		if !slices.Contains(append(ctr.Command, ctr.Args...), "--loglevel=debug") {
			return fmt.Errorf("the applicationset controller lost the platform's --loglevel=debug: %v", ctr.Command)
		}
		if !slices.Contains(ctr.Env, corev1.EnvVar{Name: "PLATFORM_APPSET", Value: "kept"}) {
			return fmt.Errorf("the applicationset controller lost the platform's env PLATFORM_APPSET")
		}
		return nil
	}
	serverEnvKept := func() error {
		d, err := server()
		if err != nil {
			return err
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(ctr.Env, corev1.EnvVar{Name: "PLATFORM_SETTING", Value: "kept"}) {
			return fmt.Errorf("argocd-server lost the platform's env PLATFORM_SETTING")
		}
		for _, flag := range []string{"--enable-proxy-extension", "--insecure"} {
			if !slices.Contains(append(ctr.Command, ctr.Args...), flag) {
				return fmt.Errorf("argocd-server lost the platform's %s: %v %v", flag, ctr.Command, ctr.Args)
			}
		}
		if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "platform-plugins" && v.EmptyDir != nil }) {
			return fmt.Errorf("argocd-server lost the platform's volume: %v", d.Spec.Template.Spec.Volumes)
		}
		if !slices.Contains(ctr.VolumeMounts, corev1.VolumeMount{Name: "platform-plugins", MountPath: "/tmp/platform-plugins"}) {
			return fmt.Errorf("argocd-server lost the platform's mount: %v", ctr.VolumeMounts)
		}
		return appsetKept()
	}
	poll(t, ctx, 3*time.Minute, "the operator makes the platform's Argo CD", func() error {
		if err := has(theirs); err != nil {
			return err
		}
		return serverEnvKept()
	})
	poll(t, ctx, time.Minute, "the operator makes argocd-secret", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-secret"}, &corev1.Secret{})
	})
	seedProxyUser(t, ctx, kube, ns)
	jobLogs := runJobs(t, ctx, kube, c, ns)
	defer func() {
		if t.Failed() {
			t.Logf("the Jobs printed:\n%s", jobLogs())
		}
	}()
	platformSpec := func() map[string]any {
		var a unstructured.Unstructured
		a.SetGroupVersionKind(argocd.GroupVersionKind())
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(argocd), &a))
		spec, _, _ := unstructured.NestedMap(a.Object, "spec")
		return spec
	}
	platform := platformSpec()

	// The README: the tokens, then the operator block.
	runBlock(t, ctx, kube.Kubeconfig, "", installBlock(t, "README.md", "tokens"), nil)
	runBlock(t, ctx, kube.Kubeconfig, "", installBlock(t, "README.md", "operator"), nil)

	// The ArgoCD resource: the platform's entries first and unchanged, ours after them.
	after := platformSpec()
	for _, list := range [][]string{{"server", "extraCommandArgs"}, {"server", "volumes"}, {"server", "volumeMounts"}, {"applicationSet", "extraCommandArgs"}, {"applicationSet", "env"}} {
		was, _, _ := unstructured.NestedSlice(platform, list...)
		is, _, _ := unstructured.NestedSlice(after, list...)
		require.NotEmpty(t, was, "the platform has a %v of its own", list)
		require.GreaterOrEqual(t, len(is), len(was), "%v", list)
		assert.Equal(t, was, is[:len(was)], "the platform's %v after the operator block", list)
	}
	assert.Equal(t, []any{"--enable-proxy-extension", "--insecure"}, after["server"].(map[string]any)["extraCommandArgs"], "the platform's flag is ours too: not twice")
	for _, m := range []string{"extraConfig", "cmdParams"} {
		for k, v := range platform[m].(map[string]any) {
			assert.Equal(t, v, after[m].(map[string]any)[k], "the platform's %s %s", m, k)
		}
	}
	t.Logf("the Jobs printed:\n%s", jobLogs())

	want := ourSettings(t)
	took := poll(t, ctx, 2*time.Minute, "the operator writes our keys", func() error { return has(want) })
	t.Logf("our keys in Argo CD's ConfigMaps %s after the operator block", took)
	require.NoError(t, has(theirs), "the platform's settings after the operator block")
	serverFlags := func() error {
		d, err := server()
		if err != nil {
			return err
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(append(ctr.Command, ctr.Args...), "--enable-proxy-extension") {
			return fmt.Errorf("argocd-server runs without --enable-proxy-extension: %v %v", ctr.Command, ctr.Args)
		}
		if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == "gitops-service-ui-extension" && m.MountPath == "/tmp/extensions/gitops-service"
		}) {
			return fmt.Errorf("argocd-server has no mount of the panel: %v", ctr.VolumeMounts)
		}
		return serverEnvKept()
	}
	poll(t, ctx, 2*time.Minute, "argocd-server with our flag and the panel", serverFlags)
	poll(t, ctx, 2*time.Minute, "the applicationset controller's throughput", func() error {
		ctr, err := appset()
		if err != nil {
			return err
		}
		if !slices.Contains(append(ctr.Command, ctr.Args...), "--concurrent-reconciliations=30") {
			return fmt.Errorf("applicationset controller without --concurrent-reconciliations=30: %v", ctr.Command)
		}
		for _, e := range []corev1.EnvVar{{Name: "ARGOCD_K8S_CLIENT_QPS", Value: "150"}, {Name: "ARGOCD_K8S_CLIENT_BURST", Value: "300"}} {
			if !slices.Contains(ctr.Env, e) {
				return fmt.Errorf("applicationset controller without %s=%s", e.Name, e.Value)
			}
		}
		return appsetKept()
	})
	var panel corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops-service-ui-extension"}, &panel), "the panel's JavaScript the ArgoCD mounts")
	assert.Contains(t, panel.Data["extension-gitops-service.js"], "gitops-service")
	var sidecar appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops-service"}, &sidecar))
	assert.Contains(t, sidecar.Spec.Template.Spec.Containers[0].Args, "--argocd-settings=verify", "the operator owns Argo CD's settings: the sidecar only checks them")
	// The sidecar reads Redis's password from the Secret the operator made.
	var redisRef *corev1.SecretKeySelector
	for _, e := range sidecar.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "REDIS_PASSWORD" && e.ValueFrom != nil {
			redisRef = e.ValueFrom.SecretKeyRef
		}
	}
	require.NotNil(t, redisRef, "the sidecar's REDIS_PASSWORD")
	var redisSecret corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: redisRef.Name}, &redisSecret), "the operator's Redis Secret")
	assert.NotEmpty(t, redisSecret.Data[redisRef.Key], "Secret %s key %s", redisRef.Name, redisRef.Key)

	verifyReportsNothing(t, ctx, c, ns, "after the operator block")
	argoCDServes(t, ctx, kube, ns, "after the operator block", "metrics", metrics)

	// What the sidecar writes at run time: the tenants' RBAC key, with its own field manager.
	rt := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-rbac-cm", Namespace: ns},
		Data:       map[string]string{"policy.gitops-service.csv": "p, team-a, applications, get, team-a/*, allow\n"},
	}
	require.NoError(t, c.Patch(ctx, rt, client.Apply, client.FieldOwner("gitops-service"), client.ForceOwnership))

	// The operator's reconcile after the platform changes its ArgoCD (its upgrade path): ours,
	// theirs, the admin key and the run-time key all stay.
	require.NoError(t, c.Patch(ctx, argocd, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"extraConfig":{"timeout.reconciliation":"300s"}}}`))))
	theirs["argocd-cm"]["timeout.reconciliation"] = "300s"
	poll(t, ctx, 2*time.Minute, "the operator applies the platform's change", func() error { return has(theirs) })
	require.NoError(t, has(want))
	rbac, err := cm("argocd-rbac-cm")
	require.NoError(t, err)
	assert.Equal(t, rt.Data["policy.gitops-service.csv"], rbac.Data["policy.gitops-service.csv"], "the operator keeps the sidecar's run-time key")
	require.NoError(t, serverFlags())
	verifyReportsNothing(t, ctx, c, ns, "after the operator's reconcile")

	// A key of ours removed by hand comes back by itself: the operator reverts argocd-cm.
	require.NoError(t, c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: ns}},
		client.RawPatch("application/merge-patch+json", []byte(`{"data":{"extension.config.gitops-service":null}}`))))
	took = poll(t, ctx, 2*time.Minute, "the operator restores our key", func() error { return has(want) })
	t.Logf("extension.config.gitops-service back %s after it was removed by hand", took)

	// Argo CD reads what the operator made.
	argoCDServes(t, ctx, kube, ns, "after the operator's reconcile", "metrics", metrics)

	// Re-applying ours (our upgrade) changes none of Argo CD's objects.
	versions := func() []string {
		var out []string
		for _, name := range []string{"argocd-cm", "argocd-cmd-params-cm", "argocd-rbac-cm"} {
			m, err := cm(name)
			require.NoError(t, err)
			out = append(out, name+"@"+m.ResourceVersion)
		}
		d, err := server()
		require.NoError(t, err)
		return append(out, "argocd-server@"+d.ResourceVersion)
	}
	before := versions()
	cmd := exec.CommandContext(ctx, bins.Kubectl, "apply", "--server-side", "-k", "manifests/operator")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	time.Sleep(2 * time.Second) // what the operator would do about it
	assert.Equal(t, before, versions(), "re-applying manifests/operator touched Argo CD's objects")

	// Uninstall (docs/install-operator.md), verbatim: exactly ours goes. The
	// platform had --enable-proxy-extension and server.enable.proxy.extension
	// of its own, the same as ours: they stay, as everything else of its own.
	runBlock(t, ctx, kube.Kubeconfig, "", installBlock(t, "docs/install-operator.md", "operator-uninstall"), nil)
	require.NoError(t, unstructured.SetNestedField(platform, "300s", "extraConfig", "timeout.reconciliation"))
	assert.Equal(t, platform, platformSpec(), "the ArgoCD resource after the uninstall is the platform's")
	poll(t, ctx, 2*time.Minute, "the operator removes our keys", func() error {
		for name, data := range want {
			m, err := cm(name)
			if err != nil {
				return err
			}
			for k := range data {
				if _, platforms := theirs[name][k]; platforms {
					continue // the platform set it too (server.enable.proxy.extension): has(theirs) checks it stays
				}
				if _, ok := m.Data[k]; ok {
					return fmt.Errorf("%s still has our %s", name, k)
				}
			}
		}
		m, err := cm("argocd-rbac-cm")
		if err != nil {
			return err
		}
		if _, ok := m.Data["policy.gitops-service.csv"]; ok {
			return fmt.Errorf("argocd-rbac-cm still has policy.gitops-service.csv")
		}
		d, err := server()
		if err != nil {
			return err
		}
		if strings.Contains(fmt.Sprint(d.Spec.Template.Spec), "gitops-service") {
			return fmt.Errorf("argocd-server still has something of ours: %v", d.Spec.Template.Spec.Volumes)
		}
		ctr, err := appset()
		if err != nil {
			return err
		}
		if strings.Contains(fmt.Sprint(*ctr), "ARGOCD_K8S_CLIENT_QPS") || slices.Contains(ctr.Command, "--concurrent-reconciliations=30") {
			return fmt.Errorf("the applicationset controller still has something of ours: %v %v", ctr.Command, ctr.Env)
		}
		return nil
	})
	require.NoError(t, has(theirs), "the platform's settings after the uninstall")
	require.NoError(t, serverEnvKept())
	// The other extension keeps working without us.
	argoCDServes(t, ctx, kube, ns, "after the uninstall", "metrics", metrics)
	// And nothing of ours is left: no object manifests/operator or its uninstall made.
	var ours []*unstructured.Unstructured
	for _, dir := range []string{"manifests/operator", "manifests/operator/uninstall"} {
		r, err := stack.RenderKustomization(ctx, filepath.Join(repoRoot(t), dir))
		require.NoError(t, err)
		ours = append(ours, r.Objects...)
	}
	require.NotEmpty(t, ours)
	poll(t, ctx, time.Minute, "every object of ours is gone after the uninstall", func() error {
		for _, o := range ours {
			left := &unstructured.Unstructured{}
			left.SetGroupVersionKind(o.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKeyFromObject(o), left)
			if err == nil {
				return fmt.Errorf("%s %s/%s is left", o.GetKind(), o.GetNamespace(), o.GetName())
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

// runJobs stands in for the Job controller and the kubelet, which the test
// stack has neither of, for manifests/operator's Jobs: each Job of ns that
// appears runs once, its container's args given to the sidecar binary (what
// the image runs) under a token of the Job's ServiceAccount, so the Role
// the manifests ship is what authorizes it; then the Job gets the status
// the Job controller would give it, which `kubectl wait` in the blocks
// reads. It returns what the runs printed.
func runJobs(t *testing.T, ctx context.Context, kube *stack.Kube, c client.Client, ns string) func() string {
	t.Helper()
	bin, err := stack.BuildSidecar()
	require.NoError(t, err)
	cs, err := kube.Clientset()
	require.NoError(t, err)
	var mu sync.Mutex
	var logs strings.Builder
	done := map[types.UID]bool{}
	run := func(job *batchv1.Job) error {
		pod := job.Spec.Template.Spec
		if len(pod.Containers) != 1 || len(pod.Containers[0].Command) > 0 {
			return fmt.Errorf("job %s: one container running the image's entrypoint expected", job.Name)
		}
		ctr := pod.Containers[0]
		env := os.Environ()
		for _, e := range ctr.Env {
			switch {
			case e.ValueFrom == nil:
				env = append(env, e.Name+"="+e.Value)
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				env = append(env, e.Name+"="+job.Namespace)
			default:
				return fmt.Errorf("job %s: env %s from %v is not supported here", job.Name, e.Name, e.ValueFrom)
			}
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, pod.ServiceAccountName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("job %s: token of its ServiceAccount %q: %w", job.Name, pod.ServiceAccountName, err)
		}
		kc, err := kube.KubeconfigFor(tr.Status.Token)
		if err != nil {
			return err
		}
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(path, kc, 0o600); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, bin, append(append([]string{}, ctr.Args...), "--kubeconfig", path)...)
		cmd.Env = env
		out, runErr := cmd.CombinedOutput()
		mu.Lock()
		fmt.Fprintf(&logs, "job %s:\n%s", job.Name, out)
		mu.Unlock()
		now := metav1.Now()
		job.Status.StartTime, job.Status.CompletionTime = &now, &now
		job.Status.Succeeded = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		}
		if runErr != nil {
			job.Status.Succeeded, job.Status.Failed, job.Status.CompletionTime = 0, 1, nil
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now, LastProbeTime: now},
			}
			t.Errorf("job %s: %v\n%s", job.Name, runErr, out)
		}
		return c.Status().Update(ctx, job)
	}
	jobCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for jobCtx.Err() == nil {
			var jobs batchv1.JobList
			if err := c.List(jobCtx, &jobs, client.InNamespace(ns)); err == nil {
				for i := range jobs.Items {
					job := &jobs.Items[i]
					if done[job.UID] {
						continue
					}
					done[job.UID] = true
					if err := run(job); err != nil && jobCtx.Err() == nil {
						t.Errorf("running %s: %v", job.Name, err)
					}
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-stopped })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
}
