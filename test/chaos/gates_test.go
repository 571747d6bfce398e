//go:build !unit

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Gated promotions under chaos (issue 24): in each of several tenants, dev ->
// stage -> prod, where stage needs one approval (alice or bob) and prod two
// (alice and bob) and is frozen for the first half of every minute; automated
// PromotionRuns of s2 from dev while the sidecar is SIGKILLed at random and
// the proxy fails 20% of requests and cuts watches; people approve at random
// times, and carol (whom no gate names) approves early. A watch straight on
// the API server records every binding write. At the end:
//   - no binding moved into stage or prod before enough of the approvals the
//     gate names were written (resourceVersions: the approval's create before
//     the binding's write), nor into prod while its window was frozen;
//   - no run promoted an Environment twice: each binding took the run's
//     Snapshot once, each history has one entry of the run, the run's status
//     one step per Environment;
//   - every approval is still there, unwritten, and named in the history.

// prodWindow freezes prod from the start of every minute for this long.
const prodWindow = 30 * time.Second

// decisionSlack is how long a binding write may be seen after the sidecar
// decided the window was open (the decision, the write and the watch event).
const decisionSlack = 5 * time.Second

// bindingWrite is one state of a binding the watch saw.
type bindingWrite struct {
	ns, app, env, snapshot string
	generation             int64
	rv                     uint64
	seen                   time.Time
}

// approvalMade is an approval the test created: its resourceVersion orders
// it before or after a binding write.
type approvalMade struct {
	obj *as.PromotionApproval
	rv  uint64
}

func TestChaosGatedPromotions(t *testing.T) {
	ctx := context.Background()
	proxy, err := stack.StartFaultProxy(kube, t.TempDir())
	require.NoError(t, err)
	defer proxy.Close()

	// Record every binding write from now on, before anything moves.
	var mu sync.Mutex
	var writes []bindingWrite
	stopWatch := watchBindings(t, func(w bindingWrite) { mu.Lock(); writes = append(writes, w); mu.Unlock() })
	defer stopWatch()

	// Approvals count only while the API server enforces who approves: the
	// shipped policies, whose parameter the sidecar is told (it runs with
	// the admin's kubeconfig here).
	require.NoError(t, stack.InstallPolicies(ctx, k8s))
	policiesAt := time.Now()
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Kubeconfig: proxy.Kubeconfig, Args: []string{"--service-account=argocd/gitops-service"}})
	require.NoError(t, err)
	defer side.Close()
	proxy.SetFailRate(0.2)
	proxy.CutWatchesWithin(4 * time.Second)

	const tenants, appsPerTenant = 3, 2
	window := as.FreezeWindow{Schedule: "* * * * *", Duration: metav1.Duration{Duration: prodWindow}, Reason: "chaos"}
	gates := map[string]*as.PromotionGates{
		"stage": {Approvals: &as.ApprovalGate{Required: 1, Users: []string{"alice", "bob"}}},
		"prod":  {Approvals: &as.ApprovalGate{Required: 2, Users: []string{"alice", "bob"}}, FreezeWindows: []as.FreezeWindow{window}},
	}
	type runOf struct {
		run *as.PromotionRun
		ns  string
	}
	var runs []runOf
	var namespaces []string
	var approvalsMu sync.Mutex
	var approvals []approvalMade
	approve := func(ns, app, env, user string) {
		a := &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-s2-%s-%s", app, env, user)},
			Spec: as.PromotionApprovalSpec{Snapshot: app + "-s2", Environment: env, Application: app, Approver: as.Approver{User: user}}}
		// Called from goroutines too: assert, not require. As the approver
		// (the policy checks it), once the API server has their RBAC and the
		// policy (an approval written before counts for nothing).
		c := approver(t, ns, user)
		var err error
		deadline := time.Now().Add(30 * time.Second)
		for err = c.Create(ctx, a.DeepCopy()); err != nil && time.Now().Before(deadline); err = c.Create(ctx, a.DeepCopy()) {
			time.Sleep(200 * time.Millisecond)
		}
		if !assert.NoError(t, err, "approving %s/%s", ns, a.Name) {
			return
		}
		got := &as.PromotionApproval{}
		if !assert.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(a), got)) {
			return
		}
		a = got
		v, err := strconv.ParseUint(a.ResourceVersion, 10, 64)
		if !assert.NoError(t, err) {
			return
		}
		approvalsMu.Lock()
		approvals = append(approvals, approvalMade{obj: a, rv: v})
		approvalsMu.Unlock()
	}
	for i := 0; i < tenants; i++ {
		ns := tenantNamespace(t)
		namespaces = append(namespaces, ns)
		stopArgo := playArgoCD(t, ns)
		defer stopArgo()
		parent := ""
		for _, env := range []string{"dev", "stage", "prod"} {
			require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: env},
				Spec: as.EnvironmentSpec{DisplayName: env, ParentEnvironment: parent, DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated, Gates: gates[env]}}))
			parent = env
		}
		for j := 0; j < appsPerTenant; j++ {
			app := fmt.Sprintf("app-%d", j)
			createAppStudioApplication(t, ns, app)
			// carol, whom no gate names, approves at once: she must not count.
			approve(ns, app, "stage", "carol")
			approve(ns, app, "prod", "carol")
		}
	}

	// What was written within 2 s of the policies' creation (the API server may
	// not enforce them yet) counts for nothing, by design (docs/gates.md): the
	// people approve once that is over.
	time.Sleep(time.Until(policiesAt.Add(3 * time.Second)))

	stop := make(chan struct{})
	killed := make(chan int, 1)
	go killAtRandom(side, stop, killed)

	// The automated promotions, and the people approving at random times
	// (some before the run reaches the Environment, some while it waits).
	var wg sync.WaitGroup
	for _, ns := range namespaces {
		for j := 0; j < appsPerTenant; j++ {
			app := fmt.Sprintf("app-%d", j)
			run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-s2"},
				Spec: as.PromotionRunSpec{Application: app, Snapshot: app + "-s2", AutomatedPromotion: &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}}}
			require.NoError(t, k8s.Create(ctx, run))
			runs = append(runs, runOf{run, ns})
			for _, a := range [][2]string{{"stage", "alice"}, {"prod", "alice"}, {"prod", "bob"}} {
				wg.Add(1)
				go func(ns, app, env, user string) {
					defer wg.Done()
					// An approval naming only the Snapshot counts when the Snapshot is
					// older (whole seconds: docs/gates.md): at least a second after it.
					time.Sleep(1100*time.Millisecond + time.Duration(rand.IntN(25000))*time.Millisecond)
					approve(ns, app, env, user)
				}(ns, app, a[0], a[1])
			}
		}
	}
	wg.Wait()
	// Kills go on a little after the last approval (a kill every 2-6 s).
	time.Sleep(5 * time.Second)
	close(stop)
	kills := <-killed
	if side.Exited() {
		require.NoError(t, side.Start(ctx))
	}

	// The faults go on while the runs complete: only the kills stop. prod
	// opens in the second half of each minute.
	for _, r := range runs {
		got := &as.PromotionRun{}
		if !assert.Eventually(t, func() bool {
			return k8s.Get(ctx, client.ObjectKeyFromObject(r.run), got) == nil && got.Status.State == as.PromotionRunStateCompleted
		}, 150*time.Second, 250*time.Millisecond, "PromotionRun %s/%s never completed", r.ns, r.run.Name) {
			t.Fatalf("PromotionRun %s/%s: %+v", r.ns, r.run.Name, got.Status)
		}
		assert.Equal(t, as.PromotionRunCompleteResultSuccess, got.Status.CompletionResult, "PromotionRun %s/%s: %+v", r.ns, r.run.Name, got.Status.Conditions)
		// One step per Environment.
		var envs []string
		for _, s := range got.Status.EnvironmentStatus {
			envs = append(envs, s.EnvironmentName)
		}
		slices.Sort(envs)
		assert.Equal(t, []string{"dev", "prod", "stage"}, envs, "the steps of %s/%s", r.ns, r.run.Name)
		// One history entry of the run per Environment, naming the approvers.
		for _, env := range []string{"dev", "stage", "prod"} {
			h := &as.PromotionHistory{}
			require.Eventually(t, func() bool {
				return k8s.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: as.PromotionHistoryName(r.run.Spec.Application, env)}, h) == nil &&
					slices.ContainsFunc(h.Status.Entries, func(e as.PromotionHistoryEntry) bool { return e.PromotionRunUID == string(got.UID) })
			}, 30*time.Second, 250*time.Millisecond, "no history entry of %s/%s in %s", r.ns, r.run.Name, env)
			var mine []as.PromotionHistoryEntry
			for _, e := range h.Status.Entries {
				if e.PromotionRunUID == string(got.UID) {
					mine = append(mine, e)
				}
			}
			if assert.Len(t, mine, 1, "history entries of %s/%s in %s", r.ns, r.run.Name, env) {
				want := map[string][]string{"dev": nil, "stage": {"alice", "carol"}, "prod": {"alice", "bob", "carol"}}[env]
				assert.Subset(t, mine[0].ApprovedBy, slices.DeleteFunc(slices.Clone(want), func(u string) bool { return u == "carol" }),
					"the approvers of %s/%s in %s", r.ns, r.run.Name, env)
			}
		}
	}
	stopWatch()

	// Every approval still there, as it was written.
	for _, a := range approvals {
		got := &as.PromotionApproval{}
		if assert.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(a.obj), got), "approval %s/%s is gone", a.obj.Namespace, a.obj.Name) {
			assert.Equal(t, a.obj.UID, got.UID, "approval %s/%s was made again", a.obj.Namespace, a.obj.Name)
			assert.Equal(t, a.obj.ResourceVersion, got.ResourceVersion, "approval %s/%s was written to", a.obj.Namespace, a.obj.Name)
		}
	}

	// The gates, against what the watch saw.
	mu.Lock()
	defer mu.Unlock()
	moves := 0
	for _, r := range runs {
		app, snap := r.run.Spec.Application, r.run.Spec.Snapshot
		for _, env := range []string{"dev", "stage", "prod"} {
			// The writes where the (app, env) binding took the run's Snapshot.
			// A binding deleted and made again takes it again.
			var into []bindingWrite
			prev := ""
			for _, w := range writes {
				if w.ns != r.ns || w.app != app || w.env != env {
					continue
				}
				if w.snapshot == snap && prev != snap {
					into = append(into, w)
				}
				prev = w.snapshot
			}
			if !assert.Len(t, into, 1, "the %s binding of %s/%s took %s %d times", env, r.ns, app, snap, len(into)) {
				continue
			}
			moves++
			w := into[0]
			if g := gates[env]; g != nil {
				approvers := map[string]bool{}
				for _, a := range approvals {
					s := a.obj.Spec
					if a.obj.Namespace == r.ns && s.Snapshot == snap && s.Environment == env && slices.Contains(g.Approvals.Users, s.Approver.User) && a.rv < w.rv {
						approvers[s.Approver.User] = true
					}
				}
				assert.GreaterOrEqual(t, len(approvers), int(g.Approvals.Required),
					"the %s binding of %s/%s moved to %s (resourceVersion %d) with approvals of %v only", env, r.ns, app, snap, w.rv, approvers)
				if len(g.FreezeWindows) > 0 {
					assert.False(t, frozenThroughout(w.seen.Add(-decisionSlack), w.seen),
						"the prod binding of %s/%s moved to %s at %s, inside the freeze window", r.ns, app, snap, w.seen.UTC().Format(time.RFC3339Nano))
				}
			}
		}
	}
	assert.Equal(t, len(runs)*3, moves, "binding moves checked")
	assert.GreaterOrEqual(t, kills, 2, "too few SIGKILLs: the test proves little")
	t.Logf("%d tenants, %d automated PromotionRuns, %d approvals, %d binding writes seen; %d SIGKILLs, %d failed requests, %d watches cut",
		tenants, len(runs), len(approvals), len(writes), kills, proxy.Failed.Load(), proxy.Cut.Load())
}

// frozenThroughout says whether prod's window (the first prodWindow of every
// minute, UTC) is frozen at every instant of [from, to].
func frozenThroughout(from, to time.Time) bool {
	frozen := func(t time.Time) bool { return t.Sub(t.Truncate(time.Minute)) < prodWindow }
	// [from, to] is shorter than either half-minute: frozen at both ends in
	// one minute is frozen throughout.
	return frozen(from) && frozen(to) && from.Truncate(time.Minute).Equal(to.Truncate(time.Minute))
}

// watchBindings reports every state of every binding, straight from the API
// server (not through the faulty proxy), from the moment it returns until
// the returned func is called; a closed watch resumes where it was.
func watchBindings(t *testing.T, report func(bindingWrite)) func() {
	t.Helper()
	wc, err := client.NewWithWatch(kube.Config, client.Options{Scheme: sidecar.NewScheme()})
	require.NoError(t, err)
	var list as.SnapshotEnvironmentBindingList
	require.NoError(t, wc.List(context.Background(), &list))
	from := list.ResourceVersion
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &as.SnapshotEnvironmentBindingList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: from, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				seb, ok := ev.Object.(*as.SnapshotEnvironmentBinding)
				if !ok {
					continue
				}
				from = seb.ResourceVersion
				if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
					continue
				}
				v, err := strconv.ParseUint(seb.ResourceVersion, 10, 64)
				if err != nil {
					continue
				}
				w := bindingWrite{ns: seb.Namespace, app: seb.Spec.Application, env: seb.Spec.Environment, snapshot: seb.Spec.Snapshot,
					generation: seb.Generation, rv: v, seen: time.Now()}
				if ev.Type == watch.Deleted {
					w.snapshot = "" // gone: whatever it is made again with, it takes anew
				}
				report(w)
			}
			w.Stop()
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// approver is a client of user, who may do anything in ns.
func approver(t *testing.T, ns, user string) client.Client {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "approver-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if err := k8s.Create(context.Background(), rb); err != nil && !apierrors.IsAlreadyExists(err) {
		assert.NoError(t, err)
	}
	cfg := *kube.Config
	cfg.Impersonate.UserName = user
	cfg.Impersonate.Groups = []string{"system:authenticated"}
	c, err := client.New(&cfg, client.Options{Scheme: k8s.Scheme()})
	assert.NoError(t, err)
	return c
}
