package metrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Delivery metrics (DORA), from the PromotionHistories the PromotionRun
// reconciler keeps: what a history's update added is observed once, by the
// elected replica.
//
// Cardinality: these are the only metrics labelled by tenant (namespace),
// application and environment, as issue 24 asks: one series set per
// (Application, Environment) that had a promotion, i.e. per PromotionHistory,
// times the few values of result/cause. A platform with many tenants pays for
// it here; the series of a deleted history stay until the sidecar restarts.
const (
	PromotionsName        = "gitops_service_promotions_total"
	PromotionFailuresName = "gitops_service_promotion_failures_total"
	LeadTimeName          = "gitops_service_promotion_lead_time_seconds"
	TimeToRestoreName     = "gitops_service_time_to_restore_seconds"
)

var doraLabels = []string{"tenant", "application", "environment"}

var (
	// Promotions counts the promotions (not rollbacks) that ended in an
	// Environment, by result: deployment frequency is the rate of Success.
	Promotions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PromotionsName,
		Help: "Promotions (not rollbacks) that ended in an Environment, by tenant, application, environment and result (Success: verified there; Failure). Deployment frequency: rate of result=\"Success\".",
	}, append(doraLabels, "result"))

	// PromotionFailures counts the failed changes: a promotion that failed
	// verification or timed out, one whose analysis failed, or one verified
	// and later rolled back.
	PromotionFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PromotionFailuresName,
		Help: "Changes that failed, by tenant, application, environment and cause (failed: verification failed or timed out; analysis: an analysis check of the Environment failed; rolled_back: verified, later rolled back). Change failure rate: this over gitops_service_promotions_total.",
	}, append(doraLabels, "cause"))

	// LeadTime observes the time from a Snapshot's creation to its
	// verification in an Environment.
	LeadTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    LeadTimeName,
		Help:    "Lead time for changes: from a Snapshot's creation to its verification in an Environment by a promotion, by tenant, application and environment.",
		Buckets: []float64{60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600},
	}, doraLabels)

	// TimeToRestore observes the time from a failure in an Environment (a
	// failed promotion, or a rollback's request) to the next verified
	// Snapshot there (a promotion or a rollback).
	TimeToRestore = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    TimeToRestoreName,
		Help:    "Time to restore: from a failure in an Environment (a failed promotion, or the request of a rollback) to the next Snapshot verified there, by tenant, application and environment.",
		Buckets: []float64{30, 60, 300, 900, 1800, 3600, 3 * 3600, 12 * 3600, 24 * 3600},
	}, doraLabels)
)

// dora is what one update of a history adds to the delivery metrics.
type dora struct {
	promotions map[string]int // by result
	failures   map[string]int // by cause
	leadTimes  []float64
	restores   []float64
}

// doraOf compares two versions of a history: the entries cur adds and the
// promotions it newly marks rolled back.
func doraOf(old, cur *appstudio.PromotionHistory) dora {
	d := dora{promotions: map[string]int{}, failures: map[string]int{}}
	before := map[string]appstudio.PromotionHistoryEntry{}
	for _, e := range old.Status.Entries {
		before[e.PromotionRunUID] = e
	}
	for i, e := range cur.Status.Entries {
		o, seen := before[e.PromotionRunUID]
		if seen {
			if o.ChangeFailure() != appstudio.ChangeFailureRolledBack && e.ChangeFailure() == appstudio.ChangeFailureRolledBack {
				d.failures[appstudio.ChangeFailureRolledBack]++
			}
			continue
		}
		if e.Kind == appstudio.PromotionKindPromotion {
			d.promotions[string(e.Result)]++
			if cause := e.ChangeFailure(); cause == appstudio.ChangeFailureFailed || cause == appstudio.ChangeFailureAnalysis {
				d.failures[cause]++
			}
			if e.Result == appstudio.PromotionRunCompleteResultSuccess && e.SnapshotCreated != nil {
				d.leadTimes = append(d.leadTimes, elapsed(e.SnapshotCreated.Time, e.CompletionTime.Time))
			}
		}
		if e.Result == appstudio.PromotionRunCompleteResultSuccess {
			if s, ok := restored(cur.Status.Entries[:i], e); ok {
				d.restores = append(d.restores, s)
			}
		}
	}
	return d
}

// restored is the time to restore that the verified entry e ends, after the
// entries before it: from the first failure since the last good Snapshot (a
// failed entry's end, or e's own start when e is a rollback), if any.
func restored(before []appstudio.PromotionHistoryEntry, e appstudio.PromotionHistoryEntry) (float64, bool) {
	var start *appstudio.PromotionHistoryEntry
	for j := len(before) - 1; j >= 0; j-- {
		b := &before[j]
		if b.Result == appstudio.PromotionRunCompleteResultSuccess && b.RolledBackBy == "" {
			break // the last good one: nothing failed since, or the failures are before it
		}
		if b.Result == appstudio.PromotionRunCompleteResultFailure {
			start = b
		}
	}
	from := 0.0
	ok := false
	if start != nil {
		from, ok = float64(start.CompletionTime.Unix()), true
	}
	if e.Kind == appstudio.PromotionKindRollback && e.StartTime != nil && (!ok || float64(e.StartTime.Unix()) < from) {
		from, ok = float64(e.StartTime.Unix()), true
	}
	if !ok {
		return 0, false
	}
	return max(0, float64(e.CompletionTime.Unix())-from), true
}

func (d dora) observe(h *appstudio.PromotionHistory) {
	labels := []string{h.Namespace, h.Spec.Application, h.Spec.Environment}
	for result, n := range d.promotions {
		Promotions.WithLabelValues(append(labels, result)...).Add(float64(n))
	}
	for cause, n := range d.failures {
		PromotionFailures.WithLabelValues(append(labels, cause)...).Add(float64(n))
	}
	for _, s := range d.leadTimes {
		LeadTime.WithLabelValues(labels...).Observe(s)
	}
	for _, s := range d.restores {
		TimeToRestore.WithLabelValues(labels...).Observe(s)
	}
}

// observeHistories adds the delivery metrics' handler to c's PromotionHistory
// informer; leader says whether this replica counts.
func observeHistories(ctx context.Context, c cache.Informers, leader func() bool) error {
	inf, err := c.GetInformer(ctx, &appstudio.PromotionHistory{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("PromotionHistory informer: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		old, ok1 := o.(*appstudio.PromotionHistory)
		cur, ok2 := n.(*appstudio.PromotionHistory)
		if !ok1 || !ok2 || !leader() {
			return
		}
		doraOf(old, cur).observe(cur)
	}})
	return err
}
