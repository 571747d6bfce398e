package notifications

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// refusalOf is the refusal that names every refused subscription, or nil.
func refusalOf(refused []string) *kernel.Refusal {
	if len(refused) == 0 {
		return nil
	}
	return kernel.Refuse(as.EnvironmentReasonNotificationsRefused, "nothing is sent for %s", strings.Join(refused, "; "))
}

// notificationsCondition is the Environment's Notifications condition: False
// with the refusal, else True for the n subscriptions that are delivered.
func notificationsCondition(env *as.Environment, refusal *kernel.Refusal, n int) metav1.Condition {
	c := metav1.Condition{Type: as.EnvironmentConditionNotifications, ObservedGeneration: env.Generation}
	if refusal != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, refusal.Reason, refusal.Message
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, as.EnvironmentReasonNotificationsSubscribed
	c.Message = fmt.Sprintf("%d subscription(s) are delivered", n)
	return c
}

// set sets the condition, with a Warning Event when a refusal is new or changed.
func (r *SubscriptionReconciler) set(env *as.Environment, refusal *kernel.Refusal, n int) {
	kernel.SetCondition(r.Recorder, env, &env.Status.Conditions, notificationsCondition(env, refusal, n), r.Now.Now(), refusal != nil)
}

// removeCondition drops the condition of an Environment no longer subscribed.
func removeCondition(env *as.Environment) {
	meta.RemoveStatusCondition(&env.Status.Conditions, as.EnvironmentConditionNotifications)
}

func asPlatform(err error, target *errPlatform) bool { return errors.As(err, target) }
