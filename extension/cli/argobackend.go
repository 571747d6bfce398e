package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	panel "github.com/gitops-service/gitops-service/ui-proxy/api"
)

// With an Argo CD login every verb goes through argocd-server: it lists the
// Applications the user may get, and asks our proxy extension about each,
// so the user sees and does exactly what Argo CD (and the panel) allows. The
// extension's answers (ui-proxy/api) are turned into the same API objects
// as with a kubeconfig, with the fields the views have.

// argoPollInterval: the extension answers requests, it has no watch; runs
// are followed by asking again at this pace.
const argoPollInterval = 2 * time.Second

// maxPollFailures is how many failed requests in a row end following.
const maxPollFailures = 5

// Why and what next when Argo CD shows the user nothing of a namespace.
const (
	argoNotShown = "Argo CD shows you no Application of the GitOps Service there"
	argoNext     = "ask your platform admin to name you in the tenant's Argo CD mapping, or pick your namespace with -n"
)

// argoBackend is the way in with an Argo CD login.
type argoBackend struct {
	a *argoClient
	// namespace is -n's; "" for every namespace Argo CD shows the user.
	namespace string
	warn      io.Writer
	// via is the Application through which each object this backend
	// found or made is acted on and followed (key: kindKey).
	via map[string]*panelObject
}

func newArgoBackend(a *argoClient, namespace string, warn io.Writer) *argoBackend {
	return &argoBackend{a: a, namespace: namespace, warn: warn, via: map[string]*panelObject{}}
}

// panelObject is one GitOps Service object and an Application of it.
type panelObject struct {
	app *argov1alpha1.Application
	d   *panel.Deployment
}

// shown is Argo CD's "not yours": it shows the user no Application of the
// GitOps Service in namespace ns (of apps in all; "" is every namespace, where
// none is an empty list).
func shown(ns string, apps int) error {
	if apps == 0 && ns != "" {
		return refusedIn(ns, argoNotShown, argoNext)
	}
	return nil
}

func kindKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// through is the Application obj (of kind, found or made by this backend)
// is acted on through.
func (b *argoBackend) through(kind string, obj client.Object) (*panelObject, error) {
	if via := b.via[kindKey(kind, obj.GetNamespace(), obj.GetName())]; via != nil {
		return via, nil
	}
	return nil, fmt.Errorf("%s %s was not found through Argo CD", kind, obj.GetName())
}

func (b *argoBackend) remember(kind string, obj client.Object, via *panelObject) {
	b.via[kindKey(kind, obj.GetNamespace(), obj.GetName())] = via
}

// panelObjects are the GitOps Service objects behind the Applications the
// user may see (in the namespace, or all), each once. Argo CD showing no
// Application of a namespace is its "not yours".
func (b *argoBackend) panelObjects(ctx context.Context) ([]panelObject, error) {
	apps, err := b.a.apps(ctx, b.namespace)
	if err != nil {
		return nil, err
	}
	if err := shown(b.namespace, len(apps)); err != nil {
		return nil, err
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	seen := map[string]bool{}
	var out []panelObject
	for i := range apps {
		app := &apps[i]
		kind := app.Labels[ownership.LabelOwnerKind]
		key, ok := ownership.Owner(app, kind)
		if !ok || seen[kind+"/"+key.String()] {
			continue
		}
		d, _, err := b.a.deployment(ctx, app)
		if err != nil {
			if ee, ok := err.(*exitError); ok && ee.code == exitRefused {
				return nil, err
			}
			fmt.Fprintf(b.warn, "warning: Application %s: %v\n", app.Name, err)
			continue
		}
		seen[kind+"/"+key.String()] = true
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

// deploymentFromPanel is the GitOpsDeployment the view shows, with its UID
// and synced revision from its Application.
func deploymentFromPanel(app *argov1alpha1.Application, d *panel.Deployment) *v1.GitOpsDeployment {
	return d.GitOpsDeployment(types.UID(app.Labels[ownership.LabelOwnerUID]), app.Status.Sync.Revision)
}

// object is the API object a panel object shows.
func (b *argoBackend) object(o *panelObject) client.Object {
	var obj client.Object
	if o.d.Kind == ownership.KindBinding {
		obj = o.d.Binding()
	} else {
		obj = deploymentFromPanel(o.app, o.d)
	}
	b.remember(o.d.Kind, obj, o)
	return obj
}

func (b *argoBackend) objects(ctx context.Context, selector string) ([]v1.GitOpsDeployment, []as.SnapshotEnvironmentBinding, error) {
	if selector != "" {
		return nil, nil, usageError("-l selects labels of the objects in the cluster: it needs a kubeconfig (through Argo CD only the Applications are listed)")
	}
	objs, err := b.panelObjects(ctx)
	if err != nil {
		return nil, nil, err
	}
	var gds []v1.GitOpsDeployment
	var sebs []as.SnapshotEnvironmentBinding
	for i := range objs {
		switch obj := b.object(&objs[i]).(type) {
		case *v1.GitOpsDeployment:
			gds = append(gds, *obj)
		case *as.SnapshotEnvironmentBinding:
			sebs = append(sebs, *obj)
		}
	}
	return gds, sebs, nil
}

// find: a GitOpsDeployment before a binding of that name, as with a kubeconfig.
func (b *argoBackend) find(ctx context.Context, name string, deploymentOnly bool) (client.Object, error) {
	objs, err := b.panelObjects(ctx)
	if err != nil {
		return nil, err
	}
	var found []panelObject
	namespaces := map[string]bool{}
	for _, o := range objs {
		if o.d.Name == name && (!deploymentOnly || o.d.Kind == ownership.KindGitOpsDeployment) {
			found = append(found, o)
			namespaces[o.d.Namespace] = true
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		return found[i].d.Kind == ownership.KindGitOpsDeployment && found[j].d.Kind != ownership.KindGitOpsDeployment
	})
	what := fmt.Sprintf("GitOpsDeployment or SnapshotEnvironmentBinding %q", name)
	if deploymentOnly {
		what = fmt.Sprintf("GitOpsDeployment %q", name)
	}
	switch {
	case len(found) == 0:
		return nil, notFound(what, b.namespace)
	case len(namespaces) > 1:
		return nil, usageError("%q is in namespaces %s: pick one with -n", name, strings.Join(sortedKeys(namespaces), ", "))
	}
	return b.object(&found[0]), nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (b *argoBackend) sync(ctx context.Context, gd *v1.GitOpsDeployment, revision string) (*v1.GitOpsDeploymentSyncRun, error) {
	via, err := b.through(ownership.KindGitOpsDeployment, gd)
	if err != nil {
		return nil, err
	}
	act, err := b.a.act(ctx, via.app, panel.PathSync, panel.SyncRequest{Revision: revision})
	if err != nil {
		return nil, err
	}
	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: act.Namespace, Name: act.Name},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: gd.Name, RevisionID: revision}}
	b.remember("SyncRun", run, via)
	return run, nil
}

// bindingRunning is the binding Argo CD shows the user that runs snapshot
// (the first by Environment name): through Argo CD a Snapshot is promoted,
// or previewed, from a binding that runs it, as the panel does.
func (b *argoBackend) bindingRunning(ctx context.Context, snapshot string) (*panelObject, error) {
	objs, err := b.panelObjects(ctx)
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

func (b *argoBackend) promote(ctx context.Context, snapshot, to, autoFrom string) (*as.PromotionRun, error) {
	if autoFrom != "" {
		return nil, usageError("--auto-from needs a kubeconfig: through Argo CD the GitOps Service promotes as its panel does, a Snapshot a binding runs --to one Environment")
	}
	from, err := b.bindingRunning(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	act, err := b.a.act(ctx, from.app, panel.PathPromote, panel.PromoteRequest{Environment: to})
	if err != nil {
		return nil, err
	}
	// As the extension made it (requested by the Argo CD user).
	run := as.NewPromotion(act.Namespace, from.d.Application, snapshot, to, "", nil)
	run.Name, run.GenerateName = act.Name, ""
	b.remember("PromotionRun", run, from)
	return run, nil
}

func (b *argoBackend) preview(ctx context.Context, snapshot, to string) (*as.PromotionPreview, error) {
	from, err := b.bindingRunning(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	// No Environment: a release preview of every Environment of the path.
	act, err := b.a.act(ctx, from.app, panel.PathPreview, panel.PromoteRequest{Environment: to, AllEnvironments: to == ""})
	if err != nil {
		return nil, err
	}
	pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: act.Namespace, Name: act.Name},
		Spec: as.PromotionPreviewSpec{Snapshot: snapshot, Application: from.d.Application, TargetEnvironment: to, AllEnvironments: to == ""}}
	b.remember("PromotionPreview", pp, from)
	return pp, nil
}

// binding is a binding Argo CD shows the user in the namespace (-n, or the
// only one), of application when given: panel actions are taken through one
// of its Applications, and the GitOps Service checks the tenant mapping of
// its namespace. env narrows it to the binding in that Environment.
func (b *argoBackend) binding(ctx context.Context, application, env string) (*panelObject, error) {
	objs, err := b.panelObjects(ctx)
	if err != nil {
		return nil, err
	}
	var found []panelObject
	namespaces := map[string]bool{}
	for _, o := range objs {
		if o.d.Kind == ownership.KindBinding && (application == "" || o.d.Application == application) && (env == "" || o.d.Environment == env) {
			found = append(found, o)
			namespaces[o.d.Namespace] = true
		}
	}
	switch {
	case len(found) == 0 && env != "":
		return nil, noBinding(application, env)
	case len(found) == 0:
		return nil, refusedIn(b.namespace, "Argo CD shows you no binding there", "through Argo CD the GitOps Service acts in a namespace where a binding you may see deploys")
	case len(namespaces) > 1:
		return nil, usageError("Argo CD shows you bindings in namespaces %s: pick one with -n", strings.Join(sortedKeys(namespaces), ", "))
	}
	return &found[0], nil
}

func (b *argoBackend) rollback(ctx context.Context, application, env string) (*as.PromotionRun, error) {
	seb, err := b.binding(ctx, application, env)
	if err != nil {
		return nil, err
	}
	act, err := b.a.act(ctx, seb.app, panel.PathRollback, nil)
	if err != nil {
		return nil, err
	}
	run := as.NewRollback(act.Namespace, application, env, seb.d.Snapshot, nil)
	run.Name, run.GenerateName = act.Name, ""
	b.remember("PromotionRun", run, seb)
	return run, nil
}

// promotionRuns are those the panel shows with the binding (the newest few).
func (b *argoBackend) promotionRuns(ctx context.Context, seb *as.SnapshotEnvironmentBinding) ([]as.PromotionRun, error) {
	objs, err := b.panelObjects(ctx)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.d.Kind != ownership.KindBinding || o.d.Namespace != seb.Namespace || o.d.Name != seb.Name {
			continue
		}
		var out []as.PromotionRun
		for _, r := range o.d.PromotionRuns {
			out = append(out, as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: seb.Namespace, Name: r.Name},
				Spec: as.PromotionRunSpec{Application: seb.Spec.Application, Snapshot: r.Snapshot}, Status: r.Status()})
		}
		return out, nil
	}
	return nil, nil
}

func (b *argoBackend) histories(ctx context.Context, env, application string) ([]as.PromotionHistory, error) {
	seb, err := b.binding(ctx, application, "")
	if err != nil {
		return nil, err
	}
	q := url.Values{"environment": {env}}
	if application != "" {
		q.Set("application", application)
	}
	hs := &panel.Histories{}
	if _, err := b.a.do(ctx, http.MethodGet, b.a.extension(panel.PathHistory), q, appHeaders(seb.app), nil, hs); err != nil {
		return nil, err
	}
	var out []as.PromotionHistory
	for _, v := range hs.Items {
		h := v.Object(hs.Namespace)
		b.remember("PromotionHistory", &h, seb)
		out = append(out, h)
	}
	return out, nil
}

func (b *argoBackend) release(ctx context.Context, h *as.PromotionHistory) (*as.PromotionHistory, error) {
	via, err := b.through("PromotionHistory", h)
	if err != nil {
		return nil, err
	}
	if _, err := b.a.act(ctx, via.app, panel.PathRelease, panel.ReleaseRequest{Environment: h.Spec.Environment}); err != nil {
		return nil, err
	}
	hs, err := b.histories(ctx, h.Spec.Environment, h.Spec.Application)
	if err != nil {
		return nil, err
	}
	for i := range hs {
		if hs[i].Name == h.Name {
			return &hs[i], nil
		}
	}
	return nil, fmt.Errorf("the history of application %s in Environment %s is gone", h.Spec.Application, h.Spec.Environment)
}

// environments builds the Environments from the promotion paths of the
// bindings the user may see (one namespace).
func (b *argoBackend) environments(ctx context.Context, selector string) ([]as.Environment, []as.SnapshotEnvironmentBinding, error) {
	if selector != "" {
		return nil, nil, usageError("-l selects labels of the objects in the cluster: it needs a kubeconfig (through Argo CD only the Applications are listed)")
	}
	objs, err := b.panelObjects(ctx)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, usageError("Argo CD shows you Environments of several namespaces: pick one with -n")
	}
	var list []as.Environment
	for _, e := range envs {
		list = append(list, e)
	}
	return list, bindings, nil
}

func (b *argoBackend) approve(ctx context.Context, env, snapshot, application, comment string) (*as.PromotionApproval, *as.ApprovalGate, bool, error) {
	seb, err := b.binding(ctx, application, "")
	if err != nil {
		return nil, nil, false, err
	}
	act, err := b.a.act(ctx, seb.app, panel.PathApprove, panel.ApproveRequest{Environment: env, Snapshot: snapshot, Application: application, Comment: comment})
	if err != nil {
		return nil, nil, false, err
	}
	// The extension approves for argocd:<the user argocd-server authenticated>.
	return &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: act.Namespace, Name: act.Name},
		Spec: as.PromotionApprovalSpec{Snapshot: snapshot, Environment: env, Application: application, Comment: comment}}, nil, false, nil
}

func (b *argoBackend) freeze(ctx context.Context, env string, frozen bool, reason string) (*as.Environment, error) {
	seb, err := b.binding(ctx, "", "")
	if err != nil {
		return nil, err
	}
	path := panel.PathUnfreeze
	if frozen {
		path = panel.PathFreeze
	}
	act, err := b.a.act(ctx, seb.app, path, panel.FreezeRequest{Environment: env, Reason: reason})
	if err != nil {
		return nil, err
	}
	// The freeze as asked (the extension names the Argo CD user in By).
	return &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: act.Namespace, Name: act.Name},
		Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{Freeze: freezeSwitch(frozen, "", reason, time.Now())}}}, nil
}

// follow asks the extension for obj's view every argoPollInterval until
// done says so or ctx ends. A refusal ends it at once, other errors after a
// few in a row (a blip of the network does not stop following).
func (b *argoBackend) follow(ctx context.Context, obj client.Object, done func() bool) error {
	var refresh func(context.Context, *panelObject) error
	var kind string
	switch o := obj.(type) {
	case *v1.GitOpsDeploymentSyncRun:
		kind = "SyncRun"
		refresh = func(ctx context.Context, via *panelObject) error {
			d, _, err := b.a.deployment(ctx, via.app)
			for _, r := range dOrEmpty(d).SyncRuns {
				if r.Name == o.Name {
					o.Status = r.Status()
				}
			}
			return err
		}
	case *as.PromotionRun:
		kind = "PromotionRun"
		refresh = func(ctx context.Context, via *panelObject) error {
			d, _, err := b.a.deployment(ctx, via.app)
			for _, r := range dOrEmpty(d).PromotionRuns {
				if r.Name == o.Name {
					o.Status = r.Status()
				}
			}
			return err
		}
	case *as.PromotionPreview:
		kind = "PromotionPreview"
		refresh = func(ctx context.Context, via *panelObject) error {
			v := &panel.Preview{}
			_, err := b.a.do(ctx, http.MethodGet, b.a.extension(panel.PathPreview), url.Values{"name": {o.Name}}, appHeaders(via.app), nil, v)
			if err == nil {
				o.Status = v.Status()
			}
			return err
		}
	}
	via, err := b.through(kind, obj)
	if err != nil {
		return err
	}
	failures := 0
	for {
		err := refresh(ctx, via)
		var ee *exitError
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil && (errors.As(err, &ee) || failures == maxPollFailures):
			return err
		case err != nil:
			failures++
		case done():
			return nil
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(argoPollInterval):
		}
	}
}

func dOrEmpty(d *panel.Deployment) *panel.Deployment {
	if d == nil {
		return &panel.Deployment{}
	}
	return d
}

// serviceVersion is the version header of the extension's answers.
func (b *argoBackend) serviceVersion(ctx context.Context) (*buildVersion, error) {
	apps, err := b.a.apps(ctx, b.namespace)
	if err != nil {
		return nil, err
	}
	for i := range apps {
		if _, ver, err := b.a.deployment(ctx, &apps[i]); err == nil && ver != "" {
			return &buildVersion{Version: ver}, nil
		}
	}
	return nil, fmt.Errorf("none of the Applications Argo CD shows you is answered by the GitOps Service")
}

// names: completion goes through the kubeconfig only.
func (b *argoBackend) names(context.Context, string) ([]string, error) { return nil, nil }
