// Package notifications sends promotion events (waiting for approval,
// entered, verified, failed, rolled back, frozen) through Argo CD's
// notifications engine, with the services, templates and secret the platform
// keeps in argocd-notifications-cm / argocd-notifications-secret in the Argo
// CD namespace, and the triggers and templates we ship (catalog.yaml, which
// the platform's keys override). Tenants subscribe their Environments with
// Argo CD's annotations (notifications.argoproj.io/subscribe.<trigger>.<service>);
// a namespace may use only the services and recipients the platform grants
// it (GrantsKey). Two controllers: Reconciler sends a PromotionRun's events,
// SubscriptionReconciler says on each Environment which of its
// subscriptions are refused and why.
//
// # Delivery guarantee
//
// Each delivery (event, trigger condition, service, recipient) is recorded on
// the PromotionRun (as.AnnotationNotified) after the engine reports it sent,
// before the next one is sent; the record is read from the API server, not
// the cache, before sending. So every event is delivered at least once
// (a failed send is retried with backoff and only a success is recorded),
// and a delivery recorded is never sent again, by this sidecar or one that
// starts after it. The one repeat possible: the sidecar dies after a
// receiver took a delivery and before its record was written; that one
// delivery is sent again after the restart, with the same event.id so the
// receiver can drop it. An event older than MaxEventAge when first looked
// at is not sent (see due).
package notifications

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments/status,verbs=get;update;patch
// The platform's notifications ConfigMap and Secret are read one at a time, uncached.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get,namespace=argocd,resourceNames=argocd-notifications-cm
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get,namespace=argocd,resourceNames=argocd-notifications-secret
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Argo CD's names of the notifications ConfigMap and Secret.
const (
	DefaultConfigMap = "argocd-notifications-cm"
	DefaultSecret    = "argocd-notifications-secret"
	// DefaultMaxEventAge: see Reconciler.MaxEventAge.
	DefaultMaxEventAge = time.Hour
)

// Platform reads the platform's notifications configuration from the Argo
// CD namespace, uncached, and keeps the parsed configuration until either
// object changes.
type Platform struct {
	APIReader     client.Reader
	ArgoNamespace string
	// ConfigMap and Secret default to Argo CD's names.
	ConfigMap, Secret string

	mu      sync.Mutex
	version string
	cfg     *config
}

// load is the platform's configuration, nil when it has no notifications
// ConfigMap (notifications are not enabled).
func (p *Platform) load(ctx context.Context) (*config, error) {
	cm := &corev1.ConfigMap{}
	err := p.APIReader.Get(ctx, types.NamespacedName{Namespace: p.ArgoNamespace, Name: cmp.Or(p.ConfigMap, DefaultConfigMap)}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the notifications ConfigMap: %w", err)
	}
	secret := &corev1.Secret{}
	err = p.APIReader.Get(ctx, types.NamespacedName{Namespace: p.ArgoNamespace, Name: cmp.Or(p.Secret, DefaultSecret)}, secret)
	if apierrors.IsNotFound(err) {
		secret = nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the notifications Secret: %w", err)
	}
	version := cm.ResourceVersion + "/"
	if secret != nil {
		version += secret.ResourceVersion
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg != nil && p.version == version {
		return p.cfg, nil
	}
	cfg, err := parseConfig(cm, secret)
	if err != nil {
		return nil, errPlatform{err}
	}
	p.cfg, p.version = cfg, version
	return cfg, nil
}

// errPlatform is a configuration of the platform's that cannot be used: the
// platform's to fix, and never shown to tenants (it may quote the secret).
type errPlatform struct{ error }

func (e errPlatform) Unwrap() error { return e.error }

// Reconciler sends the events of PromotionRuns to the subscriptions of their
// Environments.
type Reconciler struct {
	Client client.Client
	// APIReader reads the delivery record of a run fresh before sending.
	APIReader client.Reader
	Platform  *Platform
	// MaxEventAge: an event older than this when first looked at is not
	// sent; DefaultMaxEventAge when 0.
	MaxEventAge time.Duration
	Now         kernel.Clock
}

// Reconcile delivers the events of one run that are due and not yet recorded
// as delivered. No status, no finalizer: what it writes is the run's record.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &as.PromotionRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var envs as.EnvironmentList
	if err := r.Client.List(ctx, &envs, client.InNamespace(run.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	isSubscribed := func(name string) bool {
		e := find(envs.Items, name)
		return e != nil && subscribed(e.Annotations)
	}
	todo := due(eventsOf(run, envs.Items), isSubscribed, r.Now.Now().Time, cmp.Or(r.MaxEventAge, DefaultMaxEventAge))
	if len(todo) == 0 {
		return ctrl.Result{}, nil
	}
	cfg, err := r.Platform.load(ctx)
	if cfg == nil || err != nil {
		return ctrl.Result{}, err
	}
	engine, err := api.NewAPI(*cfg.engine, func(vars map[string]any, _ services.Destination) map[string]any { return vars })
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("starting the notifications engine: %s", cfg.redact(err.Error()))
	}
	// The record as the API server has it: the cache may not show our last write yet.
	fresh := &as.PromotionRun{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, fresh); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if fresh.UID != run.UID {
		return ctrl.Result{}, nil
	}
	done := recordedOn(fresh.Annotations)
	// A destination that fails does not hold the others up: each failure is
	// retried (with backoff) and only what was sent is recorded.
	var failed []error
	for _, ev := range todo {
		env := find(envs.Items, ev.Environment)
		dests, _ := cfg.subscriptionsOf(run.Namespace, env.Annotations) // the refused: SubscriptionReconciler
		vars := varsOf(run, env, ev)
		for _, d := range dests {
			results, err := engine.RunTrigger(d.Trigger, vars)
			if err != nil {
				failed = append(failed, fmt.Errorf("trigger %s: %s", d.Trigger, cfg.redact(err.Error())))
				continue
			}
			for _, c := range results {
				key := deliveryKey(ev, d, c)
				if !c.Triggered || done[key] != 0 {
					continue
				}
				if err := engine.Send(vars, c.Templates, d.Destination); err != nil {
					failed = append(failed, fmt.Errorf("sending %s of %s to service %s: %s", ev.Key(), run.Name, d.Service, cfg.redact(err.Error())))
					continue
				}
				ctrl.LoggerFrom(ctx).V(1).Info("notified", "event", ev.Key(), "trigger", d.Trigger, "service", d.Service)
				if err := r.record(ctx, fresh, done, key); err != nil {
					return ctrl.Result{}, err
				}
			}
		}
	}
	return ctrl.Result{}, errors.Join(failed...)
}

// record adds key to run's record (done, and the run's annotation), retrying
// on conflicts: the send it records happened.
func (r *Reconciler) record(ctx context.Context, run *as.PromotionRun, done deliveries, key string) error {
	done[key] = r.Now.Now().Unix()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &as.PromotionRun{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(run), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.UID != run.UID {
			return nil
		}
		merged := recordedOn(cur.Annotations)
		for k, v := range done {
			merged[k] = v
		}
		raw, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": cur.ResourceVersion, "annotations": map[string]string{as.AnnotationNotified: string(raw)},
		}})
		if err != nil {
			return err
		}
		if err := r.Client.Patch(ctx, cur, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return client.IgnoreNotFound(err)
		}
		return nil
	})
}

// SubscriptionReconciler keeps the Notifications condition of subscribed
// Environments: which subscriptions the platform refuses this namespace and
// why, with a Warning Event when that changes.
type SubscriptionReconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	Platform *Platform
	Now      kernel.Clock
}

func (r *SubscriptionReconciler) reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	env := &as.Environment{}
	if err := r.Client.Get(ctx, req.NamespacedName, env); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Only this condition is ours: the lock keeps a concurrent write of the
	// Environment reconciler's from being undone.
	patcher := kernel.NewStatusPatcher(r.Client, env).WithOptimisticLock()
	defer patcher.Patch(ctx, env, &err)
	if !subscribed(env.Annotations) {
		removeCondition(env)
		return ctrl.Result{}, nil
	}
	cfg, err := r.Platform.load(ctx)
	var perr errPlatform
	switch {
	case asPlatform(err, &perr):
		ctrl.LoggerFrom(ctx).Error(perr, "the platform's notifications configuration cannot be used")
		r.set(env, kernel.Refuse(as.EnvironmentReasonNotificationsRefused,
			"the platform's notifications configuration cannot be used (the sidecar's log says why)"), 0)
		return ctrl.Result{RequeueAfter: kernel.RefusalRetry}, nil
	case err != nil:
		return ctrl.Result{}, err
	case cfg == nil:
		r.set(env, kernel.Refuse(as.EnvironmentReasonNotificationsRefused,
			"notifications are not enabled: the Argo CD namespace has no %s", cmp.Or(r.Platform.ConfigMap, DefaultConfigMap)), 0)
		return ctrl.Result{RequeueAfter: kernel.RefusalRetry}, nil
	}
	ok, refused := cfg.subscriptionsOf(env.Namespace, env.Annotations)
	if refusal := refusalOf(refused); refusal != nil {
		r.set(env, refusal, 0)
		// The platform may grant it meanwhile (its ConfigMap is not watched).
		return ctrl.Result{RequeueAfter: kernel.RefusalRetry}, nil
	}
	r.set(env, nil, len(ok))
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// Reconcile sets or removes one Environment's Notifications condition; a
// conflict of its locked status write is looked at again at once.
func (r *SubscriptionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kernel.Outcome(r.reconcile(ctx, req))
}

// recheck: a grant withdrawn from a working subscription shows this soon.
const recheck = 5 * time.Minute
