package metrics

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Attach registers the metrics (once) and points the state collector and the
// run durations at mgr's cache; called for each manager the sidecar makes.
func Attach(ctx context.Context, mgr ctrl.Manager) error {
	Register()
	State.Use(mgr.GetCache(), mgr.Elected())
	return ObserveRuns(ctx, mgr.GetCache(), mgr.Elected())
}
