package sidecar

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Run creates and starts the manager until ctx ends. An API server that fails
// (discovery at start-up, caches that do not sync in time) does not end the
// sidecar: the manager is made and started again with backoff, and the sidecar
// is not ready meanwhile. It returns only when ctx ends (nil) or the leader
// lease is lost (an error: another replica has taken over, and a restart
// starts this one afresh as a follower).
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	log := ctrl.Log.WithName("sidecar")
	cfg = retryReads(cfg)
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Cap: 30 * time.Second, Steps: 1 << 30}
	for {
		started := time.Now()
		mgr, err := New(ctx, cfg, o)
		if err == nil {
			log.Info("starting gitops-service", "argocdNamespace", o.ArgoNamespace)
			err = mgr.Start(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && strings.Contains(err.Error(), "leader election lost") {
			return err
		}
		if time.Since(started) > 5*time.Minute {
			// It ran for a while: a new failure starts the backoff afresh.
			backoff.Steps, backoff.Duration = 1<<30, 500*time.Millisecond
		}
		delay := backoff.Step()
		log.Error(err, "the manager stopped: starting it again", "after", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}
