//go:build !unit

package metrics_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	gitops "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/metrics"
	"github.com/gitops-service/gitops-service/test/stack"
)

// TestStateCollector: CRs in known states, written to a real API server (no
// reconcilers run, so the states stay as written), are counted by a state
// collector reading a cache of them, as the sidecar's reads the manager's.
func TestStateCollector(t *testing.T) {
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the real API server:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "metrics"})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	root, err := stack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.InstallCRDs(ctx, filepath.Join(root, "manifests", "crd")); err != nil {
		t.Fatal(err)
	}
	scheme := sidecar.NewScheme()
	c, err := client.New(kube.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	now := metav1.Now()
	errCond := metav1.Condition{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "Test", Message: "m", LastTransitionTime: now}
	resolved := metav1.Condition{Type: "ErrorOccurred", Status: metav1.ConditionFalse, Reason: "Resolved", Message: "", LastTransitionTime: now}
	gitopsErr := gitops.GitOpsDeploymentCondition{Type: gitops.GitOpsDeploymentConditionErrorOccurred, Status: gitops.GitOpsConditionStatusTrue, Reason: "Test", Message: "m"}

	// create writes obj, then its status with setStatus.
	create := func(obj client.Object, setStatus func()) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		if setStatus != nil {
			setStatus()
			if err := c.Status().Update(ctx, obj); err != nil {
				t.Fatalf("status of %T %s: %v", obj, obj.GetName(), err)
			}
		}
	}
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	deployment := func(ns, name string, sync gitops.SyncStatusCode, health gitops.HealthStatusCode, failed bool) {
		d := &gitops.GitOpsDeployment{ObjectMeta: meta(ns, name), Spec: gitops.GitOpsDeploymentSpec{
			Type: gitops.GitOpsDeploymentSpecTypeAutomated, Source: gitops.ApplicationSource{RepoURL: "https://example.com/repo.git", Path: "deploy"}}}
		create(d, func() {
			d.Status.Sync.Status, d.Status.Health.Status = sync, health
			if failed {
				d.Status.Conditions = []gitops.GitOpsDeploymentCondition{gitopsErr}
			}
		})
	}
	deployment("tenant-a", "synced", "Synced", "Healthy", false)
	deployment("tenant-b", "synced", "Synced", "Healthy", false)
	deployment("tenant-a", "broken", "OutOfSync", "Degraded", true)
	deployment("tenant-b", "new", "", "", false)

	syncRun := func(ns, name string, phase gitops.OperationPhase) {
		r := &gitops.GitOpsDeploymentSyncRun{ObjectMeta: meta(ns, name), Spec: gitops.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "synced"}}
		create(r, func() { r.Status.Phase = phase })
	}
	syncRun("tenant-a", "done", gitops.OperationSucceeded)
	syncRun("tenant-a", "failed", gitops.OperationFailed)
	syncRun("tenant-b", "pending", "")

	promotion := func(ns, name string, state appstudio.PromotionRunState, result appstudio.PromotionRunCompleteResult, conds ...metav1.Condition) {
		p := &appstudio.PromotionRun{ObjectMeta: meta(ns, name), Spec: appstudio.PromotionRunSpec{Application: "app", Snapshot: "snap",
			ManualPromotion: &appstudio.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
		create(p, func() { p.Status.State, p.Status.CompletionResult, p.Status.Conditions = state, result, conds })
	}
	promotion("tenant-a", "ok", appstudio.PromotionRunStateCompleted, appstudio.PromotionRunCompleteResultSuccess, resolved)
	promotion("tenant-a", "bad", appstudio.PromotionRunStateCompleted, appstudio.PromotionRunCompleteResultFailure, errCond)
	promotion("tenant-b", "running", appstudio.PromotionRunStateActive, "")
	promotion("tenant-b", "queued", appstudio.PromotionRunStateWaiting, "")

	claim := func(ns, name string, phase appstudio.DeploymentTargetClaimPhase) {
		cl := &appstudio.DeploymentTargetClaim{ObjectMeta: meta(ns, name), Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: "standard"}}
		create(cl, func() { cl.Status.Phase = phase })
	}
	claim("tenant-a", "bound", appstudio.DeploymentTargetClaimPhaseBound)
	claim("tenant-b", "lost", appstudio.DeploymentTargetClaimPhaseLost)
	claim("tenant-b", "new", "")

	target := &appstudio.DeploymentTarget{ObjectMeta: meta("tenant-a", "t"), Spec: appstudio.DeploymentTargetSpec{DeploymentTargetClassName: "standard",
		KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{APIURL: "https://kube.example.com", ClusterCredentialsSecret: "creds", DefaultNamespace: "ns"}}}
	create(target, func() {
		target.Status.Phase, target.Status.Conditions = appstudio.DeploymentTargetPhaseFailed, []metav1.Condition{errCond}
	})

	binding := func(ns, name string, deployed metav1.ConditionStatus, conds ...metav1.Condition) {
		b := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: meta(ns, name), Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "dev", Snapshot: "snap"}}
		create(b, func() {
			if deployed != "" {
				b.Status.ComponentDeploymentConditions = []metav1.Condition{{Type: appstudio.ComponentDeploymentConditionAllComponentsDeployed,
					Status: deployed, Reason: "Test", LastTransitionTime: now}}
			}
			b.Status.BindingConditions = conds
		})
	}
	binding("tenant-a", "deployed", metav1.ConditionTrue)
	binding("tenant-b", "deploying", metav1.ConditionFalse, errCond)
	binding("tenant-b", "new", "")

	env := &appstudio.Environment{ObjectMeta: meta("tenant-a", "dev"), Spec: appstudio.EnvironmentSpec{DisplayName: "Dev"}}
	create(env, func() { env.Status.Conditions = []metav1.Condition{errCond} })

	subscription := func(ns, name string, conds ...metav1.Condition) {
		sub := &appstudio.SnapshotSubscription{ObjectMeta: meta(ns, name), Spec: appstudio.SnapshotSubscriptionSpec{Application: "app",
			Components: []appstudio.ComponentSubscription{{Name: "web", Image: &appstudio.ImageSubscription{Repository: "quay.io/team/web", Tag: "latest"}}}}}
		create(sub, func() { sub.Status.Conditions = conds })
	}
	subscription("tenant-a", "polled", metav1.Condition{Type: appstudio.SubscriptionConditionSourcesResolved, Status: metav1.ConditionTrue, Reason: "Resolved", LastTransitionTime: now})
	subscription("tenant-b", "refused", metav1.Condition{Type: appstudio.SubscriptionConditionSourcesResolved, Status: metav1.ConditionFalse, Reason: "EgressRefused", LastTransitionTime: now})
	subscription("tenant-b", "new")

	informers, err := cache.New(kube.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache not synced")
	}
	elected := make(chan struct{})
	close(elected)
	collector := &metrics.StateCollector{}
	collector.Use(informers, elected)

	// The cache is filled by informers that list lazily: wait for them.
	want := map[string]float64{
		`gitops_service_resources{kind="GitOpsDeployment"}`:                                  4,
		`gitops_service_resources{kind="GitOpsDeploymentSyncRun"}`:                           3,
		`gitops_service_resources{kind="PromotionRun"}`:                                      4,
		`gitops_service_resources{kind="DeploymentTargetClaim"}`:                             3,
		`gitops_service_resources{kind="DeploymentTarget"}`:                                  1,
		`gitops_service_resources{kind="SnapshotEnvironmentBinding"}`:                        3,
		`gitops_service_resources{kind="Environment"}`:                                       1,
		`gitops_service_resources{kind="SnapshotSubscription"}`:                              3,
		`gitops_service_resources_with_error{kind="SnapshotSubscription"}`:                   1,
		`gitops_service_resources_with_error{kind="GitOpsDeployment"}`:                       1,
		`gitops_service_resources_with_error{kind="PromotionRun"}`:                           1,
		`gitops_service_resources_with_error{kind="DeploymentTarget"}`:                       1,
		`gitops_service_resources_with_error{kind="SnapshotEnvironmentBinding"}`:             1,
		`gitops_service_resources_with_error{kind="Environment"}`:                            1,
		`gitops_service_gitopsdeployments{health_status="Healthy",sync_status="Synced"}`:     2,
		`gitops_service_gitopsdeployments{health_status="Degraded",sync_status="OutOfSync"}`: 1,
		`gitops_service_gitopsdeployments{health_status="Unknown",sync_status="Unknown"}`:    1,
		`gitops_service_syncruns{phase="Succeeded"}`:                                         1,
		`gitops_service_syncruns{phase="Failed"}`:                                            1,
		`gitops_service_syncruns{phase="Pending"}`:                                           1,
		`gitops_service_promotionruns{result="Success",state="Completed"}`:                   1,
		`gitops_service_promotionruns{result="Failure",state="Completed"}`:                   1,
		`gitops_service_promotionruns{result="",state="Active"}`:                             1,
		`gitops_service_promotionruns{result="",state="Waiting"}`:                            1,
		`gitops_service_deploymenttargetclaims{phase="Bound"}`:                               1,
		`gitops_service_deploymenttargetclaims{phase="Lost"}`:                                1,
		`gitops_service_deploymenttargetclaims{phase="Pending"}`:                             1,
		`gitops_service_deploymenttargets{phase="Failed"}`:                                   1,
		`gitops_service_snapshotenvironmentbindings{all_components_deployed="True"}`:         1,
		`gitops_service_snapshotenvironmentbindings{all_components_deployed="False"}`:        1,
		`gitops_service_snapshotenvironmentbindings{all_components_deployed="Unknown"}`:      1,
	}
	var got map[string]float64
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = collect(t, collector)
		if diff := compare(got, want); diff == "" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("state metrics:\n%s", diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The known states of no CR are there, as 0, for alerts and ratios.
	for _, s := range []string{`gitops_service_resources_with_error{kind="GitOpsDeploymentManagedEnvironment"}`, `gitops_service_syncruns{phase="Error"}`,
		`gitops_service_deploymenttargets{phase="Available"}`} {
		if v, ok := got[s]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0", s, v, ok)
		}
	}
}

// collect is every series c reports, as name{labels} -> value.
func collect(t *testing.T, c prometheus.Collector) map[string]float64 {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// compare says how got differs from want, where every series not in want
// must be 0.
func compare(got, want map[string]float64) string {
	var diff []string
	for k, v := range want {
		if got[k] != v {
			diff = append(diff, fmt.Sprintf("%s = %v, want %v", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && v != 0 {
			diff = append(diff, fmt.Sprintf("%s = %v, want 0", k, v))
		}
	}
	sort.Strings(diff)
	return strings.Join(diff, "\n")
}
