package metrics

import (
	"context"
	"fmt"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	gitops "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// promotionFinished says whether a PromotionRun turned Completed between old
// and cur, with its result and how long it took up to now.
func promotionFinished(old, cur *appstudio.PromotionRun, now time.Time) (result string, seconds float64, ok bool) {
	if old.Status.State == appstudio.PromotionRunStateCompleted || cur.Status.State != appstudio.PromotionRunStateCompleted {
		return "", 0, false
	}
	start := cur.Status.PromotionStartTime.Time
	if start.IsZero() {
		start = cur.CreationTimestamp.Time
	}
	return or(string(cur.Status.CompletionResult), "Unknown"), elapsed(start, now), true
}

// syncRunFinished says whether a SyncRun finished between old and cur (the
// API's Finished rule), with its phase and how long it took up to now.
func syncRunFinished(old, cur *gitops.GitOpsDeploymentSyncRun, now time.Time) (phase string, seconds float64, ok bool) {
	if old.Status.Finished() || !cur.Status.Finished() {
		return "", 0, false
	}
	start := cur.CreationTimestamp.Time
	if cur.Status.StartedAt != nil {
		start = cur.Status.StartedAt.Time
	}
	return string(cur.Status.Phase), elapsed(start, now), true
}

func elapsed(start, now time.Time) float64 {
	if start.IsZero() || now.Before(start) {
		return 0
	}
	return now.Sub(start).Seconds()
}

// ObserveRuns adds handlers to c's PromotionRun and SyncRun informers that
// observe a run's duration when an update shows it finished, while elected
// (one replica counts each run). A run that finished while no replica
// watched (a restart) is not observed: the durations are of runs seen ending.
func ObserveRuns(ctx context.Context, c cache.Informers, elected <-chan struct{}) error {
	leader := func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}
	if err := observeHistories(ctx, c, leader); err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &appstudio.PromotionRun{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("PromotionRun informer: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		old, ok1 := o.(*appstudio.PromotionRun)
		cur, ok2 := n.(*appstudio.PromotionRun)
		if !ok1 || !ok2 || !leader() {
			return
		}
		if result, s, ok := promotionFinished(old, cur, time.Now()); ok {
			PromotionRunDuration.WithLabelValues(result).Observe(s)
		}
	}}); err != nil {
		return err
	}
	inf, err = c.GetInformer(ctx, &gitops.GitOpsDeploymentSyncRun{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("GitOpsDeploymentSyncRun informer: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		old, ok1 := o.(*gitops.GitOpsDeploymentSyncRun)
		cur, ok2 := n.(*gitops.GitOpsDeploymentSyncRun)
		if !ok1 || !ok2 || !leader() {
			return
		}
		if phase, s, ok := syncRunFinished(old, cur, time.Now()); ok {
			SyncRunDuration.WithLabelValues(phase).Observe(s)
		}
	}})
	return err
}
