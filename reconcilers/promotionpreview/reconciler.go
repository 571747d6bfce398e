// Package promotionpreview reconciles PromotionPreviews: what promoting a
// Snapshot to an Environment would change there, computed once per spec
// generation with Argo CD's own repo-server, settings, database and diff and
// a server-side dry-run on the target cluster. It writes only the preview's
// status: nothing on any cluster, nothing in Argo CD.
package promotionpreview

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionpreviews,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionpreviews/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshots;environments;components;applications;snapshotenvironmentbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch,namespace=argocd

// Reconciler reconciles PromotionPreviews.
type Reconciler struct {
	Client   client.Client
	Engine   *Engine
	Limiter  *Limiter
	Recorder record.EventRecorder
	// Diffs keeps the full diff of the latest run of each preview, for the
	// panel's backend.
	Diffs *Diffs
	// Now is the clock; tests may set it.
	Now kernel.Clock
}

// Reconcile runs a preview once per spec generation, in the kernel's shape
// (kernel/doc.go) but without a finalizer: a preview makes nothing that
// would need cleaning up.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	pp := &as.PromotionPreview{}
	if err := r.Client.Get(ctx, req.NamespacedName, pp); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Diffs.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pp.DeletionTimestamp.IsZero() || done(pp) {
		return ctrl.Result{}, nil
	}
	patcher := kernel.NewStatusPatcher(r.Client, pp)
	defer patcher.Patch(ctx, pp, &err)
	pp.Status.ObservedGeneration = pp.Generation
	err = r.reconcileNormal(ctx, pp)
	now := r.Now.Now()
	failed := metav1.Condition{Type: as.PromotionPreviewConditionFailed, Status: metav1.ConditionFalse, Reason: kernel.ReasonSucceeded, ObservedGeneration: pp.Generation}
	if ref := kernel.AsRefusal(err); ref != nil {
		failed.Status, failed.Reason, failed.Message = metav1.ConditionTrue, ref.Reason, ref.Message
	}
	if err == nil || kernel.AsRefusal(err) != nil {
		kernel.SetCondition(r.Recorder, pp, &pp.Status.Conditions, failed, now, kernel.AsRefusal(err) != nil)
	}
	kernel.SetReady(&pp.Status.Conditions, err, readiness(pp), pp.Generation, now)
	return kernel.Outcome(ctrl.Result{}, err)
}

// done: the current generation's preview completed.
func done(pp *as.PromotionPreview) bool {
	return pp.Status.CompletedAt != nil && pp.Status.ObservedGeneration == pp.Generation
}

func readiness(pp *as.PromotionPreview) kernel.Readiness {
	if !done(pp) {
		return kernel.Progressing("the preview is running")
	}
	if pp.Status.Clean {
		if pp.Spec.AllEnvironments {
			return kernel.Done(kernel.ReasonSucceeded, "the promotion would apply cleanly in every Environment")
		}
		return kernel.Done(kernel.ReasonSucceeded, "the promotion would apply cleanly")
	}
	if pp.Spec.AllEnvironments {
		return kernel.Failed("DryRunErrors", "the promotion would fail: see status.environments")
	}
	return kernel.Failed("DryRunErrors", "the promotion would fail: see status.components")
}

func (r *Reconciler) reconcileNormal(ctx context.Context, pp *as.PromotionPreview) error {
	if msg := specProblem(pp.Spec); msg != "" {
		// The CRD's rule, repeated where admission checks are off.
		return kernel.Refuse(as.PromotionPreviewReasonInvalid, "%s", msg)
	}
	if !r.Limiter.TryAcquire(pp.Namespace) {
		return kernel.Wait("Queued", kernel.PollInterval, "a place among the previews running (per tenant %d, in all %d)", r.Limiter.PerTenant, r.Limiter.Total)
	}
	defer r.Limiter.Release(pp.Namespace)
	if pp.Spec.AllEnvironments {
		return r.release(ctx, pp)
	}
	res, err := r.Engine.Run(ctx, pp.Namespace, pp.Spec.Application, pp.Spec.Snapshot, pp.Spec.TargetEnvironment)
	if err != nil {
		pp.Status.CompletedAt, pp.Status.Clean = nil, false
		return err
	}
	summaries, diffText, truncated, clean := Summarize(res.Components, MaxStatusDiff)
	pp.Status.Components = summaries
	pp.Status.Diff, pp.Status.DiffTruncated, pp.Status.Clean = diffText, truncated, clean
	pp.Status.Environments = nil
	now := r.Now.Now()
	pp.Status.CompletedAt = &now
	r.Diffs.keep(client.ObjectKeyFromObject(pp), pp.Generation, FullDiff(res.Components))
	return nil
}

// specProblem is what the CRD's one-of rule refuses, or "".
func specProblem(s as.PromotionPreviewSpec) string {
	if (s.TargetEnvironment != "") == s.AllEnvironments {
		return "exactly one of targetEnvironment and allEnvironments: true"
	}
	return ""
}

// maxEnvironments is the most Environments a release preview covers (the
// status's bound).
const maxEnvironments = 64

// release previews the Snapshot into every Environment of the namespace's
// path, one after another (one place of the limiter for the whole release).
// An Environment that cannot be previewed (its cluster not connected yet, a
// repository) says why in its result, the others are still previewed, and
// the release is refused as a preview of that Environment alone would be
// (and runs again, as that one would): it completes only with a result in
// every Environment. A transient failure runs the whole release again.
func (r *Reconciler) release(ctx context.Context, pp *as.PromotionPreview) error {
	for kind, obj := range map[string]client.Object{"Snapshot": &as.Snapshot{}, "Application": &as.Application{}} {
		name := pp.Spec.Snapshot
		if kind == "Application" {
			name = pp.Spec.Application
		}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pp.Namespace, Name: name}, obj); client.IgnoreNotFound(err) != nil {
			return err
		} else if err != nil {
			return kernel.Refuse(as.PromotionPreviewReasonInvalid, "%s %q not found in namespace %q", kind, name, pp.Namespace)
		}
	}
	var envs as.EnvironmentList
	if err := r.Client.List(ctx, &envs, client.InNamespace(pp.Namespace)); err != nil {
		return err
	}
	names := pp.Spec.Previewed(envs.Items)
	switch {
	case len(names) == 0:
		return kernel.Refuse(as.PromotionPreviewReasonInvalid, "namespace %q has no Environments", pp.Namespace)
	case len(names) > maxEnvironments:
		return kernel.Refuse(as.PromotionPreviewReasonInvalid, "namespace %q has %d Environments, a release preview covers at most %d", pp.Namespace, len(names), maxEnvironments)
	}
	results := make([]EnvironmentResult, 0, len(names))
	var refused error
	for _, env := range names {
		res, err := r.Engine.Run(ctx, pp.Namespace, pp.Spec.Application, pp.Spec.Snapshot, env)
		if ref := kernel.AsRefusal(err); ref != nil {
			results = append(results, EnvironmentResult{Name: env, Error: ref.Message})
			if refused == nil {
				refused = kernel.Refuse(ref.Reason, "Environment %q: %s", env, ref.Message)
			}
			continue
		}
		if err != nil {
			pp.Status.CompletedAt, pp.Status.Clean = nil, false
			return err
		}
		results = append(results, EnvironmentResult{Name: env, Components: res.Components})
	}
	pp.Status.Environments, pp.Status.Clean = SummarizeRelease(results, MaxStatusDiff)
	pp.Status.Components, pp.Status.Diff, pp.Status.DiffTruncated = nil, "", false
	if refused != nil {
		pp.Status.CompletedAt, pp.Status.Clean = nil, false
		return refused
	}
	now := r.Now.Now()
	pp.Status.CompletedAt = &now
	r.Diffs.keep(client.ObjectKeyFromObject(pp), pp.Generation, FullReleaseDiff(results))
	return nil
}

// Diffs holds the full diff of each preview's latest run in memory (a
// status holds a capped one); a restarted sidecar has none until a preview
// runs again.
type Diffs struct {
	mu sync.Mutex
	m  map[types.NamespacedName]keptDiff
}

// At most maxKeptDiffs full diffs of at most maxKeptDiff bytes are kept.
const (
	maxKeptDiffs = 256
	maxKeptDiff  = 4 << 20
)

type keptDiff struct {
	generation int64
	text       string
}

// Get is the full diff of preview key at generation, if kept.
func (d *Diffs) Get(key types.NamespacedName, generation int64) (string, error) {
	if d == nil {
		return "", fmt.Errorf("no diff kept")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.m[key]
	if !ok || k.generation != generation {
		return "", fmt.Errorf("the full diff of PromotionPreview %s is not kept here (the sidecar restarted or the preview changed): run it again", key)
	}
	return k.text, nil
}

func (d *Diffs) keep(key types.NamespacedName, generation int64, text string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[types.NamespacedName]keptDiff{}
	}
	// Bounded memory: a diff too large is not kept (the status has the
	// capped one), and past maxKeptDiffs any other preview's goes.
	if len(text) > maxKeptDiff {
		delete(d.m, key)
		return
	}
	if _, ok := d.m[key]; !ok && len(d.m) >= maxKeptDiffs {
		for k := range d.m {
			delete(d.m, k)
			break
		}
	}
	d.m[key] = keptDiff{generation, text}
}

func (d *Diffs) forget(key types.NamespacedName) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, key)
}
