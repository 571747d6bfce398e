package kernel

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestOutcome(t *testing.T) {
	transient := errors.New("connection refused")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "a", errors.New("changed"))
	cases := []struct {
		name    string
		result  ctrl.Result
		err     error
		want    ctrl.Result
		wantErr error
	}{
		{"success keeps the result", ctrl.Result{RequeueAfter: time.Minute}, nil, ctrl.Result{RequeueAfter: time.Minute}, nil},
		{"stale cache: soon, no error", ctrl.Result{}, fmt.Errorf("reading: %w", ErrStaleCache), ctrl.Result{RequeueAfter: StaleCacheRetry}, nil},
		{"waiting: its own interval, no error", ctrl.Result{}, Wait("Waiting", 7*time.Second, "the %s", "environment"), ctrl.Result{RequeueAfter: 7 * time.Second}, nil},
		{"wrapped waiting", ctrl.Result{}, fmt.Errorf("x: %w", Wait("Waiting", time.Second, "y")), ctrl.Result{RequeueAfter: time.Second}, nil},
		{"refusal: default retry, no error", ctrl.Result{}, Refuse("Bad", "spec.x"), ctrl.Result{RequeueAfter: RefusalRetry}, nil},
		{"refusal with its own retry", ctrl.Result{}, Refuse("Bad", "spec.x").Retry(3 * time.Second), ctrl.Result{RequeueAfter: 3 * time.Second}, nil},
		{"conflict: at once, no error", ctrl.Result{}, conflict, ctrl.Result{Requeue: true}, nil},
		{"transient: returned for backoff", ctrl.Result{RequeueAfter: time.Minute}, transient, ctrl.Result{}, transient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Outcome(c.result, c.err)
			if got != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Fatalf("Outcome(%v, %v) = %v, %v; want %v, %v", c.result, c.err, got, err, c.want, c.wantErr)
			}
		})
	}
}

func TestRefusalAndWaitingAreFoundThroughWrapping(t *testing.T) {
	r := Refuse("Bad", "spec.%s is empty", "path").Keeping()
	if got := AsRefusal(fmt.Errorf("apply: %w", r)); got != r || !got.Keep || got.Message != "spec.path is empty" {
		t.Fatalf("AsRefusal = %+v", got)
	}
	if AsWaiting(r) != nil || AsRefusal(errors.New("x")) != nil || AsRefusal(nil) != nil {
		t.Fatal("a refusal is not a waiting, and plain errors are neither")
	}
	w := Wait("WaitingForEnvironment", WaitingRetry, "environment %q", "prod")
	if got := AsWaiting(fmt.Errorf("a: %w", w)); got != w || got.Error() != `waiting for environment "prod"` {
		t.Fatalf("AsWaiting = %+v", got)
	}
}

// One "not ours" error: what and why in its message, found by errors.As and
// errors.Is(ErrNotOurs) through wrapping, and by nothing else.
func TestNotOursError(t *testing.T) {
	cases := []struct {
		err  *NotOursError
		want string
	}{
		{&NotOursError{Kind: "ApplicationSet", Namespace: "argocd", Name: "x"}, "ApplicationSet argocd/x exists and was not created by the GitOps Service"},
		{&NotOursError{Kind: "ClusterRole", Name: "r"}, "ClusterRole r exists and was not created by the GitOps Service"},
		{&NotOursError{Kind: "ServiceAccount", Namespace: "kube-system", Name: "sa", Why: "for this environment"},
			"ServiceAccount kube-system/sa exists and was not created by the GitOps Service for this environment"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		wrapped := fmt.Errorf("applying: %w", c.err)
		var found *NotOursError
		if !errors.As(wrapped, &found) || found != c.err {
			t.Errorf("errors.As does not find %q", c.want)
		}
		if !errors.Is(wrapped, ErrNotOurs) {
			t.Errorf("errors.Is(%q, ErrNotOurs) is false", c.want)
		}
	}
	for _, other := range []error{errors.New("exists and was not created by the GitOps Service"), Refuse("NotOurs", "x"), ErrStaleCache} {
		if errors.Is(other, ErrNotOurs) && other != ErrNotOurs {
			t.Errorf("errors.Is(%v, ErrNotOurs) is true", other)
		}
		if errors.As(other, new(*NotOursError)) {
			t.Errorf("errors.As finds a *NotOursError in %v", other)
		}
	}
}
