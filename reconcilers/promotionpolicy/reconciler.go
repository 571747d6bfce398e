package promotionpolicy

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler sets a PromotionPolicy's Ready condition: True when its
// selectors parse and every rule compiles within the cost limit, False
// (InvalidRule, with a Warning Event) naming what does not. The webhook
// refuses such a policy; one written while it was not there (or by an
// older sidecar) is said so here, and the promotions it binds wait.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Now is the clock; tests may set it.
	Now kernel.Clock
}

func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).Named("promotionpolicy").For(&as.PromotionPolicy{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).Complete(r)
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	p := &as.PromotionPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := kernel.NewStatusPatcher(r.Client, p)
	defer patcher.Patch(ctx, p, &err)
	p.Status.ObservedGeneration = p.Generation
	c := metav1.Condition{Type: kernel.ConditionReady, Status: metav1.ConditionTrue, Reason: as.PromotionPolicyReasonCompiled,
		Message: fmt.Sprintf("%d rules compiled", len(p.Spec.Rules)), ObservedGeneration: p.Generation}
	if errs := Check(&p.Spec); len(errs) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, as.PromotionPolicyReasonInvalidRule
		c.Message = cut(errs.ToAggregate().Error()+": promotions into the Environments it binds wait until it is fixed", policyrules.MaxMessage)
	}
	kernel.SetCondition(r.Recorder, p, &p.Status.Conditions, c, r.Now.Now(), c.Status == metav1.ConditionFalse)
	return ctrl.Result{}, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-len("…")], "") + "…"
}
