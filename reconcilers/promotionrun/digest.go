package promotionrun

import (
	"fmt"
	"slices"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Verification by live state, to the digest. Argo CD's status says an
// Application is Synced and Healthy and which images its Pods' specs name;
// it does not say which digest runs, nor whether that status is older than
// the step. A step is verified only when, for every component:
//   - Argo CD compared the Application after the step started, against the
//     spec generated for the Snapshot (status.reconciledAt and
//     status.sync.comparedTo: never a status older than the step), and
//   - the running containers of the component's workloads (the Pods' own
//     containerStatuses[].imageID, read from the cluster live, live.go) run
//     the Snapshot's digest: the one its image pins (image@sha256:...), or,
//     for a tag, the one they all agreed on at the first observation after
//     the step started, pinned then in the step's status (digests).
//
// From then on, until the run leaves the Environment's soak time behind, a
// running container of the component with another digest (a tag moved and a
// Pod restarted) is drift: it fails the step (ReasonImageDigestDrift).

// ReasonImageDigestDrift: a component's running containers no longer run the
// digest verified (or pinned) for its image.
const ReasonImageDigestDrift = "ImageDigestDrift"

// liveWorkloads is what was read of one Application's workloads on its
// cluster: the Pods they control; Problem says why they could not be read.
type liveWorkloads struct {
	Pods    []livePod
	Problem string
}

// livePod is what verification reads of a live Pod.
type livePod struct {
	Name       string
	Deleting   bool
	Containers []liveContainer
}

// liveContainer is a container of a Pod: the image its spec names and, once
// it runs, the image ID the kubelet reports.
type liveContainer struct {
	Name, Image, ImageID string
	Running              bool
}

// digestOf is the digest an image reference or an image ID names
// (repo@sha256:..., docker-pullable://repo@sha256:...), or "".
func digestOf(ref string) string {
	i := strings.LastIndex(ref, "@")
	if i < 0 {
		return ""
	}
	d := ref[i+1:]
	if !strings.Contains(d, ":") {
		return ""
	}
	return d
}

// digestCheck is what the live containers of one component say of its image.
type digestCheck struct {
	// Digest the running containers agree on ("" when they do not, or none runs).
	Digest string
	// Wait says what the component waits for; empty when Digest is the expected one
	// (or, with nothing expected, the one to pin).
	Wait string
	// Drift: a running container runs another digest than expected (its Wait says which).
	Drift bool
}

// checkDigest compares the running containers of image in pods with want,
// the digest expected ("" when none is pinned yet: the containers must agree).
// Pods being deleted do not count: they are going away.
func checkDigest(component, image, want string, pods []livePod) digestCheck {
	var seen []string
	running := 0
	for _, p := range pods {
		if p.Deleting {
			continue
		}
		for _, c := range p.Containers {
			if c.Image != image || !c.Running {
				continue
			}
			running++
			got := digestOf(c.ImageID)
			if got == "" {
				return digestCheck{Wait: fmt.Sprintf("%s: container %s of Pod %s reports no image digest", component, c.Name, p.Name)}
			}
			if want != "" && got != want {
				return digestCheck{Drift: true, Wait: fmt.Sprintf("component %s runs %s with digest %s (container %s of Pod %s), not the expected %s",
					component, image, got, c.Name, p.Name, want)}
			}
			if !slices.Contains(seen, got) {
				seen = append(seen, got)
			}
		}
	}
	switch {
	case running == 0:
		return digestCheck{Wait: component + ": no running container of " + image + " yet"}
	case len(seen) > 1:
		slices.Sort(seen)
		return digestCheck{Wait: fmt.Sprintf("%s: running containers of %s disagree on its digest (%s)", component, image, strings.Join(seen, ", "))}
	}
	return digestCheck{Digest: seen[0]}
}

// comparedSince says whether Argo CD's status of app is from a comparison
// made after since against the spec generated for image: its reconciledAt is
// not before since (both have second resolution) and what it compared with
// sets image. A status from before the step, or of the previous spec, is never
// counted.
func comparedSince(app *argov1alpha1.Application, image string, since time.Time) bool {
	at := app.Status.ReconciledAt
	if at == nil || at.Time.Before(since.Truncate(time.Second)) {
		return false
	}
	src := app.Status.Sync.ComparedTo.Source
	if src.Kustomize == nil {
		return false
	}
	return slices.ContainsFunc(src.Kustomize.Images, func(img argov1alpha1.KustomizeImage) bool { return strings.HasSuffix(string(img), "="+image) })
}

// syncing says whether Argo CD has a sync of app requested or running.
func syncing(app *argov1alpha1.Application) bool {
	st := app.Status.OperationState
	return app.Operation != nil || st != nil && !st.Phase.Completed()
}

// stepOf is the run's step in env, or nil.
func stepOf(run *as.PromotionRun, env string) *as.PromotionRunEnvironmentStatus {
	for i := range run.Status.EnvironmentStatus {
		if s := &run.Status.EnvironmentStatus[i]; s.EnvironmentName == env {
			return s
		}
	}
	return nil
}

// pinned is the digest recorded for component in the step, or nil.
func pinned(step *as.PromotionRunEnvironmentStatus, component string) *as.RunningDigest {
	for i := range step.Digests {
		if d := &step.Digests[i]; d.Component == component {
			return d
		}
	}
	return nil
}

// expected is the digest component must run in the step: its image's own, else the pinned one, else "".
func expected(step *as.PromotionRunEnvironmentStatus, c as.SnapshotComponent) string {
	if d := digestOf(c.ContainerImage); d != "" {
		return d
	}
	if p := pinned(step, c.Name); p != nil && p.Image == c.ContainerImage {
		return p.Digest
	}
	return ""
}

// verifyLive checks, for a step whose Applications verdict found Synced,
// Healthy and generated for the Snapshot, that Argo CD compared them after
// the step started and that the live containers run the Snapshot's digests;
// it pins each component's digest in the step as it is first observed. It
// returns whether the step is verified, what it waits for otherwise, and a
// refusal when a component drifted from its expected digest.
func verifyLive(w *world, run *as.PromotionRun, env string, snap *as.Snapshot, apps []argov1alpha1.Application) (bool, string, *kernel.Refusal) {
	step := stepOf(run, env)
	if step == nil {
		return false, "not entered", nil
	}
	var since time.Time
	if step.StartTime != nil {
		since = step.StartTime.Time
	}
	byComponent := map[string]*argov1alpha1.Application{}
	for i := range apps {
		byComponent[apps[i].Labels[as.LabelComponent]] = &apps[i]
	}
	var waiting []string
	for _, c := range snap.Spec.Components {
		app := byComponent[c.Name]
		if app == nil {
			waiting = append(waiting, c.Name+": no GitOpsDeployment yet")
			continue
		}
		if !comparedSince(app, c.ContainerImage, since) {
			waiting = append(waiting, c.Name+": Argo CD has not compared it with "+c.ContainerImage+" since the step started")
			continue
		}
		if syncing(app) {
			// Its status is the comparison before the sync ends.
			waiting = append(waiting, c.Name+": Argo CD's sync in progress")
			continue
		}
		check, refusal := checkLive(w, run, env, step, c, app)
		if refusal != nil {
			return false, refusal.Message, refusal
		}
		if check.Wait != "" {
			waiting = append(waiting, check.Wait)
			continue
		}
		if pinned(step, c.Name) == nil {
			step.Digests = append(step.Digests, as.RunningDigest{Component: c.Name, Image: c.ContainerImage, Digest: check.Digest, ObservedTime: w.Now})
		}
	}
	if len(waiting) > 0 {
		return false, "waiting for " + strings.Join(waiting, ", "), nil
	}
	return true, msgSuccess, nil
}

// checkLive is the digest check of component c through app in the step, and a
// refusal when it drifted from a digest its image pins or the step pinned.
func checkLive(w *world, run *as.PromotionRun, env string, step *as.PromotionRunEnvironmentStatus, c as.SnapshotComponent, app *argov1alpha1.Application) (digestCheck, *kernel.Refusal) {
	live := w.Live[app.Name]
	if live == nil {
		return digestCheck{Wait: c.Name + ": its live workloads were not read yet"}, nil
	}
	if live.Problem != "" {
		return digestCheck{Wait: c.Name + ": " + live.Problem}, nil
	}
	check := checkDigest(c.Name, c.ContainerImage, expected(step, c), live.Pods)
	if check.Drift {
		return check, kernel.Refuse(ReasonImageDigestDrift, "Environment %s of PromotionRun %s: %s", env, run.Name, check.Wait)
	}
	return check, nil
}

// soaking are the verified steps of run whose Environment's soak time has
// not ended at now: their digests are still watched for drift.
func soaking(run *as.PromotionRun, envs []as.Environment, now time.Time) []string {
	var out []string
	for _, s := range run.Status.EnvironmentStatus {
		if s.Status != as.PromotionRunEnvironmentStatusSuccess || s.VerifiedTime == nil {
			continue
		}
		i := slices.IndexFunc(envs, func(e as.Environment) bool { return e.Name == s.EnvironmentName })
		if i < 0 || envs[i].Spec.Gates == nil || envs[i].Spec.Gates.SoakTime == nil {
			continue
		}
		if now.Before(s.VerifiedTime.Add(envs[i].Spec.Gates.SoakTime.Duration)) {
			out = append(out, s.EnvironmentName)
		}
	}
	return out
}

// driftRecheck is how often the digests of soaking steps are read again:
// a Pod restarting on a moved tag changes no object the run watches.
const driftRecheck = kernel.UnwatchedRecheck

// watchSoak looks at a run that completed while a step it verified soaks:
// its Environment's soak time is the step's too (drift during it fails the
// step, the run and, through the history entry, rolls back as the
// Environment says), so the digests are read again until the soak ends, as
// for a run still Active waiting at its next gate.
func watchSoak(w *world, run *as.PromotionRun, d *decision) {
	snap := w.snapshot(snapshotOf(run))
	if snap == nil || soakDrift(w, run, d, snap) {
		return
	}
	d.Result = ctrl.Result{RequeueAfter: soakLook(run, w.Environments, w.Now.Time)}
}

// soakLook is when to read the digests of run's soaking steps again: every
// driftRecheck, and once more when the first soak ends; 0 when none soaks.
func soakLook(run *as.PromotionRun, envs []as.Environment, now time.Time) time.Duration {
	next := time.Duration(0)
	for _, s := range run.Status.EnvironmentStatus {
		if !slices.Contains(soaking(run, envs, now), s.EnvironmentName) {
			continue
		}
		i := slices.IndexFunc(envs, func(e as.Environment) bool { return e.Name == s.EnvironmentName })
		left := s.VerifiedTime.Add(envs[i].Spec.Gates.SoakTime.Duration).Sub(now) + time.Second
		if next == 0 || left < next {
			next = left
		}
	}
	if next > driftRecheck {
		return driftRecheck
	}
	return next
}

// soakDrift fails the run when a component of a soaking step (soaking) runs
// another digest than the one verified there; it says whether it did.
func soakDrift(w *world, run *as.PromotionRun, d *decision, snap *as.Snapshot) bool {
	for _, env := range soaking(run, w.Environments, w.Now.Time) {
		step := stepOf(run, env)
		seb := binding.Of(w.Bindings, run.Spec.Application, env)
		if seb == nil || seb.Spec.Snapshot != snapshotOf(run) {
			continue
		}
		byComponent := map[string]*argov1alpha1.Application{}
		for i, a := range w.Generated[seb.UID] {
			byComponent[a.Labels[as.LabelComponent]] = &w.Generated[seb.UID][i]
		}
		for _, c := range snap.Spec.Components {
			app := byComponent[c.Name]
			if app == nil || pinned(step, c.Name) == nil && digestOf(c.ContainerImage) == "" {
				continue
			}
			if _, refusal := checkLive(w, run, env, step, c, app); refusal != nil {
				step.Status, step.DisplayStatus = as.PromotionRunEnvironmentStatusFailure, refusal.Message
				complete(run, d, as.PromotionRunCompleteResultFailure, refusal)
				return true
			}
		}
	}
	return false
}

// recheckSoak makes a wait come back within driftRecheck while steps soak.
func recheckSoak(w *world, run *as.PromotionRun, wait *kernel.Waiting) {
	if wait != nil && len(soaking(run, w.Environments, w.Now.Time)) > 0 && (wait.After <= 0 || wait.After > driftRecheck) {
		wait.After = driftRecheck
	}
}
