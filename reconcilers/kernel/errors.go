package kernel

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The error model, the only one: every reconciler maps what one pass found to
// one of these, and Outcome turns it into what controller-runtime does next.
//
//   - *Refusal: a problem the user must fix. A condition and a Warning Event;
//     looked at again after its After (RefusalRetry by default), no backoff
//     storm. Keep says what was already deployed stays as it is.
//   - *Waiting: another object (or a deletion, or a time) we wait for. A
//     condition but no Warning Event; looked at again after its After.
//   - ErrStaleCache: our own write is not in the cache yet; its watch event
//     requeues us and StaleCacheRetry covers a lost one.
//   - *NotOursError: an object we need (of our name, or one we would use)
//     exists and is not ours. It is never touched nor used; each caller turns
//     it into a Refusal of its own reason (unconverted it is transient).
//   - anything else is transient: returned, so controller-runtime backs off.
//     A conflict is transient too but retried at once (someone else wrote
//     first; the next read sees it).

// Named intervals, once per meaning. Flags may override the defaults built on them.
const (
	// StaleCacheRetry: our own write has not reached the cache yet.
	StaleCacheRetry = 500 * time.Millisecond
	// PollInterval: something we started ends without an event we watch
	// (a deletion, a sync, a release).
	PollInterval = 2 * time.Second
	// UnwatchedRecheck: a state we cannot watch changes (an object that is not
	// ours, Argo CD's resource tree, an input read around the cache).
	UnwatchedRecheck = 10 * time.Second
	// WaitingRetry: another object we wait for usually wakes us by its watch
	// event; this covers an event that came before we were cached.
	WaitingRetry = 30 * time.Second
	// RefusalRetry: a problem the user must fix is looked at again this often.
	RefusalRetry = 30 * time.Second
)

// Refusal is a problem the user must fix: the reason and message of a
// condition and of a Warning Event. Its message never holds a credential.
type Refusal struct {
	// Reason names the failure (InvalidSource, SecretNotFound, ...): the
	// Warning Event's reason, Ready's and the warning_events metric's label.
	Reason  string
	Message string
	// Condition is the reason of the kind's own error condition when the seed
	// fixes it to a catch-all (ErrorOccurred); "" means Reason. See
	// ConditionReason.
	Condition string
	// Keep: what was deployed for the object stays (nothing is deleted or
	// rewritten because of this refusal).
	Keep bool
	// After: when to look again; 0 means RefusalRetry.
	After time.Duration
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// Refuse makes a Refusal with a formatted message.
func Refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// InCondition sets the reason the kind's own error condition shows (the
// seed's catch-all, e.g. ErrorOccurred); the Event and Ready keep Reason.
func (r *Refusal) InCondition(reason string) *Refusal {
	r.Condition = reason
	return r
}

// ConditionReason is the reason of the kind's own error condition.
func (r *Refusal) ConditionReason() string {
	if r.Condition != "" {
		return r.Condition
	}
	return r.Reason
}

// Keeping marks the refusal as one that leaves what was deployed in place.
func (r *Refusal) Keeping() *Refusal {
	r.Keep = true
	return r
}

// Retry sets when to look again.
func (r *Refusal) Retry(after time.Duration) *Refusal {
	r.After = after
	return r
}

// NotOursError: an object of the name we need, or one we were about to
// use, exists and was not made by the GitOps Service for what we need it for.
// Whoever finds one never touches or uses it. It is the one "not ours" error:
// errors.As finds what and why; errors.Is(err, ErrNotOurs) says only that.
type NotOursError struct {
	// What: the object.
	Kind, Namespace, Name string
	// Why continues the message: for what it would have to have been made and
	// what follows ("for this environment"); "" when the name says it all.
	Why string
}

func (e *NotOursError) Error() string {
	what := e.Name
	if e.Namespace != "" {
		what = e.Namespace + "/" + e.Name
	}
	msg := e.Kind + " " + what + " exists and was not created by the GitOps Service"
	if e.Why != "" {
		msg += " " + e.Why
	}
	return msg
}

// ErrNotOurs is what every *NotOursError is for errors.Is.
var ErrNotOurs = errors.New("exists and was not created by the GitOps Service")

// Is makes errors.Is(err, ErrNotOurs) true for every *NotOursError.
func (e *NotOursError) Is(target error) bool { return target == ErrNotOurs }

// ErrStaleCache says our own write has not reached the cache yet.
var ErrStaleCache = errors.New("the cache does not show an object we wrote yet")

// Waiting says we wait for another object (or a deletion, or a time) and look
// again after After, without an error (controller-runtime ignores
// RequeueAfter with one) and without a Warning Event.
type Waiting struct {
	// Reason and For are the condition's reason and message (what we wait for).
	Reason string
	For    string
	After  time.Duration
}

func (w *Waiting) Error() string { return "waiting for " + w.For }

// Wait makes a Waiting with a formatted message.
func Wait(reason string, after time.Duration, format string, args ...any) *Waiting {
	return &Waiting{Reason: reason, For: fmt.Sprintf(format, args...), After: after}
}

// AsRefusal is err's Refusal, or nil.
func AsRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// AsWaiting is err's Waiting, or nil.
func AsWaiting(err error) *Waiting {
	var w *Waiting
	if errors.As(err, &w) {
		return w
	}
	return nil
}

// Outcome turns the error model into a controller-runtime result. result is
// used only when err is nil (e.g. a recheck of a healthy object).
func Outcome(result ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil {
		return result, nil
	}
	if errors.Is(err, ErrStaleCache) {
		return ctrl.Result{RequeueAfter: StaleCacheRetry}, nil
	}
	if w := AsWaiting(err); w != nil {
		return ctrl.Result{RequeueAfter: w.After}, nil
	}
	if r := AsRefusal(err); r != nil {
		if r.After > 0 {
			return ctrl.Result{RequeueAfter: r.After}, nil
		}
		return ctrl.Result{RequeueAfter: RefusalRetry}, nil
	}
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, err
}
