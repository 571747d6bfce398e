package promotionrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/analysis"
)

// errorRate is a Prometheus check: at most 5% errors, count successes of
// limit tolerated failures, a minute apart, the first after delay.
func errorRate(count, limit int32, delay time.Duration) as.AnalysisCheck {
	return as.AnalysisCheck{Name: "error-rate", Interval: dur(time.Minute), InitialDelay: dur(delay), Count: count, FailureLimit: limit,
		Prometheus: &as.PrometheusCheck{Address: "https://prometheus.example.test", Query: `sum(rate(errors[1m]))`,
			SuccessCondition: as.AnalysisCondition{Operator: as.AnalysisLessThanOrEqual, Value: "0.05"}}}
}

func withAnalysis(e as.Environment, checks ...as.AnalysisCheck) as.Environment {
	e.Spec.Analysis = &as.AnalysisPolicy{Checks: checks}
	return e
}

// measured stands in for the gather phase: the next pass sees this
// measurement of env's check, made now.
func (s *seq) measured(env, check string, ok bool, value string) {
	msg := value + " <= 0.05"
	if !ok {
		msg = value + " is not <= 0.05"
	}
	s.w.Measurements = map[string]map[string]analysis.Measurement{env: {check: {Time: s.w.Now, OK: ok, Value: value, Message: msg}}}
	s.step("%s measures %s in %s", check, value, env)
}

// nextMeasured plans a pass on the measurements made for it, which the
// pass after does not see again.
func (s *seq) nextMeasured() decision {
	n := s.next()
	s.w.Measurements = nil
	return n
}

// TestSequenceAnalysisFailsAndRollsBack: a promotion into prod is deployed,
// then its error rate is measured once a minute: one bad measurement is
// within the failure limit, the second fails the step; prod asks for an
// automatic rollback. The run waits for each measurement, never for the
// promotion's timeout, and never polls in between.
func TestSequenceAnalysisFailsAndRollsBack(t *testing.T) {
	prod := withAnalysis(env("prod", "", as.DeploymentStrategyManual), errorRate(3, 1, 30*time.Second))
	prod.Spec.Rollback = &as.RollbackPolicy{Automatic: true}
	s := newSeq(t, manualRun("p2", "s2", "prod", false), prod)
	s.w.Runs = []as.PromotionRun{*s.w.Run}
	s.next()
	s.next()
	s.synced("prod", "s2", true)
	n := s.nextMeasured()
	assert.Equal(t, 30*time.Second, n.Result.RequeueAfter, "until the first measurement, after the initial delay")
	s.after(30 * time.Second)
	s.measured("prod", "error-rate", true, "0.01")
	s.nextMeasured()
	s.after(time.Minute)
	s.measured("prod", "error-rate", false, "0.2")
	n = s.nextMeasured()
	assert.Equal(t, as.PromotionRunStateActive, n.Status.State, "one failure is within the limit")
	s.after(time.Minute)
	s.measured("prod", "error-rate", false, "0.3")
	n = s.nextMeasured()
	require.NotNil(t, n.Failed)
	require.Equal(t, ReasonAnalysisFailed, n.Failed.Reason)
	require.Len(t, n.Entries, 1)
	assert.True(t, n.Entries[0].Rollback, "prod asks for an automatic rollback")
	require.Len(t, n.Entries[0].Entry.Analysis, 1, "the history keeps the analysis")
	got := n.Entries[0].Entry.Analysis[0]
	assert.Equal(t, as.AnalysisFailed, got.Phase)
	assert.Equal(t, "0.3", got.Value)
	assert.Equal(t, int32(1), got.Successes)
	assert.Equal(t, int32(2), got.Failures)
	s.golden("analysis-fails-and-rolls-back")
}

// TestSequenceAnalysisRunsDuringTheSoak: dev is verified when deployed (its
// soak time counts from then) and its analysis runs meanwhile; staging is
// entered once both the analysis passed and the soak time is over. A
// deployment slower than the promotion's timeout fails as before, but an
// analysis longer than it does not.
func TestSequenceAnalysisRunsDuringTheSoak(t *testing.T) {
	auto := as.DeploymentStrategyAppStudioAutomated
	dev := withGates(withAnalysis(env("dev", "", auto), errorRate(2, 0, 0)), &as.PromotionGates{SoakTime: dur(12 * time.Minute)})
	s := newSeq(t, automated("promote-s1", "s1", "dev"), dev, env("staging", "dev", auto))
	s.w.Runs = []as.PromotionRun{*s.w.Run}
	s.next()
	s.next()
	s.synced("dev", "s1", true)
	n := s.nextMeasured()
	assert.Equal(t, time.Second, n.Result.RequeueAfter, "the first measurement is due at once")
	s.measured("dev", "error-rate", true, "0.01")
	s.nextMeasured()
	s.after(11 * time.Minute)
	s.step("the promotion's timeout (10m) passed: the analysis is not bound by it")
	s.measured("dev", "error-rate", true, "0.02")
	n = s.nextMeasured()
	require.NotNil(t, n.Wait, "dev's analysis passed, its soak time is not over")
	assert.Equal(t, as.WaitingReasonSoakTime, n.Wait.Reason)
	s.after(time.Minute)
	n = s.nextMeasured()
	assert.Len(t, n.Status.EnvironmentStatus, 2, "staging entered")
	s.synced("staging", "s1", true)
	n = s.nextMeasured()
	require.Equal(t, as.PromotionRunCompleteResultSuccess, n.Status.CompletionResult)
	assert.Empty(t, n.Status.EnvironmentStatus[1].Analysis, "staging has no analysis")
	s.golden("analysis-runs-during-the-soak")
}

// A rollback is not analysed: it goes back to a Snapshot verified there.
func TestRollbacksAreNotAnalysed(t *testing.T) {
	prod := withAnalysis(env("prod", "", as.DeploymentStrategyManual), errorRate(1, 0, 0))
	assert.Nil(t, analysisOf(manualRun("rb", "s2", "prod", true), &prod))
	assert.NotNil(t, analysisOf(manualRun("p", "s2", "prod", false), &prod))
}

// A check added to the Environment while a step is analysed starts then; a
// check removed is no longer waited for.
func TestCheckResultsFollowTheEnvironment(t *testing.T) {
	deployed := metav1.NewTime(t0)
	a := &as.AnalysisPolicy{Checks: []as.AnalysisCheck{errorRate(2, 0, 0), {Name: "ready", Web: &as.WebCheck{URL: "https://x.example.test"}}}}
	s := &as.PromotionRunEnvironmentStatus{VerifiedTime: &deployed, Analysis: []as.AnalysisCheckStatus{
		{Name: "error-rate", Phase: as.AnalysisRunning, Successes: 1}, {Name: "gone", Phase: as.AnalysisFailed}}}
	got := checkResults(a, s, nil)
	require.Len(t, got, 2)
	assert.Equal(t, int32(1), got[0].Successes, "kept")
	assert.Equal(t, "ready", got[1].Name)
	assert.Equal(t, as.AnalysisRunning, got[1].Phase)
	assert.Equal(t, t0, got[1].NextCheckTime.Time)
}
