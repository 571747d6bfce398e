package bench

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// appTrace follows every Application of the peer comparison through the
// watch, to split each side's time into Argo CD's parts and to count the
// writes that are not Argo CD's own.
type appTrace struct {
	mu   sync.Mutex
	apps map[string]*appEvents
}

type appEvents struct {
	added time.Time
	prev  *argov1alpha1.Application
	// firstLook: Argo CD's controller first wrote the Application's status.
	firstLook time.Time
	// synced: the Application itself first Synced/Healthy.
	synced time.Time
	// specWrites: updates that changed the spec, labels, annotations or
	// finalizers (Argo CD's controller writes status and operation only,
	// apart from removing the refresh annotation).
	specWrites int
	// updates: every update, whoever wrote it.
	updates int
	// noProject: Argo CD once said the Application's project does not exist.
	noProject bool
}

func newAppTrace() *appTrace { return &appTrace{apps: map[string]*appEvents{}} }

func (t *appTrace) observe(ev watch.Event) {
	app, ok := ev.Object.(*argov1alpha1.Application)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.apps[app.Name]
	if e == nil {
		e = &appEvents{added: now}
		t.apps[app.Name] = e
	}
	if ev.Type == watch.Modified && e.prev != nil {
		e.updates++
		p := e.prev
		if !argocd.Equal(p.Spec, app.Spec) || !argocd.Equal(p.Labels, app.Labels) || !argocd.Equal(p.Finalizers, app.Finalizers) ||
			!argocd.Equal(withoutRefresh(p.Annotations), withoutRefresh(app.Annotations)) {
			e.specWrites++
		}
	}
	if e.firstLook.IsZero() && (app.Status.ReconciledAt != nil || app.Status.Sync.Status != "" || len(app.Status.Conditions) > 0) {
		e.firstLook = now
	}
	for _, c := range app.Status.Conditions {
		if strings.Contains(c.Message, "which does not exist") {
			e.noProject = true
		}
	}
	if e.synced.IsZero() && app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && app.Status.Health.Status == "Healthy" {
		e.synced = now
	}
	e.prev = app
}

func withoutRefresh(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if k != argov1alpha1.AnnotationKeyRefresh {
			out[k] = v
		}
	}
	return out
}

// summary describes the Applications named in names, start being the side's
// first create and done each name's Synced/Healthy as the side measured it
// (the GitOpsDeployment's, for our side; zero when it is the Application's).
func (t *appTrace) summary(names []string, start time.Time, done map[string]time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var toLook, lookToSynced, mirror []time.Duration
	var lastAdded, lastLook, lastSynced time.Duration
	writes, updates, noProject, missing := 0, 0, 0, 0
	for _, n := range names {
		e := t.apps[n]
		if e == nil || e.firstLook.IsZero() || e.synced.IsZero() {
			missing++
			continue
		}
		toLook = append(toLook, e.firstLook.Sub(e.added))
		lookToSynced = append(lookToSynced, e.synced.Sub(e.firstLook))
		lastAdded = max(lastAdded, e.added.Sub(start))
		lastLook = max(lastLook, e.firstLook.Sub(start))
		lastSynced = max(lastSynced, e.synced.Sub(start))
		writes += e.specWrites
		updates += e.updates
		if e.noProject {
			noProject++
		}
		if d, ok := done[n]; ok {
			mirror = append(mirror, d.Sub(e.synced))
		}
	}
	for _, s := range [][]time.Duration{toLook, lookToSynced, mirror} {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	p := func(s []time.Duration) string {
		if len(s) == 0 {
			return "-"
		}
		return ms(pct(s, 50)) + " / " + ms(s[len(s)-1])
	}
	out := fmt.Sprintf("last Application created %s, last first look %s, last Application Synced/Healthy %s after the first create; "+
		"created -> first look %s, first look -> Synced/Healthy %s (p50 / max); updates per Application %.1f, of which not Argo CD's %.2f; "+
		"project missing for %d",
		ms(lastAdded), ms(lastLook), ms(lastSynced), p(toLook), p(lookToSynced),
		float64(updates)/float64(max(1, len(names)-missing)), float64(writes)/float64(max(1, len(names)-missing)), noProject)
	if len(mirror) > 0 {
		out += "; Application Synced/Healthy -> GitOpsDeployment's status " + p(mirror)
	}
	if missing > 0 {
		out += fmt.Sprintf("; %d not traced", missing)
	}
	return out
}
