package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// With an Argo CD login every command goes through argocd-server: it lists
// the Applications the user may get, and asks our proxy extension about each,
// so the user sees and does exactly what Argo CD (and the panel) allows. The
// extension's answers are the panel's views; they are shown as the same API
// objects as with a kubeconfig, with the fields the panel has.

// argoPollInterval: the extension answers requests, it has no watch; runs
// are followed by asking again at this pace.
const argoPollInterval = 2 * time.Second

// maxPollFailures is how many failed requests in a row end following.
const maxPollFailures = 5

// panelObject is one GitOps Service object and an Application of it.
type panelObject struct {
	app *argov1alpha1.Application
	d   *uiproxy.Deployment
}

// argoObjects are the GitOps Service objects behind the Applications the
// user may see (in c.namespace, or all), each once.
func (c *cli) argoObjects(ctx context.Context) ([]panelObject, error) {
	if c.opts.selector != "" {
		return nil, usageError("-l selects labels of the objects in the cluster: it needs a kubeconfig (through Argo CD only the Applications are listed)")
	}
	apps, err := c.argo.apps(ctx, c.namespace)
	if err != nil {
		return nil, err
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	seen := map[string]bool{}
	var out []panelObject
	for i := range apps {
		app := &apps[i]
		key, ok := ownership.Owner(app, app.Labels[ownership.LabelOwnerKind])
		if !ok || seen[app.Labels[ownership.LabelOwnerKind]+"/"+key.String()] {
			continue
		}
		d, _, err := c.argo.deployment(ctx, app)
		if err != nil {
			if ee, ok := err.(*exitError); ok && ee.code == exitRefused {
				return nil, err
			}
			fmt.Fprintf(c.opts.streams.ErrOut, "warning: Application %s: %v\n", app.Name, err)
			continue
		}
		seen[app.Labels[ownership.LabelOwnerKind]+"/"+key.String()] = true
		out = append(out, panelObject{app: app, d: d})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d.Namespace != out[j].d.Namespace {
			return out[i].d.Namespace < out[j].d.Namespace
		}
		return out[i].d.Name < out[j].d.Name
	})
	return out, nil
}

// deploymentFromPanel is the GitOpsDeployment the panel's view shows.
func deploymentFromPanel(app *argov1alpha1.Application, d *uiproxy.Deployment) *v1.GitOpsDeployment {
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, UID: types.UID(app.Labels[ownership.LabelOwnerUID])}}
	gd.Spec.Type = v1.GitOpsDeploymentSpecType(d.Type)
	if d.Source != nil {
		gd.Spec.Source = v1.ApplicationSource{RepoURL: d.Source.RepoURL, Path: d.Source.Path, TargetRevision: d.Source.TargetRevision}
	}
	if d.Destination != nil {
		gd.Spec.Destination = v1.ApplicationDestination{Environment: d.Destination.Environment, Namespace: d.Destination.Namespace}
	}
	gd.Status.Sync.Status = v1.SyncStatusCode(d.Sync)
	gd.Status.Sync.Revision = app.Status.Sync.Revision
	gd.Status.Health.Status = v1.HealthStatusCode(d.Health)
	for _, c := range d.Conditions {
		gd.Status.Conditions = append(gd.Status.Conditions, v1.GitOpsDeploymentCondition{Type: v1.GitOpsConditionType(c.Type),
			Status: v1.GitOpsConditionStatus(c.Status), Reason: v1.GitOpsConditionReason(c.Reason), Message: c.Message})
	}
	return gd
}

// bindingFromPanel is the SnapshotEnvironmentBinding the panel's view shows.
func bindingFromPanel(d *uiproxy.Deployment) *as.SnapshotEnvironmentBinding {
	b := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: d.Application, Environment: d.Environment, Snapshot: d.Snapshot}}
	for _, c := range d.Components {
		b.Status.GitOpsDeployments = append(b.Status.GitOpsDeployments, as.BindingStatusGitOpsDeployment{ComponentName: c.Name,
			GitOpsDeploymentSyncStatus: c.Sync, GitOpsDeploymentHealthStatus: c.Health, GitOpsDeploymentCommitID: c.Commit})
	}
	for _, c := range d.Conditions {
		cond := metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
		if c.Type == as.ComponentDeploymentConditionAllComponentsDeployed {
			b.Status.ComponentDeploymentConditions = append(b.Status.ComponentDeploymentConditions, cond)
		} else {
			b.Status.BindingConditions = append(b.Status.BindingConditions, cond)
		}
	}
	return b
}

func (c *cli) argoList(ctx context.Context) error {
	objs, err := c.argoObjects(ctx)
	if err != nil {
		return err
	}
	var gds []v1.GitOpsDeployment
	var sebs []as.SnapshotEnvironmentBinding
	for _, o := range objs {
		switch o.d.Kind {
		case ownership.KindGitOpsDeployment:
			gds = append(gds, *deploymentFromPanel(o.app, o.d))
		case ownership.KindBinding:
			sebs = append(sebs, *bindingFromPanel(o.d))
		}
	}
	return c.printList(gds, sebs)
}

// argoFind is the object of kind (any kind when empty) named name; a
// GitOpsDeployment before a binding of that name, as with a kubeconfig.
func (c *cli) argoFind(ctx context.Context, name, kind string) (*panelObject, error) {
	objs, err := c.argoObjects(ctx)
	if err != nil {
		return nil, err
	}
	var found []panelObject
	for _, o := range objs {
		if o.d.Name == name && (kind == "" || o.d.Kind == kind) {
			found = append(found, o)
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		return found[i].d.Kind == ownership.KindGitOpsDeployment && found[j].d.Kind != ownership.KindGitOpsDeployment
	})
	namespaces := map[string]bool{}
	for _, o := range found {
		namespaces[o.d.Namespace] = true
	}
	what := kind
	if what == "" {
		what = "GitOpsDeployment or SnapshotEnvironmentBinding"
	}
	switch {
	case len(found) == 0 && c.namespace == "":
		return nil, fmt.Errorf("no %s %q among the Applications Argo CD shows you: `list` shows what there is", what, name)
	case len(found) == 0:
		return nil, fmt.Errorf("no %s %q in namespace %q among the Applications Argo CD shows you: `list` shows what there is, -n picks another namespace", what, name, c.namespace)
	case len(namespaces) > 1:
		var ns []string
		for n := range namespaces {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		return nil, usageError("%q is in namespaces %s: pick one with -n", name, strings.Join(ns, ", "))
	}
	return &found[0], nil
}

func (c *cli) argoStatus(ctx context.Context, name string) error {
	o, err := c.argoFind(ctx, name, "")
	if err != nil {
		return err
	}
	if o.d.Kind == ownership.KindBinding {
		return c.bindingStatus(bindingFromPanel(o.d))
	}
	return c.deploymentStatus(deploymentFromPanel(o.app, o.d))
}

func (c *cli) argoSync(ctx context.Context, deployment string) error {
	o, err := c.argoFind(ctx, deployment, ownership.KindGitOpsDeployment)
	if err != nil {
		return err
	}
	if o.d.Type == string(v1.GitOpsDeploymentSpecTypeAutomated) {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("GitOpsDeployment %q is automated: Argo CD syncs it by itself; push to Git, or set spec.type: manual to sync by hand", deployment)}
	}
	act, err := c.argo.act(ctx, o.app, "sync", map[string]string{"revision": c.opts.revision})
	if err != nil {
		return err
	}
	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: act.Namespace, Name: act.Name},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: c.opts.revision}}
	p := c.progress()
	p.note(fmt.Sprintf("GitOpsDeploymentSyncRun %s created: syncing %s to %s", run.Name, deployment, dash(c.opts.revision)))
	err = c.poll(ctx, func(ctx context.Context) (bool, error) {
		d, _, err := c.argo.deployment(ctx, o.app)
		if err != nil {
			return false, err
		}
		for _, r := range d.SyncRuns {
			if r.Name == run.Name {
				run.Status = syncRunStatusFromPanel(r)
			}
		}
		p.update(syncRunLine(run))
		switch run.Status.Phase {
		case v1.OperationSucceeded, v1.OperationFailed, v1.OperationError:
			return true, nil
		}
		return run.Status.Phase == "" && findCondition(run.Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred) != nil, nil
	})
	p.end()
	if err != nil {
		return err
	}
	return c.syncResult(deployment, run, true)
}

func syncRunStatusFromPanel(r uiproxy.SyncRun) v1.GitOpsDeploymentSyncRunStatus {
	st := v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationPhase(r.Phase), SyncStatus: v1.SyncStatusCode(r.Sync),
		Health: v1.HealthStatusCode(r.Health), Revision: r.Revision}
	if r.Message != "" {
		st.Conditions = []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue,
			Reason: v1.GitOpsDeploymentReasonErrorOccurred, Message: r.Message}}
	}
	return st
}

func (c *cli) argoPromote(ctx context.Context, snapshot string) error {
	if c.opts.autoFrom != "" {
		return usageError("--auto-from needs a kubeconfig: through Argo CD the GitOps Service promotes as its panel does, a Snapshot a binding runs --to one Environment")
	}
	from, err := c.argoBindingRunning(ctx, snapshot)
	if err != nil {
		return err
	}
	act, err := c.argo.act(ctx, from.app, "promote", map[string]string{"environment": c.opts.to})
	if err != nil {
		return err
	}
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: act.Namespace, Name: act.Name},
		Spec: as.PromotionRunSpec{Snapshot: snapshot, Application: from.d.Application, ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: c.opts.to}}}
	return c.argoFollowPromotion(ctx, from.app, run, fmt.Sprintf("PromotionRun %s created: %s of application %s", run.Name, snapshot, from.d.Application))
}

// argoBindingRunning is the binding Argo CD shows the user that runs
// snapshot (the first by Environment name): through Argo CD a Snapshot is
// promoted, or previewed, from a binding that runs it, as the panel does.
func (c *cli) argoBindingRunning(ctx context.Context, snapshot string) (*panelObject, error) {
	objs, err := c.argoObjects(ctx)
	if err != nil {
		return nil, err
	}
	var from *panelObject
	for i, o := range objs {
		if o.d.Kind == ownership.KindBinding && o.d.Snapshot == snapshot && (from == nil || o.d.Environment < from.d.Environment) {
			from = &objs[i]
		}
	}
	if from == nil {
		return nil, fmt.Errorf("no Environment you may see in Argo CD runs Snapshot %q: through Argo CD a Snapshot is promoted from a binding that runs it (with a kubeconfig any Snapshot)", snapshot)
	}
	return from, nil
}

// argoFollowPromotion follows run in the panel's view of app (its binding's
// PromotionRuns) until it completes, as followPromotion does with a kubeconfig.
func (c *cli) argoFollowPromotion(ctx context.Context, app *argov1alpha1.Application, run *as.PromotionRun, intro string) error {
	p := c.progress()
	p.note(intro)
	steps := promotionSteps{}
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		d, _, err := c.argo.deployment(ctx, app)
		if err != nil {
			return false, err
		}
		for _, r := range d.PromotionRuns {
			if r.Name == run.Name {
				run.Status = promotionStatusFromPanel(r)
			}
		}
		steps.show(p, run)
		return run.Status.State == as.PromotionRunStateCompleted, nil
	})
	p.end()
	if err != nil {
		return err
	}
	return c.promotionResult(p, run)
}

func promotionStatusFromPanel(r uiproxy.PromotionRun) as.PromotionRunStatus {
	st := as.PromotionRunStatus{State: as.PromotionRunState(r.State), CompletionResult: as.PromotionRunCompleteResult(r.Result)}
	for _, s := range r.Steps {
		st.EnvironmentStatus = append(st.EnvironmentStatus, as.PromotionRunEnvironmentStatus{Step: s.Step, EnvironmentName: s.Environment,
			Status: as.PromotionRunEnvironmentStatusField(s.Status), DisplayStatus: s.Message})
	}
	for _, c := range r.Conditions {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return st
}

// poll asks check every argoPollInterval until it is done, --timeout passes
// or ctx ends. A refusal ends it at once, other errors after a few in a row
// (a blip of the network does not stop following).
func (c *cli) poll(ctx context.Context, check func(context.Context) (bool, error)) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	failures := 0
	for {
		done, err := check(ctx)
		var ee *exitError
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil && (errors.As(err, &ee) || failures == maxPollFailures):
			return err
		case err != nil:
			failures++
		case done:
			return nil
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return c.followError(parent, ctx, ctx.Err())
		case <-time.After(argoPollInterval):
		}
	}
}

// argoEnvs builds the Environment graph from the promotion paths of the
// bindings the user may see (one namespace).
func (c *cli) argoEnvs(ctx context.Context) error {
	objs, err := c.argoObjects(ctx)
	if err != nil {
		return err
	}
	envs := map[string]as.Environment{}
	var bindings []as.SnapshotEnvironmentBinding
	namespaces := map[string]bool{}
	seenBinding := map[string]bool{}
	for _, o := range objs {
		if o.d.Kind != ownership.KindBinding {
			continue
		}
		namespaces[o.d.Namespace] = true
		for _, e := range o.d.Path {
			envs[e.Name] = as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: o.d.Namespace, Name: e.Name},
				Spec: as.EnvironmentSpec{ParentEnvironment: e.Parent, DeploymentStrategy: as.DeploymentStrategyType(e.Strategy)}}
			if e.Binding != "" && !seenBinding[e.Binding] {
				seenBinding[e.Binding] = true
				bindings = append(bindings, as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: o.d.Namespace, Name: e.Binding},
					Spec: as.SnapshotEnvironmentBindingSpec{Application: o.d.Application, Environment: e.Name, Snapshot: e.Snapshot}})
			}
		}
	}
	if len(namespaces) > 1 {
		return usageError("Argo CD shows you Environments of several namespaces: pick one with -n")
	}
	var list []as.Environment
	for _, e := range envs {
		list = append(list, e)
	}
	return c.printGraph(environmentGraph(list, bindings))
}
