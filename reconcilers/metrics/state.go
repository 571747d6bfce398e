package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	for _, l := range lists(src.reader) {
		if err := l(ctx, s); err != nil {
			ctrl.Log.WithName("metrics").Error(err, "listing from the cache for the state metrics")
		}
	}
	s.emit(ch)
}

// counts are the gauges' values; keys are label values joined by the desc.
type counts struct {
	values map[*prometheus.Desc]map[[2]string]float64
}

func newCounts() *counts {
	s := &counts{values: map[*prometheus.Desc]map[[2]string]float64{}}
	// The known states are reported as 0 too, so alerts and ratios see them.
	for _, k := range allKinds {
		s.zero(resourcesDesc, k)
		s.zero(resourcesWithErrorDesc, k)
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

// The kinds reported by gitops_service_resources{kind}.
const (
	kindDeployment  = "GitOpsDeployment"
	kindSyncRun     = "GitOpsDeploymentSyncRun"
	kindManagedEnv  = "GitOpsDeploymentManagedEnvironment"
	kindRepoCreds   = "GitOpsDeploymentRepositoryCredentials"
	kindEnvironment = "Environment"
	kindBinding     = "SnapshotEnvironmentBinding"
	kindPromotion   = "PromotionRun"
	kindClaim       = "DeploymentTargetClaim"
	kindTarget      = "DeploymentTarget"
)

var allKinds = []string{kindDeployment, kindSyncRun, kindManagedEnv, kindRepoCreds, kindEnvironment, kindBinding, kindPromotion, kindClaim, kindTarget}

// lists reads each kind from r and counts it. The cache's objects are not
// copied (read only here): a scrape of thousands of CRs stays cheap.
func lists(r client.Reader) []func(context.Context, *counts) error {
	noCopy := client.UnsafeDisableDeepCopy
	return []func(context.Context, *counts) error{
		func(ctx context.Context, s *counts) error {
			var l gitops.GitOpsDeploymentList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				st := &l.Items[i].Status
				s.inc(resourcesDesc, kindDeployment)
				s.inc(gitopsDeploymentsDesc, or(string(st.Sync.Status), "Unknown"), or(string(st.Health.Status), "Unknown"))
				if gitopsError(st.Conditions) {
					s.inc(resourcesWithErrorDesc, kindDeployment)
				}
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l gitops.GitOpsDeploymentSyncRunList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				st := &l.Items[i].Status
				s.inc(resourcesDesc, kindSyncRun)
				s.inc(syncRunsDesc, or(string(st.Phase), "Pending"))
				if gitopsError(st.Conditions) {
					s.inc(resourcesWithErrorDesc, kindSyncRun)
				}
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l gitops.GitOpsDeploymentManagedEnvironmentList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				countKind(s, kindManagedEnv, l.Items[i].Status.Conditions)
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l gitops.GitOpsDeploymentRepositoryCredentialsList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				countKind(s, kindRepoCreds, l.Items[i].Status.Conditions)
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l appstudio.EnvironmentList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				countKind(s, kindEnvironment, l.Items[i].Status.Conditions)
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l appstudio.SnapshotEnvironmentBindingList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				st := &l.Items[i].Status
				countKind(s, kindBinding, st.BindingConditions, st.ComponentDeploymentConditions)
				deployed := "Unknown"
				if c := findCondition(st.ComponentDeploymentConditions, appstudio.ComponentDeploymentConditionAllComponentsDeployed); c != nil {
					deployed = or(string(c.Status), "Unknown")
				}
				s.inc(bindingsDesc, deployed)
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l appstudio.PromotionRunList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				st := &l.Items[i].Status
				countKind(s, kindPromotion, st.Conditions)
				result := ""
				if st.State == appstudio.PromotionRunStateCompleted {
					result = string(st.CompletionResult)
				}
				s.inc(promotionRunsDesc, or(string(st.State), "Pending"), result)
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l appstudio.DeploymentTargetClaimList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				countKind(s, kindClaim, l.Items[i].Status.Conditions)
				s.inc(claimsDesc, or(string(l.Items[i].Status.Phase), "Pending"))
			}
			return nil
		},
		func(ctx context.Context, s *counts) error {
			var l appstudio.DeploymentTargetList
			if err := r.List(ctx, &l, noCopy); err != nil {
				return err
			}
			for i := range l.Items {
				countKind(s, kindTarget, l.Items[i].Status.Conditions)
				s.inc(targetsDesc, or(string(l.Items[i].Status.Phase), "Pending"))
			}
			return nil
		},
	}
}

// countKind counts one CR of kind, and it as errored when any of its
// condition lists has a True ErrorOccurred.
func countKind(s *counts, kind string, lists ...[]metav1.Condition) {
	s.inc(resourcesDesc, kind)
	for _, conds := range lists {
		if c := findCondition(conds, errorCondition); c != nil && c.Status == metav1.ConditionTrue {
			s.inc(resourcesWithErrorDesc, kind)
			return
		}
	}
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
