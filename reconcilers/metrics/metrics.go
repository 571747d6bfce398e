// Package metrics defines the sidecar's own Prometheus metrics, all named
// gitops_service_*: the state of the CRs (read from the manager's cache at
// scrape time), Warning Events by reason, PromotionRun and SyncRun durations,
// the generator's and ui-proxy's request durations, reads of Argo CD's Redis
// and the build. They are registered on controller-runtime's registry, so they
// are served with its own metrics. docs/metrics.md lists them.
//
// No label names a CR or a namespace: a platform may have thousands of
// tenants, and a label per tenant multiplies every series by that many. The
// labels are kinds, states, reasons and result codes, sets the code bounds.
// The one exception is the delivery metrics (dora.go), asked per tenant,
// application and environment: their cardinality is documented there.
package metrics

import (
	"regexp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the metrics (docs/metrics.md).
const (
	BuildInfoName            = "gitops_service_build_info"
	WarningEventsName        = "gitops_service_warning_events_total"
	ArgoRedisReadsName       = "gitops_service_argocd_redis_reads_total"
	PromotionRunDurationName = "gitops_service_promotionrun_duration_seconds"
	SyncRunDurationName      = "gitops_service_syncrun_duration_seconds"
	HTTPRequestDurationName  = "gitops_service_http_request_duration_seconds"
	ResourcesName            = "gitops_service_resources"
	ResourcesWithErrorName   = "gitops_service_resources_with_error"
	GitOpsDeploymentsName    = "gitops_service_gitopsdeployments"
	SyncRunsName             = "gitops_service_syncruns"
	PromotionRunsName        = "gitops_service_promotionruns"
	BindingsName             = "gitops_service_snapshotenvironmentbindings"
	ClaimsName               = "gitops_service_deploymenttargetclaims"
	TargetsName              = "gitops_service_deploymenttargets"
)

var (
	// WarningEvents counts every Warning Event, all emitted by the kernel
	// (kernel.Warning): refusals and errors with their conditions, and those
	// on objects without one (the sidecar's Pod, a tenant Namespace), by the
	// object's kind and the reason.
	WarningEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: WarningEventsName,
		Help: "Warning Events emitted with an error condition (refusals and errors), by the CR's kind and the condition's reason.",
	}, []string{"kind", "reason"})

	// ArgoRedisReads counts reads of resource trees from Argo CD's Redis.
	ArgoRedisReads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ArgoRedisReadsName,
		Help: "Reads of an Application's resource tree from Argo CD's Redis, by result: hit, miss (not cached) or error (Redis unreachable or the entry unreadable).",
	}, []string{"result"})

	// PromotionRunDuration observes a PromotionRun when it is seen Completed.
	PromotionRunDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    PromotionRunDurationName,
		Help:    "Time from a PromotionRun's start (promotionStartTime) to when it was seen Completed, by completion result (Success, Failure).",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
	}, []string{"result"})

	// SyncRunDuration observes a SyncRun when it is seen finished.
	SyncRunDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    SyncRunDurationName,
		Help:    "Time from a GitOpsDeploymentSyncRun's start (startedAt, else its creation) to when it was seen finished, by phase (Succeeded, Failed, Error).",
		Buckets: []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
	}, []string{"phase"})

	// HTTPRequestDuration observes the requests to the generator and ui-proxy.
	HTTPRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    HTTPRequestDurationName,
		Help:    "Requests to the sidecar's HTTP APIs, by server (generator, ui-proxy) and status code.",
		Buckets: prometheus.DefBuckets,
	}, []string{"server", "code"})

	// State is the collector of the CRs' states that the sidecar registers;
	// each manager the sidecar makes points it at its cache (Attach).
	State = &StateCollector{}
)

// NewBuildInfo is the gitops_service_build_info gauge: always 1, the labels
// say which build runs.
func NewBuildInfo(version, goversion, revision string) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: BuildInfoName,
		Help: "The sidecar's build: version, Go version and git revision; always 1.",
	}, []string{"version", "goversion", "revision"})
	g.WithLabelValues(version, goversion, revision).Set(1)
	return g
}

// Collectors are the sidecar's metrics but build_info (registered by main).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{WarningEvents, ArgoRedisReads, PromotionRunDuration, SyncRunDuration, HTTPRequestDuration, State,
		Promotions, PromotionFailures, LeadTime, TimeToRestore}
}

var registerOnce sync.Once

// Register adds Collectors to controller-runtime's registry, once per process
// (the sidecar makes a new manager after a failure).
func Register() {
	registerOnce.Do(func() { ctrlmetrics.Registry.MustRegister(Collectors()...) })
}

// reasonShape is what a condition reason looks like (CamelCase, as the API
// conventions ask); anything else is counted as "Other", so no text of a
// message can become a label value.
var reasonShape = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,63}$`)

// Reason is reason as a label value: itself, or "Other".
func Reason(reason string) string {
	if reasonShape.MatchString(reason) {
		return reason
	}
	return "Other"
}
