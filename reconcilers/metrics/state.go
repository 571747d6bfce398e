package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	gitops "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// errorCondition is the error condition type every kind of ours has.
const errorCondition = "ErrorOccurred"

var (
	resourcesDesc = prometheus.NewDesc(ResourcesName,
		"CRs of the GitOps Service API, by kind.", []string{"kind"}, nil)
	resourcesWithErrorDesc = prometheus.NewDesc(ResourcesWithErrorName,
		"CRs whose ErrorOccurred condition is True, by kind (kind=GitOpsDeployment is the original service's gitopsDeployments_failures).", []string{"kind"}, nil)
	gitopsDeploymentsDesc = prometheus.NewDesc(GitOpsDeploymentsName,
		"GitOpsDeployments by Argo CD's sync and health status; their sum is the original service's active_gitopsDeployments.", []string{"sync_status", "health_status"}, nil)
	syncRunsDesc = prometheus.NewDesc(SyncRunsName,
		"GitOpsDeploymentSyncRuns by phase (Pending before the sync starts).", []string{"phase"}, nil)
	promotionRunsDesc = prometheus.NewDesc(PromotionRunsName,
		"PromotionRuns by state (Waiting, Active, Completed; Pending before the first reconcile) and completion result (Success, Failure; empty unless Completed).", []string{"state", "result"}, nil)
	bindingsDesc = prometheus.NewDesc(BindingsName,
		"SnapshotEnvironmentBindings by the status of their AllComponentsDeployed condition (True, False, Unknown).", []string{"all_components_deployed"}, nil)
	claimsDesc = prometheus.NewDesc(ClaimsName,
		"DeploymentTargetClaims by phase (Pending, Bound, Lost).", []string{"phase"}, nil)
	targetsDesc = prometheus.NewDesc(TargetsName,
		"DeploymentTargets by phase (Pending, Available, Bound, Released, Failed).", []string{"phase"}, nil)
)

// StateCollector reports the CRs' states at scrape time from a cache (the
// manager's: no API calls), only while its replica is the leader, so sums
// over replicas count each CR once.
type StateCollector struct {
	src atomic.Pointer[source]
}

type source struct {
	reader  client.Reader
	elected <-chan struct{}
}

// Use makes c read from r once elected is closed (the manager's Elected).
func (c *StateCollector) Use(r client.Reader, elected <-chan struct{}) {
	c.src.Store(&source{reader: r, elected: elected})
}

// Describe implements prometheus.Collector.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{resourcesDesc, resourcesWithErrorDesc, gitopsDeploymentsDesc, syncRunsDesc, promotionRunsDesc, bindingsDesc, claimsDesc, targetsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.src.Load()
	if src == nil {
		return
	}
	select {
	case <-src.elected:
	default:
		return
	}
	// A scrape must not hang on a cache that is not synced yet.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := newCounts()
	count(ctx, src.reader, s)
	s.emit(ch)
}

// counts are the gauges' values; keys are label values joined by the desc.
type counts struct {
	values map[*prometheus.Desc]map[[2]string]float64
}

func newCounts() *counts {
	s := &counts{values: map[*prometheus.Desc]map[[2]string]float64{}}
	// The known states are reported as 0 too, so alerts and ratios see them.
	for _, k := range kinds {
		s.zero(resourcesDesc, k.name)
		s.zero(resourcesWithErrorDesc, k.name)
	}
	for _, sy := range []string{"Synced", "OutOfSync", "Unknown"} {
		for _, h := range []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"} {
			s.zero(gitopsDeploymentsDesc, sy, h)
		}
	}
	for _, p := range []string{"Pending", "Running", "Terminating", "Succeeded", "Failed", "Error"} {
		s.zero(syncRunsDesc, p)
	}
	s.zero(promotionRunsDesc, "Pending", "")
	s.zero(promotionRunsDesc, "Waiting", "")
	s.zero(promotionRunsDesc, "Active", "")
	s.zero(promotionRunsDesc, "Completed", "Success")
	s.zero(promotionRunsDesc, "Completed", "Failure")
	for _, st := range []string{"True", "False", "Unknown"} {
		s.zero(bindingsDesc, st)
	}
	for _, p := range []string{"Pending", "Bound", "Lost"} {
		s.zero(claimsDesc, p)
	}
	for _, p := range []string{"Pending", "Available", "Bound", "Released", "Failed"} {
		s.zero(targetsDesc, p)
	}
	return s
}

func key(lv ...string) [2]string {
	var k [2]string
	copy(k[:], lv)
	return k
}

func (s *counts) zero(d *prometheus.Desc, lv ...string) { s.add(d, 0, lv...) }

func (s *counts) inc(d *prometheus.Desc, lv ...string) { s.add(d, 1, lv...) }

func (s *counts) add(d *prometheus.Desc, v float64, lv ...string) {
	m := s.values[d]
	if m == nil {
		m = map[[2]string]float64{}
		s.values[d] = m
	}
	m[key(lv...)] += v
}

func (s *counts) emit(ch chan<- prometheus.Metric) {
	labels := map[*prometheus.Desc]int{resourcesDesc: 1, resourcesWithErrorDesc: 1, gitopsDeploymentsDesc: 2, syncRunsDesc: 1,
		promotionRunsDesc: 2, bindingsDesc: 1, claimsDesc: 1, targetsDesc: 1}
	for d, m := range s.values {
		for k, v := range m {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, k[:labels[d]]...)
		}
	}
}

// kind is one kind of ours the state metrics count: how to list it, and for
// one object, the series of its own it adds and whether it is in error.
type kind struct {
	name string
	list func() client.ObjectList
	each func(s *counts, obj runtime.Object) (failed bool)
}

// of is a kind whose each takes its own type.
func of[T runtime.Object](name string, list func() client.ObjectList, each func(*counts, T) bool) kind {
	return kind{name: name, list: list, each: func(s *counts, obj runtime.Object) bool { return each(s, obj.(T)) }}
}

// kinds are reported by gitops_service_resources{kind} and
// gitops_service_resources_with_error{kind}, in this order.
var kinds = []kind{
	of("GitOpsDeployment", func() client.ObjectList { return &gitops.GitOpsDeploymentList{} }, func(s *counts, d *gitops.GitOpsDeployment) bool {
		s.inc(gitopsDeploymentsDesc, or(string(d.Status.Sync.Status), "Unknown"), or(string(d.Status.Health.Status), "Unknown"))
		return gitopsError(d.Status.Conditions)
	}),
	of("GitOpsDeploymentSyncRun", func() client.ObjectList { return &gitops.GitOpsDeploymentSyncRunList{} }, func(s *counts, r *gitops.GitOpsDeploymentSyncRun) bool {
		s.inc(syncRunsDesc, or(string(r.Status.Phase), "Pending"))
		return gitopsError(r.Status.Conditions)
	}),
	of("GitOpsDeploymentManagedEnvironment", func() client.ObjectList { return &gitops.GitOpsDeploymentManagedEnvironmentList{} }, func(_ *counts, e *gitops.GitOpsDeploymentManagedEnvironment) bool {
		return failed(e.Status.Conditions)
	}),
	of("GitOpsDeploymentRepositoryCredentials", func() client.ObjectList { return &gitops.GitOpsDeploymentRepositoryCredentialsList{} }, func(_ *counts, c *gitops.GitOpsDeploymentRepositoryCredentials) bool {
		return failed(c.Status.Conditions)
	}),
	of("Environment", func() client.ObjectList { return &appstudio.EnvironmentList{} }, func(_ *counts, e *appstudio.Environment) bool {
		return failed(e.Status.Conditions)
	}),
	of("SnapshotEnvironmentBinding", func() client.ObjectList { return &appstudio.SnapshotEnvironmentBindingList{} }, func(s *counts, b *appstudio.SnapshotEnvironmentBinding) bool {
		deployed := "Unknown"
		if c := findCondition(b.Status.ComponentDeploymentConditions, appstudio.ComponentDeploymentConditionAllComponentsDeployed); c != nil {
			deployed = or(string(c.Status), "Unknown")
		}
		s.inc(bindingsDesc, deployed)
		return failed(b.Status.BindingConditions, b.Status.ComponentDeploymentConditions)
	}),
	of("PromotionRun", func() client.ObjectList { return &appstudio.PromotionRunList{} }, func(s *counts, r *appstudio.PromotionRun) bool {
		result := ""
		if r.Status.State == appstudio.PromotionRunStateCompleted {
			result = string(r.Status.CompletionResult)
		}
		s.inc(promotionRunsDesc, or(string(r.Status.State), "Pending"), result)
		return failed(r.Status.Conditions)
	}),
	of("DeploymentTargetClaim", func() client.ObjectList { return &appstudio.DeploymentTargetClaimList{} }, func(s *counts, c *appstudio.DeploymentTargetClaim) bool {
		s.inc(claimsDesc, or(string(c.Status.Phase), "Pending"))
		return failed(c.Status.Conditions)
	}),
	of("DeploymentTarget", func() client.ObjectList { return &appstudio.DeploymentTargetList{} }, func(s *counts, t *appstudio.DeploymentTarget) bool {
		s.inc(targetsDesc, or(string(t.Status.Phase), "Pending"))
		return failed(t.Status.Conditions)
	}),
	// A subscription has no ErrorOccurred: its last poll failed is its error.
	of("SnapshotSubscription", func() client.ObjectList { return &appstudio.SnapshotSubscriptionList{} }, func(_ *counts, sub *appstudio.SnapshotSubscription) bool {
		c := findCondition(sub.Status.Conditions, appstudio.SubscriptionConditionSourcesResolved)
		return c != nil && c.Status == metav1.ConditionFalse
	}),
}

// count reads every kind from r and counts it. The cache's objects are not
// copied (read only here): a scrape of thousands of CRs stays cheap.
func count(ctx context.Context, r client.Reader, s *counts) {
	for _, k := range kinds {
		l := k.list()
		if err := r.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.Log.WithName("metrics").Error(err, "listing from the cache for the state metrics", "kind", k.name)
			continue
		}
		_ = meta.EachListItem(l, func(obj runtime.Object) error {
			s.inc(resourcesDesc, k.name)
			if k.each(s, obj) {
				s.inc(resourcesWithErrorDesc, k.name)
			}
			return nil
		})
	}
}

// failed says whether any of the condition lists has a True ErrorOccurred.
func failed(lists ...[]metav1.Condition) bool {
	for _, conds := range lists {
		if c := findCondition(conds, errorCondition); c != nil && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func gitopsError(conds []gitops.GitOpsDeploymentCondition) bool {
	for _, c := range conds {
		if c.Type == gitops.GitOpsDeploymentConditionErrorOccurred && c.Status == gitops.GitOpsConditionStatusTrue {
			return true
		}
	}
	return false
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
