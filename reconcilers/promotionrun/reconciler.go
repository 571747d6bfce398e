// Package promotionrun reconciles PromotionRuns: it points the binding of the
// Application and each target Environment at the Snapshot and follows the
// generated Argo CD Applications until every component runs the Snapshot's
// image, Synced and Healthy; an automated promotion then goes on breadth first
// along the Environment digraph.
//
// A pass reads as its siblings' do: gather (world.go) reads everything it
// needs once, plan (plan.go) decides the run's next status and what to write
// for it, a pure function of that world; act (act.go) writes the bindings,
// the PromotionHistories and an automatic rollback; the run's status is
// written last, once, and only when everything it records was written.
package promotionrun

import (
	"context"
	"crypto/x509"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
	"github.com/gitops-service/gitops-service/reconcilers/render"
	"github.com/gitops-service/gitops-service/reconcilers/signatures"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshots;environments;applications,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionapprovals;promotionpreviews;deploymenttargetclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch,namespace=argocd
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

const (
	// DefaultTimeout is how long the promotion to one Environment may take (the
	// original service's limit for a run).
	DefaultTimeout = 10 * time.Minute
	// BindingSuffix names the binding a promotion creates: <app>-<env>-generated-binding
	// (binding.GeneratedName).
	BindingSuffix = binding.GeneratedSuffix
	// msgSuccess is the original service's message for a deployed step.
	msgSuccess = "All GitOpsDeployments are Synced/Healthy"
	// reason is the ErrorOccurred condition's only one (the seed's); the
	// Warning Event says which failure it is (Reason*).
	reason = as.PromotionRunReasonErrorOccurred
)

// Reasons of a failed run's Warning Event (docs/reference.md, "Reasons of failures"). A missing input is
// <Kind>NotFound (SnapshotNotFound, ApplicationNotFound, EnvironmentNotFound).
const (
	ReasonSnapshotOfAnotherApplication = "SnapshotOfAnotherApplication"
	ReasonBindingNameTaken             = "BindingNameTaken"
	ReasonBindingInvalid               = "BindingInvalid"
	ReasonTimedOut                     = "PromotionTimedOut"
	// ReasonSnapshotReplaced: the Snapshot of the run's name is not the one
	// (UID, content) the run started with.
	ReasonSnapshotReplaced = "SnapshotReplaced"
)

// Reconciler reconciles PromotionRuns.
type Reconciler struct {
	Client client.Client
	// APIReader reads uncached: who is active is decided on the API server's
	// state, not on a cache that may lag behind another run's start.
	APIReader     client.Reader
	ArgoNamespace string
	Recorder      record.EventRecorder
	// Timeout per Environment promoted to; DefaultTimeout when zero.
	Timeout time.Duration
	// Now is the clock; tests may set it.
	Now kernel.Clock
	// ServiceAccount is the sidecar's own: the admission policies must name
	// it as their parameter for approvals and requesters to count (identity.go).
	ServiceAccount install.ServiceAccount
	// Egress limits the addresses of target clusters dialled to read the
	// live workloads of a ManagedEnvironment (live.go), the registries the
	// signature gate reads and the analysis checks (nil: the fixed ranges
	// refused); AnalysisRoots are the CAs analysis trusts over https (nil:
	// the system's).
	Egress        *egress.Policy
	AnalysisRoots *x509.CertPool

	// Signatures verifies the images of a Snapshot for an Environment's
	// signature gate; nil: such a gate holds every promotion and says so.
	Signatures *signatures.Verifier
	// Renderer renders what a promotion applies, to compare it with the
	// preview an Environment requires (preview_gate.go); nil: not compared.
	Renderer *render.Renderer
	// policies keeps the PromotionPolicies' compiled rules.
	policies policyrules.Cache

	enforcementMu  sync.Mutex
	lastUnenforced time.Time

	// starting serializes the start of runs of one application (key ns/app),
	// so two runs never both become Active.
	starting sync.Map
}

func (r *Reconciler) now() metav1.Time { return r.Now.Now() }

func (r *Reconciler) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

// Reconcile starts a run when it is its application's turn and moves it on:
// gather, plan, act, one status patch.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	run := &as.PromotionRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if run.Status.State == as.PromotionRunStateCompleted && run.DeletionTimestamp.IsZero() && meta.FindStatusCondition(run.Status.Conditions, kernel.ConditionReady) == nil {
		// Completed before runs had a Ready condition (a sidecar upgrade):
		// one status write gives it; a completed run is otherwise done.
		patcher := kernel.NewStatusPatcher(r.Client, run)
		defer patcher.Patch(ctx, run, &err)
		run.Status.ObservedGeneration = run.Generation
		kernel.SetReady(&run.Status.Conditions, nil, readiness(run.Status), run.Generation, r.now())
		return ctrl.Result{}, nil
	}
	if !run.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if run.Status.State == as.PromotionRunStateCompleted {
		// Done, unless a step it verified still soaks: its digests are
		// watched until the soak ends (watchSoak).
		if soaks, err := r.soaks(ctx, run); !soaks || err != nil {
			return ctrl.Result{}, err
		}
	}
	starting := run.Status.State != as.PromotionRunStateActive && run.Status.State != as.PromotionRunStateCompleted
	if starting {
		// Who starts is decided and written under a per-application lock:
		// deferred first, it is released after the status patch below.
		defer r.lock(run)()
	}
	// The optimistic lock makes a status decided on an old copy of the run
	// fail, above all a start: two runs never both become Active.
	patcher := kernel.NewStatusPatcher(r.Client, run).WithOptimisticLock()
	defer patcher.Patch(ctx, run, &err)
	result := ctrl.Result{}
	w, err := r.gather(ctx, run, starting)
	if err == nil {
		d := plan(w)
		// The status says what was done: it changes only once every write
		// it records is made (a completed run is not looked at again).
		if err = r.act(ctx, w, &d); err == nil {
			result, err = r.apply(run, d)
		}
	}
	run.Status.ObservedGeneration = run.Generation
	r.setWaiting(run, err)
	kernel.SetReady(&run.Status.Conditions, err, readiness(run.Status), run.Generation, r.now())
	return kernel.Outcome(result, err)
}

// soaks says whether run completed successfully while a step it verified
// still soaks in its Environment.
func (r *Reconciler) soaks(ctx context.Context, run *as.PromotionRun) (bool, error) {
	if run.Status.CompletionResult != as.PromotionRunCompleteResultSuccess {
		return false, nil
	}
	var envs as.EnvironmentList
	if err := r.Client.List(ctx, &envs, client.InNamespace(run.Namespace)); err != nil {
		return false, err
	}
	return len(soaking(run, envs.Items, r.now().Time)) > 0, nil
}

// apply makes the planned status the run's, with the failure's condition and
// Warning when it failed, and returns the pass's outcome.
func (r *Reconciler) apply(run *as.PromotionRun, d decision) (ctrl.Result, error) {
	run.Status = d.Status
	if f := d.Failed; f != nil {
		// One Warning, named after the failure: a completed run is done.
		kernel.SetConditionWarning(r.Recorder, run, &run.Status.Conditions, metav1.Condition{Type: as.PromotionRunConditionErrorOccurred, Status: metav1.ConditionTrue,
			Reason: reason, Message: f.Message, ObservedGeneration: run.Generation}, f.Reason, r.now())
	}
	if d.Wait != nil {
		return d.Result, d.Wait
	}
	return d.Result, nil
}

// lock takes the lock of the run's application (key ns/app) and returns its release.
func (r *Reconciler) lock(run *as.PromotionRun) func() {
	mu, _ := r.starting.LoadOrStore(run.Namespace+"/"+run.Spec.Application, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}
