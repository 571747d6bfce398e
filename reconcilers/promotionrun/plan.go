package promotionrun

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// The plan of a pass: a pure function of the world gathered for it.

// decision is what a pass does: the run's next status and what act writes for it.
type decision struct {
	Status as.PromotionRunStatus
	// Wait: the run waits (its turn, a gate, a hold); nil when it moves or ends.
	Wait   *kernel.Waiting
	Result ctrl.Result
	// Failed: the run ended in failure, for this reason (the ErrorOccurred
	// condition and a Warning Event named after it).
	Failed *kernel.Refusal
	// Rollback is the record that starts a rollback, written in the
	// Environment's history before anything is deployed.
	Rollback *rollbackRecord
	// Binds point the bindings of the Environments entered at the Snapshot.
	Binds []bindWrite
	// Entries are the history entries of the steps that ended (and the
	// automatic rollbacks they ask for).
	Entries []historyWrite
	// Events are Normal Events (notes), in order.
	Events []note
}

type note struct{ Reason, Message string }

// rollbackRecord: run rolls Bad (BadID: that object with that content,
// unknown when gone) back out of Env.
type rollbackRecord struct {
	Env, Bad string
	BadID    as.SnapshotIdentity
}

// bindWrite creates Create, or patches From into To.
type bindWrite struct {
	Env      string
	Create   *as.SnapshotEnvironmentBinding
	From, To *as.SnapshotEnvironmentBinding
}

// plan decides the pass over w.Run: a run that is not Active starts when it
// is its turn and the gates of its first Environment let it in; an Active
// one deploys its current step and, once that is verified, enters the next.
func plan(w *world) decision {
	var d decision
	run := w.Run.DeepCopy() // the plan's own
	switch {
	case w.Starting:
		start(w, run, &d)
	case run.Status.State == as.PromotionRunStateCompleted:
		watchSoak(w, run, &d)
		d.Entries = records(w, run)
	default:
		promote(w, run, &d)
		d.Entries = records(w, run)
	}
	d.Status = run.Status
	return d
}

// note adds a Normal Event.
func (d *decision) note(reason, format string, args ...any) {
	d.Events = append(d.Events, note{reason, fmt.Sprintf(format, args...)})
}

// start makes the run Active when no run of its application holds it up
// (blocker) and the gates of its first Environment let it in; else it waits.
// The next pass promotes.
func start(w *world, run *as.PromotionRun, d *decision) {
	if b := blocker(run, w.Runs); b != "" {
		run.Status.State = as.PromotionRunStateWaiting
		// Its completion or deletion wakes this run (setup.go).
		d.Wait = kernel.Wait(as.WaitingReasonRunActive, kernel.WaitingRetry, "PromotionRun %s of Application %s to complete", b, run.Spec.Application)
		return
	}
	// Decided on the Snapshot as it is now, whose identity the run keeps (a
	// missing one: the promotion refuses it).
	snap := w.snapshot(run.Spec.Snapshot)
	if wait := gates(w, run, []string{first(run)}, snap); wait != nil {
		run.Status.State = as.PromotionRunStateWaiting
		d.Wait = wait
		return
	}
	run.Status.State = as.PromotionRunStateActive
	run.Status.PromotionStartTime = w.Now
	if snap != nil && !run.Spec.IsRollback() {
		// What the gates let in; a rollback records the Snapshot it returns to.
		run.Status.SnapshotIdentity = snap.Identity()
	}
	d.Result = ctrl.Result{Requeue: true}
}

// promote moves an Active run on: it checks its inputs, binds the current
// step's Environments to the Snapshot and records how far they are; a
// verified step lets the next one in once its gates do.
func promote(w *world, run *as.PromotionRun, d *decision) {
	if len(run.Status.EnvironmentStatus) == 0 {
		if refusal := rejectedRefusal(run, w.Histories); refusal != nil {
			fail(run, d, refusal)
			return
		}
		if run.Spec.IsRollback() && run.Status.Rollback == nil {
			if refusal := startRollback(w, run, d); refusal != nil {
				fail(run, d, refusal)
				return
			}
		}
	}
	snap := w.snapshot(snapshotOf(run))
	if snap == nil {
		fail(run, d, notFound("Snapshot", snapshotOf(run)))
		return
	}
	if refusal := sameSnapshot(run, snap); refusal != nil {
		fail(run, d, refusal)
		return
	}
	if snap.Spec.Application != run.Spec.Application {
		fail(run, d, kernel.Refuse(ReasonSnapshotOfAnotherApplication, "Snapshot %q is of Application %q, not %q", snap.Name, snap.Spec.Application, run.Spec.Application))
		return
	}
	if !w.Application {
		fail(run, d, notFound("Application", run.Spec.Application))
		return
	}
	level, entering := current(run), true
	switch {
	case len(level) == 0 && len(run.Status.EnvironmentStatus) == 0:
		level = []string{first(run)}
		addSteps(run, level, w.Now)
	case len(level) == 0:
		// Every step is verified and the next ones wait at their gates:
		// those are looked at again, the verified ones are not.
		level, entering = promoted(run), false
		// The digests verified must stay through the soak (digest.go).
		if soakDrift(w, run, d, snap) {
			return
		}
	}
	for {
		if entering && !enter(w, run, d, snap, level) {
			return
		}
		var next, manual []string
		if run.Spec.AutomatedPromotion != nil {
			next, manual = nextLevel(w.Environments, level, promoted(run))
			if wait := holdOf(w, run, level, next); wait != nil {
				d.Wait = wait
				return
			}
		}
		if len(manual) > 0 && entering {
			d.note("ManualEnvironment", "Not promoting to %s: deploymentStrategy is Manual", strings.Join(manual, ", "))
		}
		if len(next) == 0 {
			complete(run, d, as.PromotionRunCompleteResultSuccess, nil)
			// A step that soaks is watched on (watchSoak).
			d.Result = ctrl.Result{RequeueAfter: soakLook(run, w.Environments, w.Now.Time)}
			return
		}
		// The next Environments are entered together, once the gates of each let the run in.
		if wait := gates(w, run, next, snap); wait != nil {
			recheckSoak(w, run, wait)
			d.Wait = wait
			return
		}
		addSteps(run, next, w.Now)
		level, entering = next, true
	}
}

// enter deploys the Snapshot to the level's Environments and says whether
// all of them run it; when not, the run waits (or timed out, or failed).
func enter(w *world, run *as.PromotionRun, d *decision, snap *as.Snapshot, level []string) bool {
	for _, name := range level {
		if w.environment(name) == nil {
			fail(run, d, notFound("Environment", name))
			return false
		}
	}
	if deploy(w, run, d, snap, level) {
		return true
	}
	if run.Status.State != as.PromotionRunStateCompleted {
		analysisWait(w, run, d)
	}
	return false
}

// deploy binds each Environment of the level to the Snapshot and records
// whether it is deployed; a binding that cannot be used fails the run.
func deploy(w *world, run *as.PromotionRun, d *decision, snap *as.Snapshot, level []string) bool {
	run.Status.ActiveBindings = nil
	all := true
	for _, env := range level {
		seb, respecced, refusal := bind(w, run, d, env)
		if refusal != nil {
			setStep(run, env, as.PromotionRunEnvironmentStatusFailure, refusal.Message)
			complete(run, d, as.PromotionRunCompleteResultFailure, refusal)
			return false
		}
		run.Status.ActiveBindings = append(run.Status.ActiveBindings, seb.Name)
		if c := meta.FindStatusCondition(seb.Status.BindingConditions, as.BindingConditionErrorOccurred); c != nil && !respecced &&
			c.Status == metav1.ConditionTrue && c.ObservedGeneration == seb.Generation && seb.Spec.Snapshot == snap.Name {
			// The binding cannot deploy yet: a Component without GitOps status, an
			// Environment not connected, a mistake in the binding. Each may be
			// fixed while the run waits; its deadline ends the wait.
			setStep(run, env, as.PromotionRunEnvironmentStatusInProgress, fmt.Sprintf("SnapshotEnvironmentBinding %s: %s", seb.Name, c.Message))
			all = false
			continue
		}
		ok, progress := verdict(snap, w.Generated[seb.UID])
		if ok {
			// Synced and Healthy: then to the digest, observed since the step started (digest.go).
			var drift *kernel.Refusal
			if ok, progress, drift = verifyLive(w, run, env, snap, w.Generated[seb.UID]); drift != nil {
				setStep(run, env, as.PromotionRunEnvironmentStatusFailure, drift.Message)
				complete(run, d, as.PromotionRunCompleteResultFailure, drift)
				return false
			}
		}
		if ok {
			setStep(run, env, as.PromotionRunEnvironmentStatusSuccess, progress)
			verified(run, env, w.Now)
			// Deployed: the Environment's analysis decides (analysis.go).
			switch analysed(w, run, d, snap, env) {
			case as.AnalysisFailed:
				return false
			case as.AnalysisRunning:
				all = false
			}
		} else {
			setStep(run, env, as.PromotionRunEnvironmentStatusInProgress, progress)
			all = false
		}
	}
	return all
}

// bind is the binding of the run's application and env as it is once
// pointed at the Snapshot (binding.Of, or binding.GeneratedName when there
// is none, created), with the write that points it; respecced says its spec
// changes (its status then speaks of the spec before). It refuses a binding
// the API server refused.
func bind(w *world, run *as.PromotionRun, d *decision, env string) (seb *as.SnapshotEnvironmentBinding, respecced bool, refusal *kernel.Refusal) {
	if r := w.Refused[env]; r != nil {
		return nil, false, r
	}
	name := snapshotOf(run)
	b, recorded := boundSnapshot(run)
	seb = binding.Of(w.Bindings, run.Spec.Application, env)
	if seb == nil {
		seb = &as.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: binding.GeneratedName(run.Spec.Application, env),
				Labels: map[string]string{as.LabelApplication: run.Spec.Application, as.LabelEnvironment: env}},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: run.Spec.Application, Environment: env, Snapshot: name},
		}
		if recorded {
			seb.Annotations = map[string]string{as.AnnotationBoundSnapshot: b}
		}
		d.Binds = append(d.Binds, bindWrite{Env: env, Create: seb})
		return seb, true, nil
	}
	if seb.Spec.Snapshot == name && (!recorded || seb.Annotations[as.AnnotationBoundSnapshot] == b) {
		return seb, false, nil
	}
	// The name and the identity the gates let in, in one write: the
	// binding deploys no other Snapshot of that name (binding.Bound).
	to := seb.DeepCopy()
	to.Spec.Snapshot = name
	if recorded {
		if to.Annotations == nil {
			to.Annotations = map[string]string{}
		}
		to.Annotations[as.AnnotationBoundSnapshot] = b
	}
	d.Binds = append(d.Binds, bindWrite{Env: env, From: seb, To: to})
	return to, seb.Spec.Snapshot != name, nil
}

// waitOrTimeout fails the run when the step in progress is past its deadline:
// the run may take Timeout per Environment promoted to so far.
func waitOrTimeout(w *world, run *as.PromotionRun, d *decision) {
	timeout, now := w.Timeout, w.Now.Time
	deadline := run.Status.PromotionStartTime.Add(time.Duration(len(run.Status.EnvironmentStatus)) * timeout)
	// Time spent at a gate does not count: a step may take Timeout from when it entered its Environment.
	for _, s := range run.Status.EnvironmentStatus {
		if s.StartTime != nil && s.StartTime.Add(timeout).After(deadline) {
			deadline = s.StartTime.Add(timeout)
		}
	}
	if left := deadline.Sub(now); left > 0 {
		d.Result = ctrl.Result{RequeueAfter: min(left, kernel.UnwatchedRecheck)}
		return
	}
	var msg string
	for _, env := range current(run) {
		for _, s := range run.Status.EnvironmentStatus {
			if s.EnvironmentName == env {
				msg = fmt.Sprintf("timed out after %s promoting to %s: %s", timeout, env, s.DisplayStatus)
				setStep(run, env, as.PromotionRunEnvironmentStatusFailure, msg)
			}
		}
	}
	complete(run, d, as.PromotionRunCompleteResultFailure, kernel.Refuse(ReasonTimedOut, "%s", msg))
}

// fail ends the run when its inputs are refused (a PromotionRun is not retried).
func fail(run *as.PromotionRun, d *decision, refusal *kernel.Refusal) {
	for _, env := range current(run) {
		setStep(run, env, as.PromotionRunEnvironmentStatusFailure, refusal.Message)
	}
	complete(run, d, as.PromotionRunCompleteResultFailure, refusal)
}

// complete ends the run; failed says why it failed.
func complete(run *as.PromotionRun, d *decision, result as.PromotionRunCompleteResult, failed *kernel.Refusal) {
	run.Status.State = as.PromotionRunStateCompleted
	run.Status.CompletionResult = result
	d.Result = ctrl.Result{}
	if result == as.PromotionRunCompleteResultSuccess {
		d.note("PromotionSucceeded", "Snapshot %s promoted to %s", snapshotOf(run), strings.Join(promoted(run), ", "))
		return
	}
	d.Failed = failed
}

func addSteps(run *as.PromotionRun, envs []string, now metav1.Time) {
	for _, e := range envs {
		run.Status.EnvironmentStatus = append(run.Status.EnvironmentStatus, as.PromotionRunEnvironmentStatus{
			Step: len(run.Status.EnvironmentStatus) + 1, EnvironmentName: e,
			Status: as.PromotionRunEnvironmentStatusInProgress, DisplayStatus: "Promoting", StartTime: &now,
		})
	}
}

// notFound refuses a missing input of the run.
func notFound(kind, name string) *kernel.Refusal {
	return kernel.Refuse(kind+"NotFound", "%s %q not found", kind, name)
}

// first is the Environment the run begins with.
func first(run *as.PromotionRun) string {
	if run.Spec.ManualPromotion != nil {
		return run.Spec.ManualPromotion.TargetEnvironment
	}
	return run.Spec.AutomatedPromotion.InitialEnvironment
}

// snapshotOf is the Snapshot the run deploys: for a rollback, the one it
// rolls back to (known once it started).
func snapshotOf(run *as.PromotionRun) string {
	if run.Spec.IsRollback() {
		if run.Status.Rollback == nil {
			return ""
		}
		return run.Status.Rollback.Snapshot
	}
	return run.Spec.Snapshot
}

// current is the step in progress: its Environments.
func current(run *as.PromotionRun) []string {
	var out []string
	for _, s := range run.Status.EnvironmentStatus {
		if s.Status == as.PromotionRunEnvironmentStatusInProgress {
			out = append(out, s.EnvironmentName)
		}
	}
	return out
}

func promoted(run *as.PromotionRun) []string {
	var out []string
	for _, s := range run.Status.EnvironmentStatus {
		out = append(out, s.EnvironmentName)
	}
	return out
}

func setStep(run *as.PromotionRun, env string, status as.PromotionRunEnvironmentStatusField, msg string) {
	for i := range run.Status.EnvironmentStatus {
		if s := &run.Status.EnvironmentStatus[i]; s.EnvironmentName == env {
			s.Status, s.DisplayStatus = status, msg
		}
	}
}

// verified records when the Snapshot was verified in env (once: a step is
// verified again on each pass until its level is done).
func verified(run *as.PromotionRun, env string, now metav1.Time) {
	for i := range run.Status.EnvironmentStatus {
		if s := &run.Status.EnvironmentStatus[i]; s.EnvironmentName == env && s.VerifiedTime == nil {
			s.VerifiedTime = &now
		}
	}
}

// boundSnapshot is the annotation AnnotationBoundSnapshot for the Snapshot
// the run deploys and the identity it recorded, if it recorded one.
func boundSnapshot(run *as.PromotionRun) (string, bool) {
	if !run.Status.SnapshotIdentity.Known() || snapshotOf(run) == "" {
		return "", false
	}
	raw, err := json.Marshal(as.BoundSnapshot{Name: snapshotOf(run), SnapshotIdentity: run.Status.SnapshotIdentity})
	return string(raw), err == nil
}

// sameSnapshot refuses a run whose Snapshot is no longer the one (UID and
// content) it recorded: one re-created under the name was not gated. A run
// that recorded none (started before identities were) records snap's.
func sameSnapshot(run *as.PromotionRun, snap *as.Snapshot) *kernel.Refusal {
	id := snap.Identity()
	if !run.Status.SnapshotIdentity.Known() {
		run.Status.SnapshotIdentity = id
		return nil
	}
	if was := run.Status.SnapshotIdentity; !was.Matches(id) {
		return kernel.Refuse(ReasonSnapshotReplaced, "Snapshot %s was replaced since the run started (was UID %s, content %s; now UID %s, content %s): promote the new one with a new PromotionRun",
			snap.Name, was.UID, was.Digest, id.UID, id.Digest)
	}
	return nil
}

// blocker names the run that holds this one up, or "": an Active run of the
// same application, or an older one not yet completed. Runs of another
// namespace never count (tenants do not hold each other up), nor do deleted ones.
func blocker(run *as.PromotionRun, runs []as.PromotionRun) string {
	for i := range runs {
		o := &runs[i]
		if o.UID == run.UID || o.Namespace != run.Namespace || o.Spec.Application != run.Spec.Application ||
			o.Status.State == as.PromotionRunStateCompleted || !o.DeletionTimestamp.IsZero() {
			continue
		}
		if o.Status.State == as.PromotionRunStateActive || kernel.Older(o, run) {
			return o.Name
		}
	}
	return ""
}

// nextLevel is the next depth of an automated promotion: the children of
// level in the Environment graph whose strategy is AppStudioAutomated, sorted
// by name. Manual children are where the promotion stops; they are returned
// apart so the run can say so. Environments already promoted to (a cycle in
// the digraph) are never visited twice.
func nextLevel(envs []as.Environment, level, visited []string) (automated, manual []string) {
	g := as.NewEnvironmentGraph(envs)
	for _, parent := range level {
		for _, name := range g.Children(parent) {
			switch {
			case slices.Contains(visited, name):
			case g.Environment(name).Spec.DeploymentStrategy == as.DeploymentStrategyAppStudioAutomated:
				automated = append(automated, name)
			default:
				manual = append(manual, name)
			}
		}
	}
	slices.Sort(automated)
	slices.Sort(manual)
	return automated, manual
}

// verdict says whether every component of the Snapshot runs its image through
// the binding's Applications: Synced, Healthy, the Application generated for
// that image (so its status is not that of the previous Snapshot) and the image
// among the live images Argo CD reports. Otherwise it says what is missing.
func verdict(snap *as.Snapshot, apps []argov1alpha1.Application) (bool, string) {
	byComponent := map[string]*argov1alpha1.Application{}
	for i := range apps {
		byComponent[apps[i].Labels[as.LabelComponent]] = &apps[i]
	}
	done := 0
	var waiting []string
	for _, c := range snap.Spec.Components {
		app := byComponent[c.Name]
		switch {
		case app == nil:
			waiting = append(waiting, c.Name+": no GitOpsDeployment yet")
		case !generatedFor(app, c.ContainerImage):
			waiting = append(waiting, c.Name+": not yet generated for "+c.ContainerImage)
		case app.Status.Sync.Status != argov1alpha1.SyncStatusCodeSynced:
			waiting = append(waiting, fmt.Sprintf("%s: %s", c.Name, orUnknown(string(app.Status.Sync.Status))))
		case app.Status.Health.Status != health.HealthStatusHealthy:
			waiting = append(waiting, fmt.Sprintf("%s: %s", c.Name, orUnknown(string(app.Status.Health.Status))))
		case !slices.Contains(app.Status.Summary.Images, c.ContainerImage):
			waiting = append(waiting, c.Name+": "+c.ContainerImage+" not running yet")
		default:
			done++
		}
	}
	if len(waiting) == 0 {
		return true, msgSuccess
	}
	return false, fmt.Sprintf("%d of %d components deployed; waiting for %s", done, len(snap.Spec.Components), strings.Join(waiting, ", "))
}

// generatedFor says whether the Application's kustomize images set image.
func generatedFor(app *argov1alpha1.Application, image string) bool {
	src := app.Spec.Source
	if src == nil || src.Kustomize == nil {
		return false
	}
	for _, img := range src.Kustomize.Images {
		if strings.HasSuffix(string(img), "="+image) {
			return true
		}
	}
	return false
}

func orUnknown(s string) string {
	if s == "" {
		return string(health.HealthStatusUnknown)
	}
	return s
}
