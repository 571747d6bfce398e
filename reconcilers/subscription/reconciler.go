// Package subscription polls what a SnapshotSubscription watches (image
// repositories by tag policy, git branches and tags) and makes one Snapshot
// of the Application each time something new appears. Registries are reached
// only through reconcilers/registry and repositories through
// reconcilers/gitprobe: credentials come from Secrets of the subscription's
// own namespace, and every address dialled passes the egress policy. The
// Snapshot's name derives from its content and it is made with Create, so a
// restart or a second replica never makes two. A webhook (webhook.go) asks
// for a poll at once.
package subscription

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotsubscriptions,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotsubscriptions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshots,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=applications;components,verbs=get;list;watch
// Registry, git and webhook Secrets are read one at a time, uncached, from
// the subscription's own namespace; Argo CD's trusted CAs from its namespace.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get,namespace=argocd
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler polls SnapshotSubscriptions.
type Reconciler struct {
	Client client.Client
	// APIReader reads the tenants' Secrets (never cached) and a Snapshot
	// that a Create found existing.
	APIReader     client.Reader
	ArgoNamespace string
	Recorder      record.EventRecorder
	// Egress is the rule for the registries and repositories dialled.
	Egress *egress.Policy
	// Now is the clock; nil is the wall clock.
	Now kernel.Clock
}

// Reconcile polls one subscription when it is due and makes a Snapshot when
// the poll found other content than the last Snapshot's. It writes its
// status once, and only what changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	sub := &as.SnapshotSubscription{}
	if err := r.Client.Get(ctx, req.NamespacedName, sub); err != nil {
		// Nothing to clean up: the Snapshots made stay (they may be deployed).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sub.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.Now.Now()
	if ok, at := due(now.Time, sub); !ok {
		return ctrl.Result{RequeueAfter: at.Sub(now.Time)}, nil
	}
	patcher := kernel.NewStatusPatcher(r.Client, sub)
	defer patcher.Patch(ctx, sub, &err)

	resolved, snap, err := r.poll(ctx, sub)
	if kernel.Transient(err) {
		// Not the tenant's sources: the API server. Backoff, status as it was.
		return kernel.Outcome(ctrl.Result{}, err)
	}
	st := &sub.Status
	st.ObservedGeneration = sub.Generation
	st.LastPollTime = &now
	refusal := kernel.AsRefusal(err)
	cond := metav1.Condition{Type: as.SubscriptionConditionSourcesResolved, ObservedGeneration: sub.Generation}
	var wait time.Duration
	if refusal != nil {
		st.ConsecutiveFailures++
		wait = backoff(st.ConsecutiveFailures, interval(sub))
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, refusal.Reason, refusal.Message
	} else {
		st.ConsecutiveFailures = 0
		wait = interval(sub)
		st.Components = resolved
		if snap != nil {
			st.LastSnapshot, st.LastSnapshotDigest, st.LastSnapshotTime = snap.Name, snap.ContentDigest(), &now
		}
		cond.Status, cond.Reason = metav1.ConditionTrue, as.SubscriptionReasonResolved
		cond.Message = fmt.Sprintf("%d component(s) resolved; last Snapshot %s", len(resolved), st.LastSnapshot)
	}
	next := metav1.NewTime(now.Add(wait))
	st.NextPollTime = &next
	kernel.SetCondition(r.Recorder, sub, &st.Conditions, cond, now, refusal != nil)
	kernel.SetReady(&st.Conditions, refusal.AsError(), kernel.Done(as.SubscriptionReasonResolved, "polled; next poll %s", next.UTC().Format(time.RFC3339)), sub.Generation, now)
	return ctrl.Result{RequeueAfter: wait}, nil
}

// poll resolves every watched source and makes the Snapshot when its
// content is new; snap is nil when it is not. A problem of the tenant's
// (spec, Secret, registry, repository) is a *kernel.Refusal.
func (r *Reconciler) poll(ctx context.Context, sub *as.SnapshotSubscription) ([]found, *as.Snapshot, error) {
	if refusal := validate(sub); refusal != nil {
		return nil, nil, refusal
	}
	app := &as.Application{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: sub.Spec.Application}, app); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, kernel.Refuse(as.SubscriptionReasonApplicationNotFound, "Application %q was not found in namespace %q", sub.Spec.Application, sub.Namespace)
		}
		return nil, nil, fmt.Errorf("reading Application %s: %w", sub.Spec.Application, err)
	}
	var list as.ComponentList
	if err := r.Client.List(ctx, &list, client.InNamespace(sub.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing Components: %w", err)
	}
	var components []as.Component
	for _, c := range list.Items {
		if c.Spec.Application == sub.Spec.Application && c.DeletionTimestamp.IsZero() {
			components = append(components, c)
		}
	}
	resolved := map[string]found{}
	var out []found
	for _, w := range sub.Spec.Components {
		if !hasComponent(components, w.Name) {
			return nil, nil, kernel.Refuse(as.SubscriptionReasonComponentNotFound,
				"Component %q of Application %q was not found in namespace %q", w.Name, sub.Spec.Application, sub.Namespace)
		}
		f, err := r.resolve(ctx, sub.Namespace, w)
		if err != nil {
			return nil, nil, err
		}
		resolved[w.Name] = f
		out = append(out, f)
	}
	snap, refusal := snapshotFor(sub, components, resolved)
	if refusal != nil {
		return nil, nil, refusal
	}
	if snap.ContentDigest() == sub.Status.LastSnapshotDigest {
		return out, nil, nil
	}
	made, err := r.create(ctx, snap)
	if err != nil {
		return nil, nil, err
	}
	return out, made, nil
}

// create makes snap, or finds it made (by another replica, or by this one
// before a restart lost the status write): the same content under the same
// name is the same Snapshot. Other content under its name is refused.
func (r *Reconciler) create(ctx context.Context, snap *as.Snapshot) (*as.Snapshot, error) {
	err := r.Client.Create(ctx, snap)
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("made a Snapshot", "snapshot", snap.Name)
		return snap, nil
	}
	if apierrors.IsInvalid(err) {
		// What the tenant's Components hold (e.g. a name a Snapshot's
		// component cannot have): theirs to fix, not a backoff.
		return nil, kernel.Refuse(as.SubscriptionReasonInvalidSpec, "the Snapshot %s is not valid: %v", snap.Name, err)
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Snapshot %s: %w", snap.Name, err)
	}
	have := &as.Snapshot{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(snap), have); err != nil {
		return nil, fmt.Errorf("reading Snapshot %s: %w", snap.Name, err)
	}
	if have.Spec.Application != snap.Spec.Application || have.ContentDigest() != snap.ContentDigest() {
		return nil, kernel.Refuse(as.SubscriptionReasonSnapshotNameTaken,
			"Snapshot %q exists with other content: it was not made by this subscription; delete or rename it", snap.Name)
	}
	return have, nil
}

func hasComponent(components []as.Component, name string) bool {
	for _, c := range components {
		if c.Name == name {
			return true
		}
	}
	return false
}
