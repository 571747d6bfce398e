package kernel

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// ConditionReady is the summary condition every kind we own carries beside
// the seed's conditions, so `kubectl wait --for=condition=Ready` and
// kstatus-based tools know when a CR is done (True), failed or refused
// (False, with a reason) or still in progress (Unknown).
const ConditionReady = "Ready"

// Reasons of Ready the kernel chooses; kinds pass their own otherwise.
const (
	ReasonProgressing = "Progressing"
	ReasonSucceeded   = "Succeeded"
)

// Readiness is what a kind says about itself after a pass that returned nil.
type Readiness struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Done: the object reached what its spec asks for.
func Done(reason, format string, args ...any) Readiness {
	return Readiness{Status: metav1.ConditionTrue, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Failed: the object ended in a failure that another pass does not change
// (a finished run that failed).
func Failed(reason, format string, args ...any) Readiness {
	return Readiness{Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Progressing: not done yet, nothing wrong.
func Progressing(format string, args ...any) Readiness {
	return Readiness{Status: metav1.ConditionUnknown, Reason: ReasonProgressing, Message: fmt.Sprintf(format, args...)}
}

// ReadyCondition derives Ready from one pass: err is what the pass returned,
// r what the kind says of itself when err is nil. A Refusal is False with its
// reason, a Waiting is Unknown with its reason (in progress, per kstatus: not
// a failure). A transient error (a stale cache included) says nothing about
// the object: ok is false and Ready stays as it was.
func ReadyCondition(err error, r Readiness) (c metav1.Condition, ok bool) {
	c = metav1.Condition{Type: ConditionReady}
	switch {
	case err == nil:
		c.Status, c.Reason, c.Message = r.Status, r.Reason, r.Message
		if c.Status == "" {
			c.Status = metav1.ConditionUnknown
		}
		if c.Reason == "" {
			c.Reason = ReasonProgressing
			if c.Status == metav1.ConditionTrue {
				c.Reason = ReasonSucceeded
			}
		}
	case AsRefusal(err) != nil:
		ref := AsRefusal(err)
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ref.Reason, ref.Message
	case AsWaiting(err) != nil:
		w := AsWaiting(err)
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, w.Reason, "waiting for "+w.For
		if c.Reason == "" {
			c.Reason = ReasonProgressing
		}
	default:
		return c, false
	}
	return c, true
}

// SetReady sets Ready in conds from one pass (see ReadyCondition). A
// transient outcome leaves it as it was, or makes it Unknown when there is
// none yet. No Event: the kind's own conditions already warn.
func SetReady(conds *[]metav1.Condition, err error, r Readiness, generation int64, now metav1.Time) {
	c, ok := ReadyCondition(err, r)
	if !ok {
		if meta.FindStatusCondition(*conds, ConditionReady) != nil {
			last(*conds, func(c metav1.Condition) bool { return c.Type == ConditionReady })
			return
		}
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonProgressing
	}
	c.ObservedGeneration = generation
	SetCondition(nil, nil, conds, c, now, false)
	last(*conds, func(c metav1.Condition) bool { return c.Type == ConditionReady })
}

// last moves the element that is picks out to the end of s: Ready comes after the
// seed's conditions, so that their places in the list stay as they were.
func last[T any](s []T, is func(T) bool) {
	for i := range s {
		if is(s[i]) {
			picked := s[i]
			copy(s[i:], s[i+1:])
			s[len(s)-1] = picked
			return
		}
	}
}

// SetGitOpsReady is SetReady for the GitOps kinds' condition type.
func SetGitOpsReady(conds *[]v1.GitOpsDeploymentCondition, err error, r Readiness, now metav1.Time) {
	c, ok := ReadyCondition(err, r)
	if !ok {
		for _, have := range *conds {
			if have.Type == ConditionReady {
				last(*conds, func(c v1.GitOpsDeploymentCondition) bool { return c.Type == ConditionReady })
				return
			}
		}
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonProgressing
	}
	*conds = v1.SetCondition(*conds, ConditionReady, v1.GitOpsConditionStatus(c.Status), v1.GitOpsConditionReason(c.Reason), c.Message, now)
	last(*conds, func(c v1.GitOpsDeploymentCondition) bool { return c.Type == ConditionReady })
}

// AsError is r as an error: nil for a nil r (a nil *Refusal put in an error
// is an error that is not nil).
func (r *Refusal) AsError() error {
	if r == nil {
		return nil
	}
	return r
}
