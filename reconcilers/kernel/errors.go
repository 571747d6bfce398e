package kernel

import (
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Refusal is a problem the user must fix: the reason and message of a
// condition and of a Warning Event. Its message never holds a credential.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// Refuse makes a Refusal with a formatted message.
func Refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ErrStaleCache says our own write has not reached the cache yet: its watch
// event requeues us, and StaleCacheRetry covers a lost one.
var ErrStaleCache = errors.New("the cache does not show an object we wrote yet")

// StaleCacheRetry is how soon a reconcile that met ErrStaleCache runs again.
const StaleCacheRetry = 500 * time.Millisecond

// Waiting says we wait for another object (or a deletion) and look again after
// After, without an error (controller-runtime ignores RequeueAfter with one).
type Waiting struct {
	After time.Duration
	For   string
}

func (w *Waiting) Error() string { return "waiting for " + w.For }

// Outcome turns the error model into a controller-runtime result: a stale
// cache or a Waiting requeue without error, anything else is returned as is
// (nil: result). Refusals are conditions, so callers handle them before.
func Outcome(result ctrl.Result, err error) (ctrl.Result, error) {
	var w *Waiting
	switch {
	case err == nil:
		return result, nil
	case errors.Is(err, ErrStaleCache):
		return ctrl.Result{RequeueAfter: StaleCacheRetry}, nil
	case errors.As(err, &w):
		return ctrl.Result{RequeueAfter: w.After}, nil
	}
	return ctrl.Result{}, err
}
