package promotionrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/analysis"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Analysis after a promotion: once a step's live state is verified (its
// VerifiedTime), the Environment's .spec.analysis checks run (reconcilers/
// analysis); the step succeeds when each passed and fails when one failed,
// which asks for the Environment's automatic rollback like any failed step.
// Soak time counts from the VerifiedTime, so the checks run during the soak.
// The measurements due are made in the gather phase (gatherAnalysis), at
// most one per check and pass; the plan folds them into the step's results
// (analyse) and requeues at the next check's time (analysisWait). A rollback
// is not analysed: it returns to a Snapshot verified there, and the metric
// that failed the promotion may well still fail while the rollback lands.

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// ReasonAnalysisFailed: an analysis check of the Environment failed.
const ReasonAnalysisFailed = "AnalysisFailed"

// minAnalysisRequeue is the least a pass waits for the next measurement.
const minAnalysisRequeue = time.Second

// analysisOf is the analysis of env for run, nil when none applies.
func analysisOf(run *as.PromotionRun, env *as.Environment) *as.AnalysisPolicy {
	if env == nil || run.Spec.IsRollback() || env.Spec.Analysis == nil || len(env.Spec.Analysis.Checks) == 0 {
		return nil
	}
	return env.Spec.Analysis
}

// checkResults are the results of the checks of a for a step deployed at
// s.VerifiedTime: those recorded, by name, and a started one for a check
// not measured yet (a check added since starts now).
func checkResults(a *as.AnalysisPolicy, s *as.PromotionRunEnvironmentStatus, measured map[string]analysis.Measurement) []as.AnalysisCheckStatus {
	out := make([]as.AnalysisCheckStatus, 0, len(a.Checks))
	for _, c := range a.Checks {
		st := analysis.Start(c, *s.VerifiedTime)
		for _, was := range s.Analysis {
			if was.Name == c.Name {
				st = was
			}
		}
		if m, ok := measured[c.Name]; ok {
			st = analysis.Record(c, st, m)
		}
		out = append(out, st)
	}
	return out
}

// analyse folds the measurements gathered for env into the results of run's
// step there (deployed: its VerifiedTime is set) and says where its
// analysis stands, with the step's message: Successful when the Environment
// has none.
func analyse(w *world, run *as.PromotionRun, env string) (as.AnalysisPhase, string) {
	a, s := analysisOf(run, w.environment(env)), stepOf(run, env)
	if a == nil || s == nil || s.VerifiedTime == nil {
		return as.AnalysisSuccessful, ""
	}
	s.Analysis = checkResults(a, s, w.Measurements[env])
	phase, failed, next := analysis.Verdict(s.Analysis)
	switch phase {
	case as.AnalysisFailed:
		return phase, fmt.Sprintf("analysis check %s failed in %s: %s (%d failed of a limit of %d)", failed.Name, env, failed.Message, failed.Failures, limitOf(a, failed.Name))
	case as.AnalysisSuccessful:
		return phase, fmt.Sprintf("%s; analysis passed: %s", msgSuccess, summary(s.Analysis))
	}
	at := ""
	if next != nil {
		at = "; next check at " + next.UTC().Format(time.RFC3339)
	}
	return phase, fmt.Sprintf("deployed; analysing: %s%s", summary(s.Analysis), at)
}

// analysed applies the analysis of env to run's deployed step there: a
// failed one fails the step and the run, one going on keeps the step in
// progress, a passed one (or none) lets it succeed. It returns the phase.
func analysed(w *world, run *as.PromotionRun, d *decision, snap *as.Snapshot, env string) as.AnalysisPhase {
	phase, msg := analyse(w, run, env)
	switch phase {
	case as.AnalysisFailed:
		setStep(run, env, as.PromotionRunEnvironmentStatusFailure, msg)
		complete(run, d, as.PromotionRunCompleteResultFailure, analysisRefusal(msg))
	case as.AnalysisRunning:
		setStep(run, env, as.PromotionRunEnvironmentStatusInProgress, msg)
	case as.AnalysisSuccessful:
		if msg != "" {
			setStep(run, env, as.PromotionRunEnvironmentStatusSuccess, msg)
		}
		if len(w.Measurements[env]) > 0 {
			d.note("AnalysisPassed", "Snapshot %s passed the analysis in Environment %s: %s", snap.Name, env, summary(stepOf(run, env).Analysis))
		}
	}
	return phase
}

func limitOf(a *as.AnalysisPolicy, name string) int32 {
	for _, c := range a.Checks {
		if c.Name == name {
			return c.FailureLimit
		}
	}
	return 0
}

// summary says how far each check is, e.g. "error-rate 2 of 3 (0.01)".
func summary(results []as.AnalysisCheckStatus) string {
	parts := make([]string, 0, len(results))
	for _, r := range results {
		p := fmt.Sprintf("%s %s", r.Name, strings.ToLower(string(r.Phase)))
		if r.Successes+r.Failures > 0 {
			p += fmt.Sprintf(" (%d ok, %d failed", r.Successes, r.Failures)
			if r.Value != "" {
				p += ", last " + r.Value
			}
			p += ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// analysing says whether run's step into env is deployed and its analysis
// goes on (it waits for the next measurement, not for a deadline).
func analysing(run *as.PromotionRun, env string) bool {
	s := stepOf(run, env)
	if s == nil || s.Status != as.PromotionRunEnvironmentStatusInProgress || s.VerifiedTime == nil || len(s.Analysis) == 0 {
		return false
	}
	phase, _, _ := analysis.Verdict(s.Analysis)
	return phase == as.AnalysisRunning
}

// nextCheck is the earliest next measurement of the steps in progress, nil if none.
func nextCheck(run *as.PromotionRun) *time.Time {
	var next *time.Time
	for _, env := range current(run) {
		if s := stepOf(run, env); analysing(run, env) {
			if _, _, n := analysis.Verdict(s.Analysis); n != nil && (next == nil || n.Before(*next)) {
				next = n
			}
		}
	}
	return next
}

// analysisWait is how a run whose step is not done waits: when every step in
// progress is analysing, until the next measurement (an analysis is bounded
// by its checks' counts and failure limits, not by the promotion's timeout);
// else until the deadline (waitOrTimeout), or the next measurement if sooner.
func analysisWait(w *world, run *as.PromotionRun, d *decision) {
	next := nextCheck(run)
	onlyAnalysing := next != nil
	for _, env := range current(run) {
		onlyAnalysing = onlyAnalysing && analysing(run, env)
	}
	if !onlyAnalysing {
		waitOrTimeout(w, run, d)
		if next == nil || run.Status.State == as.PromotionRunStateCompleted || (d.Result.RequeueAfter > 0 && d.Result.RequeueAfter <= next.Sub(w.Now.Time)) {
			return
		}
	}
	d.Result = ctrl.Result{RequeueAfter: max(next.Sub(w.Now.Time), minAnalysisRequeue)}
}

// gatherAnalysis makes the measurements due now of the run's deployed steps
// whose Environment has an analysis: at most one per check and pass, each
// bounded by analysis.Timeout.
func (r *Reconciler) gatherAnalysis(ctx context.Context, w *world) {
	run := w.Run
	for _, s := range run.Status.EnvironmentStatus {
		a := analysisOf(run, w.environment(s.EnvironmentName))
		if a == nil || s.Status != as.PromotionRunEnvironmentStatusInProgress || s.VerifiedTime == nil {
			continue
		}
		for _, st := range checkResults(a, &s, nil) {
			if !analysis.Due(st, w.Now.Time) {
				continue
			}
			for _, c := range a.Checks {
				if c.Name != st.Name {
					continue
				}
				m := analysis.Measure(ctx, r.APIReader, analysis.Access{Namespace: run.Namespace, Egress: r.Egress, Roots: r.AnalysisRoots}, c, w.Now)
				if w.Measurements == nil {
					w.Measurements = map[string]map[string]analysis.Measurement{}
				}
				if w.Measurements[s.EnvironmentName] == nil {
					w.Measurements[s.EnvironmentName] = map[string]analysis.Measurement{}
				}
				w.Measurements[s.EnvironmentName][c.Name] = m
			}
		}
	}
}

// analysisRefusal is the failure of a step whose analysis failed.
func analysisRefusal(msg string) *kernel.Refusal {
	return kernel.Refuse(ReasonAnalysisFailed, "%s", msg)
}
