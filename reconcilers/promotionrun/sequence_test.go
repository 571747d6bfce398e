package promotionrun

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Golden sequences: a promotion as a step-by-step log of the plan over a
// sequence of worlds (as cluster-api tests its rollouts). Each pass plans on
// the world, the world takes in what act would write (the run's status, the
// bindings, the histories), and the scenario changes it as the cluster would
// between passes (Argo CD syncs, a gate opens, the clock moves). The log is
// compared with testdata/<scenario>.golden; -update rewrites it after review.

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var t0 = utc("2026-03-04T10:00:00Z")

// seq is one scenario's world and log.
type seq struct {
	t    *testing.T
	w    *world
	log  strings.Builder
	pass int
}

func newSeq(t *testing.T, run *as.PromotionRun, envs ...as.Environment) *seq {
	run.Namespace, run.UID, run.CreationTimestamp = "t", types.UID("uid-"+run.Name), metav1.NewTime(t0.Add(-time.Minute))
	for i := range envs {
		envs[i].Namespace = "t"
	}
	s := &seq{t: t, w: &world{Run: run, Now: metav1.NewTime(t0), Timeout: 10 * time.Minute, Starting: true, Application: true,
		Environments: envs, Snapshots: map[string]*as.Snapshot{}, Claims: map[string]*as.DeploymentTargetClaim{},
		Identity: install.Enforcement{Since: enforcedSince}}}
	s.snapshot("s1", "v1")
	s.snapshot("s2", "v2")
	return s
}

// snapshot adds Snapshot name of application app, created before t0, whose
// one component fe runs quay.io/x/fe:<tag>.
func (s *seq) snapshot(name, tag string) {
	s.w.Snapshots[name] = &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(snapCreatedAt)},
		Spec: as.SnapshotSpec{Application: "app", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/x/fe:" + tag}}}}
}

// step logs what happens between passes.
func (s *seq) step(format string, args ...any) { fmt.Fprintf(&s.log, "-- "+format+"\n", args...) }

// after moves the clock on.
func (s *seq) after(d time.Duration) {
	s.w.Now = metav1.NewTime(s.w.Now.Add(d))
	s.step("%s later", d)
}

// env is a mutable Environment of the world.
func (s *seq) env(name string) *as.Environment {
	e := s.w.environment(name)
	require.NotNil(s.t, e, name)
	return e
}

// synced: Argo CD runs snapshot's image through env's binding, Synced and Healthy
// (progressing: not Healthy yet).
func (s *seq) synced(env, snapshot string, healthy bool) {
	seb := binding.Of(s.w.Bindings, "app", env)
	require.NotNil(s.t, seb, env)
	img := s.w.Snapshots[snapshot].Spec.Components[0].ContainerImage
	h := health.HealthStatusHealthy
	if !healthy {
		h = health.HealthStatusProgressing
	}
	if s.w.Generated == nil {
		s.w.Generated = map[types.UID][]argov1alpha1.Application{}
	}
	a := app("fe", "quay.io/x/fe="+img, argov1alpha1.SyncStatusCodeSynced, h, img)
	// Argo CD compared it now, with the spec generated for img, and its Pod runs img's digest.
	a.Name, a.Status.ReconciledAt, a.Status.Sync.ComparedTo.Source = env+"-fe", s.w.Now.DeepCopy(), *a.Spec.Source.DeepCopy()
	s.w.Generated[seb.UID] = []argov1alpha1.Application{a}
	if s.w.Live == nil {
		s.w.Live = map[string]*liveWorkloads{}
	}
	s.w.Live[a.Name] = &liveWorkloads{Pods: []livePod{{Name: env + "-fe-1", Containers: []liveContainer{{Name: "fe", Image: img, ImageID: "quay.io/x/fe@" + testDigest(img), Running: true}}}}}
	s.step("Argo CD runs %s in %s (%s)", img, env, h)
}

// next plans a pass, logs it, and applies to the world what act writes.
func (s *seq) next() decision {
	s.pass++
	n := plan(s.w)
	s.write(n)
	s.apply(n)
	return n
}

func (s *seq) write(n decision) {
	b := &s.log
	fmt.Fprintf(b, "pass %d at %s (%s)\n", s.pass, s.w.Now.UTC().Format("15:04"), map[bool]string{true: "starting", false: "active"}[s.w.Starting])
	st := n.Status
	fmt.Fprintf(b, "  state: %s", st.State)
	if st.CompletionResult != "" {
		fmt.Fprintf(b, " %s", st.CompletionResult)
	}
	if n.Result.Requeue {
		fmt.Fprint(b, ", requeue")
	}
	if n.Result.RequeueAfter > 0 {
		fmt.Fprintf(b, ", again in %s", n.Result.RequeueAfter)
	}
	fmt.Fprintln(b)
	if w := n.Wait; w != nil {
		fmt.Fprintf(b, "  waiting: %s (again in %s): %s\n", w.Reason, w.After, w.For)
	}
	if f := n.Failed; f != nil {
		fmt.Fprintf(b, "  failed: %s: %s\n", f.Reason, f.Message)
	}
	if st.Rollback != nil {
		fmt.Fprintf(b, "  rolls back to: %s\n", st.Rollback.Snapshot)
	}
	for _, e := range st.EnvironmentStatus {
		verified := ""
		if e.VerifiedTime != nil {
			verified = " verified " + e.VerifiedTime.UTC().Format("15:04")
		}
		fmt.Fprintf(b, "  step %d %s: %s%s: %s\n", e.Step, e.EnvironmentName, e.Status, verified, e.DisplayStatus)
	}
	if r := n.Rollback; r != nil {
		fmt.Fprintf(b, "  write history %s: reject %s, hold\n", r.Env, r.Bad)
	}
	for _, w := range n.Binds {
		if w.Create != nil {
			fmt.Fprintf(b, "  write binding %s: create, Snapshot %s\n", w.Create.Name, w.Create.Spec.Snapshot)
		} else {
			fmt.Fprintf(b, "  write binding %s: Snapshot %s -> %s\n", w.To.Name, w.From.Spec.Snapshot, w.To.Spec.Snapshot)
		}
	}
	for _, h := range n.Entries {
		fmt.Fprintf(b, "  write history %s: %s of %s %s, approved by %v\n", h.Env, h.Entry.Kind, h.Entry.Snapshot, h.Entry.Result, h.Entry.ApprovedBy)
		if h.Rollback {
			fmt.Fprintf(b, "  create PromotionRun %s (automatic rollback)\n", as.NewAutomaticRollback(s.w.Run, h.Env).Name)
		}
	}
	for _, e := range n.Events {
		fmt.Fprintf(b, "  event %s: %s\n", e.Reason, e.Message)
	}
}

// apply is what act writes, as the next pass reads it.
func (s *seq) apply(n decision) {
	w := s.w
	if r := n.Rollback; r != nil {
		applyRollback(&s.history(r.Env).Status, w.Run.Name, r.Bad, r.BadID, w.Now)
	}
	for _, b := range n.Binds {
		if b.Create != nil {
			seb := b.Create.DeepCopy()
			seb.UID, seb.Generation, seb.CreationTimestamp = types.UID("uid-"+seb.Name), 1, w.Now
			w.Bindings = append(w.Bindings, *seb)
			continue
		}
		for i := range w.Bindings {
			if w.Bindings[i].UID == b.To.UID {
				to := b.To.DeepCopy()
				if to.Spec.Snapshot != b.From.Spec.Snapshot {
					to.Generation++
				}
				w.Bindings[i] = *to
			}
		}
	}
	for _, h := range n.Entries {
		upsertEntry(&s.history(h.Env).Status, h.Entry)
	}
	w.Run.Status = n.Status
	w.Starting = n.Status.State != as.PromotionRunStateActive
	for i := range w.Runs {
		if w.Runs[i].UID == w.Run.UID {
			w.Runs[i] = *w.Run
		}
	}
}

func (s *seq) history(env string) *as.PromotionHistory {
	for i := range s.w.Histories {
		if s.w.Histories[i].Spec.Environment == env {
			return &s.w.Histories[i]
		}
	}
	s.w.Histories = append(s.w.Histories, as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: HistoryName("app", env)},
		Spec: as.PromotionHistorySpec{Application: "app", Environment: env}})
	return &s.w.Histories[len(s.w.Histories)-1]
}

// golden compares the log with testdata/<name>.golden.
func (s *seq) golden(name string) {
	s.t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(s.t, os.MkdirAll("testdata", 0o755))
		require.NoError(s.t, os.WriteFile(path, []byte(s.log.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(s.t, err, "missing golden file: run go test -tags unit ./reconcilers/promotionrun -run TestSequence -update")
	assert.Equal(s.t, string(want), s.log.String(), "the sequence changed: review, then run go test -tags unit ./reconcilers/promotionrun -run TestSequence -update")
}

func automated(name, snapshot, from string) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: as.PromotionRunSpec{Application: "app", Snapshot: snapshot, AutomatedPromotion: &as.AutomatedPromotionConfiguration{InitialEnvironment: from}}}
}

func manualRun(name, snapshot, to string, rollback bool) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: as.PromotionRunSpec{Application: "app", Snapshot: snapshot, ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: to, Rollback: rollback}}}
}

func withGates(e as.Environment, g *as.PromotionGates) as.Environment {
	e.Spec.Gates = g
	return e
}

// TestSequenceGatesOpenInTurn: an automated promotion dev -> staging -> prod
// waits for the run before it, then at staging's freeze, dev's soak time and
// staging's approval, and at prod's preview, each opening in turn.
func TestSequenceGatesOpenInTurn(t *testing.T) {
	auto := as.DeploymentStrategyAppStudioAutomated
	prod := env("prod", "staging", auto)
	prod.Spec.Preview = &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: time.Hour}}
	s := newSeq(t, automated("promote-s1", "s1", "dev"),
		withGates(env("dev", "", auto), &as.PromotionGates{SoakTime: dur(time.Hour)}),
		withGates(env("staging", "dev", auto), &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true, By: "alice", Reason: "INC-1"},
			Approvals: &as.ApprovalGate{Required: 1, Users: []string{"alice"}}}),
		prod,
		env("qa", "dev", as.DeploymentStrategyManual))
	older := promotionRun("older", t0.Add(-time.Hour).Unix(), "app", as.PromotionRunStateActive)
	older.Namespace = "t"
	s.w.Runs = []as.PromotionRun{older, *s.w.Run}

	s.step("an older run of the application is Active")
	s.next()
	s.step("it completes")
	s.w.Runs[0].Status.State = as.PromotionRunStateCompleted
	s.next()
	s.next()
	s.synced("dev", "s1", true)
	s.next()
	s.step("staging is unfrozen")
	s.env("staging").Spec.Gates.Freeze.Frozen = false
	s.next()
	s.after(time.Hour)
	s.next()
	s.step("alice approves s1 into staging")
	a := approval("s1", "staging", "alice")
	a.Spec.Application = "app"
	s.w.Approvals = append(s.w.Approvals, a)
	s.next()
	s.synced("staging", "s1", true)
	s.next()
	s.step("a clean preview of s1 to prod completes")
	s.w.Previews = append(s.w.Previews, as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "pv", Generation: 1},
		Spec:   as.PromotionPreviewSpec{Application: "app", Snapshot: "s1", TargetEnvironment: "prod"},
		Status: as.PromotionPreviewStatus{ObservedGeneration: 1, CompletedAt: &s.w.Now, Clean: true}})
	s.next()
	s.synced("prod", "s1", true)
	n := s.next()
	require.Equal(t, as.PromotionRunCompleteResultSuccess, n.Status.CompletionResult)
	s.golden("gates-open-in-turn")
}

// TestSequenceRollback: a rollback of s2 out of prod passes prod's freeze
// (rollbacks are exempt unless the Environment says otherwise), goes back
// to s1, the last other Snapshot verified there, and records it; a later
// promotion of s2 is refused.
func TestSequenceRollback(t *testing.T) {
	s := newSeq(t, manualRun("rb", "s2", "prod", true),
		withGates(env("prod", "", as.DeploymentStrategyManual), &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}}))
	ok := as.PromotionRunCompleteResultSuccess
	good, bad := entry("r1", "s1", ok), entry("r2", "s2", ok)
	good.SnapshotIdentity, bad.SnapshotIdentity = s.w.Snapshots["s1"].Identity(), s.w.Snapshots["s2"].Identity()
	s.history("prod").Status.Entries = []as.PromotionHistoryEntry{good, bad}
	s.w.Bindings = []as.SnapshotEnvironmentBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "app-prod", UID: "uid-app-prod", Generation: 3},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "prod", Snapshot: "s2"}}}
	s.w.Runs = []as.PromotionRun{*s.w.Run}
	s.step("prod runs s2, frozen")
	s.next()
	s.synced("prod", "s2", true)
	s.next()
	s.synced("prod", "s1", true)
	n := s.next()
	require.Equal(t, ok, n.Status.CompletionResult)

	s.step("a new promotion of s2 into prod")
	again := manualRun("again", "s2", "prod", false)
	again.Namespace, again.UID = "t", "uid-again"
	s.w.Run, s.w.Runs, s.w.Starting = again, []as.PromotionRun{*again}, true
	s.step("prod is unfrozen")
	s.env("prod").Spec.Gates.Freeze.Frozen = false
	s.next()
	n = s.next()
	require.Equal(t, as.PromotionRunReasonSnapshotRejected, n.Failed.Reason)
	s.golden("rollback")
}

// TestSequenceAutomaticRollback: a promotion into prod, which asks for an
// automatic rollback, never gets Healthy: it times out, its failure is
// recorded, and the rollback is created.
func TestSequenceAutomaticRollback(t *testing.T) {
	prod := env("prod", "", as.DeploymentStrategyManual)
	prod.Spec.Rollback = &as.RollbackPolicy{Automatic: true}
	s := newSeq(t, manualRun("p2", "s2", "prod", false), prod)
	s.w.Runs = []as.PromotionRun{*s.w.Run}
	s.next()
	s.next()
	s.synced("prod", "s2", false)
	s.after(9 * time.Minute)
	s.next()
	s.after(time.Minute)
	n := s.next()
	require.Equal(t, ReasonTimedOut, n.Failed.Reason)
	require.Len(t, n.Entries, 1)
	require.True(t, n.Entries[0].Rollback)
	s.golden("automatic-rollback")
}

// TestSequenceTimeout: the time a step waits at a gate does not count
// against it: staging may take Timeout from when it was entered.
func TestSequenceTimeout(t *testing.T) {
	auto := as.DeploymentStrategyAppStudioAutomated
	s := newSeq(t, automated("promote-s1", "s1", "dev"), env("dev", "", auto),
		withGates(env("staging", "dev", auto), &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}}))
	s.w.Runs = []as.PromotionRun{*s.w.Run}
	s.next()
	s.next()
	s.synced("dev", "s1", true)
	s.next()
	s.after(30 * time.Minute)
	s.step("staging is unfrozen")
	s.env("staging").Spec.Gates.Freeze.Frozen = false
	s.next()
	s.synced("staging", "s1", false)
	s.after(9 * time.Minute)
	s.next()
	s.after(time.Minute)
	n := s.next()
	require.Equal(t, ReasonTimedOut, n.Failed.Reason)
	s.golden("timeout")
}

// TestSequenceBindingRefused: the API server refuses the binding a promotion
// creates (act finds out); the plan made again with that fact fails the run
// there and records the failure.
func TestSequenceBindingRefused(t *testing.T) {
	s := newSeq(t, manualRun("p1", "s1", "prod", false), env("prod", "", as.DeploymentStrategyManual))
	s.w.Runs = []as.PromotionRun{*s.w.Run}
	s.next()
	s.pass++
	first := plan(s.w)
	s.write(first)
	s.step("the API server refuses %s: its name is taken", first.Binds[0].Create.Name)
	s.w.Refused = map[string]*kernel.Refusal{"prod": kernel.Refuse(ReasonBindingNameTaken,
		"SnapshotEnvironmentBinding app-prod-generated-binding exists for Application %q and Environment %q", "other", "dev")}
	n := s.next()
	require.Equal(t, ReasonBindingNameTaken, n.Failed.Reason)
	s.golden("binding-refused")
}

// moved: the tag of snapshot's image now names another digest in env, and
// its Pod restarted on it (as a kubelet pulling the moved tag reports).
func (s *seq) moved(env, snapshot string) {
	seb := binding.Of(s.w.Bindings, "app", env)
	require.NotNil(s.t, seb, env)
	img := s.w.Snapshots[snapshot].Spec.Components[0].ContainerImage
	a := s.w.Generated[seb.UID][0]
	s.w.Live[a.Name] = &liveWorkloads{Pods: []livePod{{Name: env + "-fe-2", Containers: []liveContainer{{Name: "fe", Image: img, ImageID: "quay.io/x/fe@" + testDigest(img+"-moved"), Running: true}}}}}
	s.step("the tag %s moves and %s's Pod restarts on it", img, env)
}

// TestSequenceDigestDriftDuringSoak: dev, which soaks for an hour and asks
// for an automatic rollback, is verified running s1's digest (pinned then:
// the image is a tag); half an hour into its soak the tag moves under the
// same name and a Pod restarts on the new digest: the step fails, its
// history entry says so, and the rollback is created.
func TestSequenceDigestDriftDuringSoak(t *testing.T) {
	auto := as.DeploymentStrategyAppStudioAutomated
	dev := withGates(env("dev", "", auto), &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Hour}})
	dev.Spec.Rollback = &as.RollbackPolicy{Automatic: true}
	s := newSeq(t, automated("promote-s1", "s1", "dev"), dev, env("staging", "dev", auto))
	s.w.Runs = []as.PromotionRun{*s.w.Run}
	s.next()
	s.next()
	s.synced("dev", "s1", true)
	n := s.next()
	require.Equal(t, as.WaitingReasonSoakTime, n.Wait.Reason)
	require.Len(t, n.Status.EnvironmentStatus[0].Digests, 1)
	pin := n.Status.EnvironmentStatus[0].Digests[0]
	require.Equal(t, testDigest("quay.io/x/fe:v1"), pin.Digest, "the digest the Pod ran when first observed is pinned")
	s.after(30 * time.Minute)
	s.next()
	s.moved("dev", "s1")
	n = s.next()
	require.NotNil(t, n.Failed)
	require.Equal(t, ReasonImageDigestDrift, n.Failed.Reason)
	assert.Contains(t, n.Failed.Message, "component fe runs quay.io/x/fe:v1 with digest "+testDigest("quay.io/x/fe:v1-moved"))
	assert.Contains(t, n.Failed.Message, "not the expected "+pin.Digest)
	require.Len(t, n.Entries, 1)
	require.Equal(t, as.PromotionRunCompleteResultFailure, n.Entries[0].Entry.Result)
	require.True(t, n.Entries[0].Rollback)
	require.Len(t, s.history("dev").Status.Entries, 1, "the step's entry is the same, now failed")
	require.Equal(t, as.PromotionRunCompleteResultFailure, s.history("dev").Status.Entries[0].Result)
	s.golden("digest-drift")
}
