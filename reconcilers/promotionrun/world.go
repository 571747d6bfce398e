package promotionrun

import (
	"context"
	"slices"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/analysis"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// world is everything one pass decides on, read once (gather) before
// anything is decided (plan) or written (act). A missing object is absent
// (nil, or not in its list); the plan refuses or skips it as the kind says.
type world struct {
	// Run as read; the plan works on a copy.
	Run *as.PromotionRun
	Now metav1.Time
	// Timeout per Environment promoted to.
	Timeout time.Duration
	// Starting: the run is not Active yet; Runs are then read from the API
	// server (who starts is never decided on a cache behind another start).
	Starting bool
	// Runs are the namespace's PromotionRuns.
	Runs []as.PromotionRun
	// Snapshots by name: the run's, the one it deploys (a rollback's), and
	// a rollback's candidates to go back to.
	Snapshots map[string]*as.Snapshot
	// Application: the run's App Studio Application exists.
	Application bool
	// Environments of the namespace, with those the run names confirmed on
	// the API server when the cache does not show them.
	Environments []as.Environment
	// Claims by name: the namespace's, as the cache has them, and those of
	// the Environments the run may enter confirmed on the API server.
	Claims map[string]*as.DeploymentTargetClaim
	// Bindings of the namespace.
	Bindings []as.SnapshotEnvironmentBinding
	// Generated are the Argo CD Applications made for each binding of the
	// run's application (by binding UID): ours, in the tenant's project.
	Generated map[types.UID][]argov1alpha1.Application
	// Histories of the run's application.
	Histories []as.PromotionHistory
	// Approvals and Previews of the namespace, read when an Environment
	// the run may enter asks for them (approvals also for a history entry).
	Approvals []as.PromotionApproval
	Previews  []as.PromotionPreview
	// Rendered is what the run would apply in each Environment ahead that
	// requires a preview and has one to compare with (preview_gate.go).
	Rendered map[string]*Rendered
	// Identity says whether the API server enforces who approves and who
	// requests; read with Approvals.
	Identity install.Enforcement
	// Policies are every PromotionPolicy, compiled, and NamespaceLabels
	// the run's Namespace's labels (what binds them); read when there are
	// policies.
	Policies        []policyrules.Compiled
	NamespaceLabels map[string]string
	// Live are the live workloads of the Applications whose digests the
	// pass verifies (by Application name; live.go).
	Live map[string]*liveWorkloads
	// Signatures are the results of verifying the images of the Snapshot
	// a step deploys against an Environment's signature requirement, by
	// Environment name, for the Environments that have one and whose gates
	// this pass looks at or whose history entry it writes;
	// SignatureProblems say why an Environment's requirement could not be
	// used (signature_gate.go).
	Signatures        map[string][]as.ImageVerification
	SignatureProblems map[string]string
	// Refused: the API server refused the binding of an Environment (act
	// found out; the plan is made again with it).
	Refused map[string]*kernel.Refusal
	// Measurements are the analysis measurements made this pass, by
	// Environment and check name (gatherAnalysis).
	Measurements map[string]map[string]analysis.Measurement
}

// snapshot is the Snapshot of that name, nil when there is none (or no name).
func (w *world) snapshot(name string) *as.Snapshot {
	if name == "" {
		return nil
	}
	return w.Snapshots[name]
}

// environment is the Environment of that name, or nil.
func (w *world) environment(name string) *as.Environment {
	i := slices.IndexFunc(w.Environments, func(e as.Environment) bool { return e.Name == name })
	if i < 0 {
		return nil
	}
	return &w.Environments[i]
}

// gather reads what the pass over run needs, each kind once.
func (r *Reconciler) gather(ctx context.Context, run *as.PromotionRun, starting bool) (*world, error) {
	ns := run.Namespace
	w := &world{Run: run, Now: r.now(), Timeout: r.timeout(), Starting: starting, Snapshots: map[string]*as.Snapshot{}, Claims: map[string]*as.DeploymentTargetClaim{},
		Signatures: map[string][]as.ImageVerification{}, SignatureProblems: map[string]string{}}
	var runs as.PromotionRunList
	var reader client.Reader = r.Client
	if starting {
		reader = r.APIReader
	}
	if err := reader.List(ctx, &runs, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	w.Runs = runs.Items
	if starting && blocker(run, w.Runs) != "" {
		return w, nil // it waits in line: nothing else decides that
	}
	// The Snapshots: the run's (confirmed: a missing one is refused), the one it deploys.
	for _, name := range []string{run.Spec.Snapshot, snapshotOf(run)} {
		if err := r.confirmed(ctx, ns, name, w.Snapshots); err != nil {
			return nil, err
		}
	}
	var envs as.EnvironmentList
	if err := r.Client.List(ctx, &envs, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	w.Environments = envs.Items
	// The Environments the run names, and their parents, confirmed.
	named := append([]string{first(run)}, promoted(run)...)
	for _, name := range append(named, ahead(run, w.Environments, starting)...) {
		if err := r.confirmEnvironment(ctx, w, name); err != nil {
			return nil, err
		}
		if e := w.environment(name); e != nil && e.Spec.ParentEnvironment != "" {
			if err := r.confirmEnvironment(ctx, w, e.Spec.ParentEnvironment); err != nil {
				return nil, err
			}
		}
	}
	if err := r.gatherGates(ctx, w); err != nil {
		return nil, err
	}
	if starting {
		return w, nil
	}
	if err := r.gatherActive(ctx, w); err != nil {
		return nil, err
	}
	r.gatherAnalysis(ctx, w)
	return w, nil
}

// gatherGates reads what the gates of the Environments the run may enter
// are decided on: claims, previews, approvals and whether identity is
// enforced, each only when one of them asks for it.
func (r *Reconciler) gatherGates(ctx context.Context, w *world) error {
	run := w.Run
	// Who requested and approved what a step deployed goes into its history entry.
	needIdentity := !w.Starting && (run.Spec.RequestedBy != nil || slices.ContainsFunc(promoted(run), func(name string) bool { return asksApprovals(w.environment(name)) }))
	needPreviews := false
	// Every claim the cache has; those of the Environments ahead confirmed
	// when it has not (a gate is never skipped because the cache lags).
	if slices.ContainsFunc(w.Environments, func(e as.Environment) bool { return e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName != "" }) {
		var claims as.DeploymentTargetClaimList
		if err := r.Client.List(ctx, &claims, client.InNamespace(run.Namespace)); err != nil {
			return err
		}
		for i := range claims.Items {
			w.Claims[claims.Items[i].Name] = &claims.Items[i]
		}
	}
	bound, err := r.gatherPolicies(ctx, w)
	if err != nil {
		return err
	}
	for _, name := range ahead(run, w.Environments, w.Starting) {
		env := w.environment(name)
		if env == nil {
			continue
		}
		// The policies see approvers and the preview.
		policies := bound(env)
		needIdentity = needIdentity || asksApprovals(env) || policies
		needPreviews = needPreviews || env.Spec.Preview != nil || policies
		// The Snapshot a step there would deploy (a rollback's is chosen
		// later, and the gate does not hold it).
		if !run.Spec.IsRollback() {
			if err := r.verifySignatures(ctx, w, env, w.snapshot(run.Spec.Snapshot)); err != nil {
				return err
			}
		}
		if claim := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName; claim != "" && w.Claims[claim] == nil {
			c := &as.DeploymentTargetClaim{}
			err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: run.Namespace, Name: claim}, c)
			switch {
			case err == nil:
				w.Claims[claim] = c
			case !apierrors.IsNotFound(err):
				return err
			}
		}
	}
	if needPreviews {
		var previews as.PromotionPreviewList
		if err := r.Client.List(ctx, &previews, client.InNamespace(run.Namespace)); err != nil {
			return err
		}
		w.Previews = previews.Items
		if err := r.gatherRendered(ctx, w); err != nil {
			return err
		}
	}
	if needIdentity {
		e, err := r.identityEnforcement(ctx)
		if err != nil {
			return err
		}
		w.Identity = e
		var approvals as.PromotionApprovalList
		if err := r.Client.List(ctx, &approvals, client.InNamespace(run.Namespace)); err != nil {
			return err
		}
		w.Approvals = approvals.Items
	}
	return nil
}

// gatherActive reads what an Active run deploys through and records in:
// the application's histories (and a rollback's candidates), its bindings
// and the Applications generated for them.
func (r *Reconciler) gatherActive(ctx context.Context, w *world) error {
	run, ns := w.Run, w.Run.Namespace
	var app as.Application
	if err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: ns, Name: run.Spec.Application}, &app); err == nil {
		w.Application = true
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	var histories as.PromotionHistoryList
	if err := r.Client.List(ctx, &histories, client.InNamespace(ns)); err != nil {
		return err
	}
	w.Histories = slices.DeleteFunc(histories.Items, func(h as.PromotionHistory) bool { return h.Spec.Application != run.Spec.Application })
	// What was verified of the Snapshot in the Environments whose step is
	// not recorded yet (it may end this pass) goes into their history entry
	// (the verifier's cache answers for what the gate verified).
	if !run.Spec.IsRollback() {
		byEnv := byEnvironment(w.Histories)
		for _, s := range run.Status.EnvironmentStatus {
			if !recorded(byEnv[s.EnvironmentName], string(run.UID), as.PromotionRunCompleteResultSuccess) {
				if err := r.verifySignatures(ctx, w, w.environment(s.EnvironmentName), w.snapshot(snapshotOf(run))); err != nil {
					return err
				}
			}
		}
	}
	if run.Spec.IsRollback() && run.Status.Rollback == nil && len(run.Status.EnvironmentStatus) == 0 {
		// What a rollback may go back to, read from the cache as it is now.
		h := byEnvironment(w.Histories)[run.Spec.ManualPromotion.TargetEnvironment]
		for _, c := range rollbackCandidates(h, run.Spec.Snapshot, w.Histories) {
			snap := &as.Snapshot{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.Snapshot}, snap); err == nil {
				w.Snapshots[c.Snapshot] = snap
			} else if !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	var bindings as.SnapshotEnvironmentBindingList
	if err := r.Client.List(ctx, &bindings, client.InNamespace(ns)); err != nil {
		return err
	}
	w.Bindings = bindings.Items
	tenant := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, tenant); err != nil {
		return err
	}
	w.Generated = map[types.UID][]argov1alpha1.Application{}
	for _, seb := range w.Bindings {
		if seb.Spec.Application != run.Spec.Application {
			continue
		}
		var apps argov1alpha1.ApplicationList
		if err := r.Client.List(ctx, &apps, client.InNamespace(r.ArgoNamespace), client.MatchingLabels{ownership.LabelOwnerUID: string(seb.UID)}); err != nil {
			return err
		}
		// Look-alikes (the binding's labels in another project) do not count.
		w.Generated[seb.UID] = tenantproject.ByOwner(apps.Items, ownership.KindBinding, string(seb.UID), seb.Namespace, string(tenant.UID))
	}
	r.gatherLive(ctx, w)
	return nil
}

// asksApprovals says whether env has an approval gate.
func asksApprovals(env *as.Environment) bool {
	return env != nil && env.Spec.Gates != nil && env.Spec.Gates.Approvals != nil
}

// confirmed reads the Snapshot name into snaps, confirming on the API
// server that a missing one is missing.
func (r *Reconciler) confirmed(ctx context.Context, ns, name string, snaps map[string]*as.Snapshot) error {
	if name == "" || snaps[name] != nil {
		return nil
	}
	snap := &as.Snapshot{}
	err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: ns, Name: name}, snap)
	switch {
	case err == nil:
		snaps[name] = snap
	case !apierrors.IsNotFound(err):
		return err
	}
	return nil
}

// confirmEnvironment adds the Environment name to w when the cache does not
// show it and the API server has it (a gate is never skipped, nor a step
// refused, because the cache lags).
func (r *Reconciler) confirmEnvironment(ctx context.Context, w *world, name string) error {
	if name == "" || w.environment(name) != nil {
		return nil
	}
	env := &as.Environment{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: w.Run.Namespace, Name: name}, env)
	switch {
	case err == nil:
		w.Environments = append(w.Environments, *env)
	case !apierrors.IsNotFound(err):
		return err
	}
	return nil
}

// ahead are the Environments whose gates this pass may look at: the first
// one of a run that starts; for an Active automated run, those it may still
// enter (automated, below what it promoted to).
func ahead(run *as.PromotionRun, envs []as.Environment, starting bool) []string {
	if starting {
		return []string{first(run)}
	}
	if run.Spec.AutomatedPromotion == nil {
		return nil
	}
	var out []string
	visited := promoted(run)
	for level := visited; len(level) > 0; {
		next, _ := nextLevel(envs, level, visited)
		out = append(out, next...)
		visited = append(visited, next...)
		level = next
	}
	return out
}

// gatherPolicies reads the PromotionPolicies and, when there are any, the
// labels of the run's Namespace and the Application's PromotionHistories
// (the source Environment's changes), and returns whether any binds an
// Environment.
func (r *Reconciler) gatherPolicies(ctx context.Context, w *world) (func(*as.Environment) bool, error) {
	none := func(*as.Environment) bool { return false }
	var policies as.PromotionPolicyList
	if err := r.Client.List(ctx, &policies); err != nil {
		return none, err
	}
	if len(policies.Items) == 0 {
		return none, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: w.Run.Namespace}, ns); err != nil {
		return none, err
	}
	w.NamespaceLabels = ns.Labels
	w.Policies = r.policies.CompileAll(policies.Items)
	if w.Histories == nil {
		var histories as.PromotionHistoryList
		if err := r.Client.List(ctx, &histories, client.InNamespace(w.Run.Namespace)); err != nil {
			return none, err
		}
		w.Histories = slices.DeleteFunc(histories.Items, func(h as.PromotionHistory) bool { return h.Spec.Application != w.Run.Spec.Application })
	}
	return func(env *as.Environment) bool { return len(boundPolicies(w.Policies, w.NamespaceLabels, env)) > 0 }, nil
}
