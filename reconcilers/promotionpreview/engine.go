package promotionpreview

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v2/util/argo"
	argodiff "github.com/argoproj/argo-cd/v2/util/argo/diff"
	"github.com/argoproj/argo-cd/v2/util/argo/normalizers"
	"github.com/argoproj/argo-cd/v2/util/db"
	"github.com/argoproj/argo-cd/v2/util/settings"
	"github.com/argoproj/gitops-engine/pkg/sync"
	"github.com/argoproj/gitops-engine/pkg/utils/kube"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/targetcluster"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// ssaManager is the field manager of Argo CD's server-side applies
// (common.ArgoCDSSAManager): the dry-run applies as Argo CD would.
const ssaManager = "argocd-controller"

// Previews of Environments on Argo CD's own cluster act as Argo CD's
// application controller (--preview-local-identity): the sidecar may
// impersonate exactly that ServiceAccount, nothing else.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate,resourceNames=argocd-application-controller,namespace=argocd
// The tenant's role, whose rules bound what a preview reads on Argo CD's own cluster.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get,resourceNames=edit

// remoteTimeout bounds each request to the target cluster.
const remoteTimeout = 20 * time.Second

// Engine computes previews. It reads the tenant's objects through Client (the
// cache) and APIReader, Argo CD's settings and repositories through Argo
// CD's own settings manager and database (so a repository gets exactly the
// credentials Argo CD gives the tenant's project), renders through the
// repo-server with Argo CD's gRPC client, and reads and dry-runs on the
// target cluster with the Environment's own credentials (its Argo CD cluster
// Secret), or on Argo CD's own cluster as Argo CD's application controller
// (Local); only objects the tenant's AppProject permits there, as Argo CD's
// sync checks them. It writes nothing.
type Engine struct {
	Client        client.Client
	APIReader     client.Reader
	ArgoNamespace string
	Repo          apiclient.Clientset
	Settings      *settings.SettingsManager
	DB            db.ArgoDB
	// DefaultTracking is the tracking method of the Argo CD we serve when
	// argocd-cm sets none ("annotation" from Argo CD 3, "label" before).
	DefaultTracking string
	// AllowFileRepositories accepts file:// repository URLs (demos and tests).
	AllowFileRepositories bool
	// Local is the sidecar's own configuration impersonating the identity
	// Argo CD's application controller applies with: previews of
	// Environments deploying to Argo CD's own cluster read and dry-run with
	// it. nil: they are refused.
	Local *rest.Config
	// Access renders a repository not yet in the tenant's project only when
	// the tenant can read it (the repo-server would render another tenant's
	// checkout without asking for credentials). nil: none is rendered.
	Access *tenantproject.Access
	// TenantRole is the ClusterRole whose rules stand for the tenant in its
	// namespace on Argo CD's own cluster (DefaultTenantRole when empty).
	TenantRole string
	// Egress limits the addresses of target clusters dialled, as the
	// ManagedEnvironment reconciler's (egress.Policy.ForAPIServers).
	Egress *egress.Policy
}

// Preview is one preview's result, for the status.
type Preview struct {
	Components []ComponentResult
}

// Run computes what promoting pp's Snapshot to its Environment would change.
// Bad input is a *kernel.Refusal; a component's render failure or dry-run
// errors are part of the result.
func (e *Engine) Run(ctx context.Context, pp *as.PromotionPreview) (*Preview, error) {
	seb, params, err := e.resolve(ctx, pp)
	if err != nil {
		return nil, err
	}
	proj, err := e.project(ctx, pp.Namespace, params)
	if err != nil {
		return nil, err
	}
	cfg, local, err := e.targetConfig(ctx, pp, params, proj.Name)
	if err != nil {
		return nil, err
	}
	// Every component deploys to the Environment's one namespace.
	sc := scope{Project: proj, Server: params[0].DestinationServer, Namespace: params[0].DestinationNamespace, Local: local,
		Clusters: func(project string) ([]*argov1alpha1.Cluster, error) { return e.DB.GetProjectClusters(ctx, project) }}
	if local {
		// Read as the application controller: only what the tenant may read.
		sc.TenantRole = cmp.Or(e.TenantRole, DefaultTenantRole)
		role := &rbacv1.ClusterRole{}
		if err := e.APIReader.Get(ctx, types.NamespacedName{Name: sc.TenantRole}, role); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading ClusterRole %s: %w", sc.TenantRole, err)
		}
		sc.TenantRules = role.Rules // none when missing: nothing is read
	}
	remote, disc, err := remoteClients(cfg)
	if err != nil {
		return nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "the cluster of Environment %q: %v", pp.Spec.TargetEnvironment, err)
	}
	s, diffConfig, err := e.settings(disc)
	if err != nil {
		return nil, err
	}
	conn, repo, err := e.Repo.NewRepoServerClient()
	if err != nil {
		return nil, fmt.Errorf("connecting to the repo-server: %w", err)
	}
	defer func() { _ = conn.Close() }()
	inv, err := e.inventory(ctx, remote, disc, sc)
	if err != nil {
		return nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "reading namespace %s of Environment %q: %v", params[0].DestinationNamespace, pp.Spec.TargetEnvironment, err)
	}
	out := &Preview{}
	for _, p := range params {
		res, err := e.component(ctx, repo, remote, inv, seb, p, sc, s, diffConfig)
		if err != nil {
			return nil, err
		}
		out.Components = append(out.Components, res)
	}
	return out, nil
}

// resolve reads the preview's inputs, all in its own namespace, as the
// binding a PromotionRun would point at the Snapshot: the Environment's
// binding of the Application (the oldest, as the PromotionRun picks it) or
// the one it would create.
func (e *Engine) resolve(ctx context.Context, pp *as.PromotionPreview) (*as.SnapshotEnvironmentBinding, []argocd.GeneratorParams, error) {
	snap := &as.Snapshot{}
	if err := e.get(ctx, pp.Namespace, pp.Spec.Snapshot, snap, "Snapshot"); err != nil {
		return nil, nil, err
	}
	if snap.Spec.Application != pp.Spec.Application {
		return nil, nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "Snapshot %q is of Application %q, not %q", snap.Name, snap.Spec.Application, pp.Spec.Application)
	}
	if err := e.get(ctx, pp.Namespace, pp.Spec.Application, &as.Application{}, "Application"); err != nil {
		return nil, nil, err
	}
	if err := e.get(ctx, pp.Namespace, pp.Spec.TargetEnvironment, &as.Environment{}, "Environment"); err != nil {
		return nil, nil, err
	}
	var list as.SnapshotEnvironmentBindingList
	if err := e.Client.List(ctx, &list, client.InNamespace(pp.Namespace)); err != nil {
		return nil, nil, err
	}
	seb := binding.Of(list.Items, pp.Spec.Application, pp.Spec.TargetEnvironment)
	if seb == nil {
		// The one the PromotionRun would create: the preview names its Applications.
		seb = &as.SnapshotEnvironmentBinding{}
		seb.Namespace, seb.Name = pp.Namespace, binding.GeneratedName(pp.Spec.Application, pp.Spec.TargetEnvironment)
		seb.Spec = as.SnapshotEnvironmentBindingSpec{Application: pp.Spec.Application, Environment: pp.Spec.TargetEnvironment}
	}
	seb = seb.DeepCopy()
	seb.Spec.Snapshot = pp.Spec.Snapshot
	params, err := binding.Generate(ctx, e.Client, e.APIReader, e.ArgoNamespace, seb, e.AllowFileRepositories)
	if r := kernel.AsRefusal(err); r != nil {
		return nil, nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "%s", r.Message)
	}
	return seb, params, err
}

func (e *Engine) get(ctx context.Context, ns, name string, obj client.Object, kind string) error {
	err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return kernel.Refuse(as.PromotionPreviewReasonInvalid, "%s %q not found in namespace %q", kind, name, ns)
	}
	return err
}

// project is the tenant's AppProject as the binding reconciler would make it
// for these repositories (tenantproject adds every repository that passed
// binding.Check, and each write recomputes its destinations and resource
// lists): its source repositories and name go to the repo-server, Argo CD's
// database gives a repository only this project's credentials, and every
// object is checked against it before it is read or dry-run (permission).
func (e *Engine) project(ctx context.Context, ns string, params []argocd.GeneratorParams) (*argov1alpha1.AppProject, error) {
	tenant := &corev1.Namespace{}
	if err := e.Client.Get(ctx, types.NamespacedName{Name: ns}, tenant); err != nil {
		return nil, err
	}
	var repos []string
	current := &argov1alpha1.AppProject{}
	err := e.Client.Get(ctx, types.NamespacedName{Namespace: e.ArgoNamespace, Name: argocd.ProjectName(string(tenant.UID))}, current)
	switch {
	case err == nil:
		repos = append(repos, current.Spec.SourceRepos...)
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	for _, p := range params {
		if slices.Contains(repos, p.RepoURL) {
			continue
		}
		// What Projects.Ensure admits for the binding, checked the same way.
		if e.Access == nil {
			return nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "repository %s is not in the tenant's AppProject yet", p.RepoURL)
		}
		var unreadable *tenantproject.NotReadableError
		if err := e.Access.Check(ctx, ns, p.RepoURL); errors.As(err, &unreadable) {
			return nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "%s", err.Error())
		} else if err != nil {
			return nil, err
		}
		repos = append(repos, p.RepoURL)
	}
	return (&tenantproject.Projects{Client: e.Client, ArgoNamespace: e.ArgoNamespace}).Build(ctx, tenant, repos)
}

// targetConfig connects to the Environment's cluster with its own
// credentials: those of the Argo CD cluster Secret made for the tenant's
// ManagedEnvironment of that destination (never a Secret of another tenant,
// never the sidecar's own credentials). Argo CD's own cluster (local) has
// none: there the preview acts as the identity Argo CD's application
// controller applies with (Local), each object checked against the
// project first (permission).
func (e *Engine) targetConfig(ctx context.Context, pp *as.PromotionPreview, params []argocd.GeneratorParams, project string) (_ *rest.Config, local bool, _ error) {
	if len(params) == 0 {
		return nil, false, kernel.Refuse(as.PromotionPreviewReasonInvalid, "Snapshot %q has no components", pp.Spec.Snapshot)
	}
	server := params[0].DestinationServer
	if server == argocd.LocalServer {
		if e.Local == nil {
			return nil, false, kernel.Refuse(as.PromotionPreviewReasonInvalid,
				"Environment %q deploys to Argo CD's own cluster, and previews there are off: the sidecar's --preview-local-identity (the identity Argo CD's application controller applies with) enables them", pp.Spec.TargetEnvironment)
		}
		cfg := rest.CopyConfig(e.Local)
		cfg.Timeout, cfg.UserAgent, cfg.QPS, cfg.Burst = remoteTimeout, "gitops-service-preview", 20, 40
		return cfg, true, nil
	}
	cfg, err := targetcluster.Config(ctx, e.Client, e.ArgoNamespace, targetcluster.Target{Namespace: pp.Namespace, Server: server, Project: project},
		e.Egress, remoteTimeout, "gitops-service-preview")
	if err != nil || cfg != nil {
		return cfg, false, err
	}
	return nil, false, kernel.Refuse(as.PromotionPreviewReasonInvalid, "the cluster credentials of Environment %q are not ready (see its GitOpsDeploymentManagedEnvironment)", pp.Spec.TargetEnvironment)
}

// remoteClients are a client and a discovery client of the target cluster
// that follow no redirect (the token would go along: see
// managedenvironment.NewRemoteClient).
func remoteClients(cfg *rest.Config) (client.Client, discovery.DiscoveryInterface, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c, err := client.New(cfg, client.Options{Scheme: runtime.NewScheme(), HTTPClient: hc})
	if err != nil {
		return nil, nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, err
	}
	return c, disc, nil
}

// settings reads what the application controller reads from argocd-cm for
// each comparison, and the target cluster's version.
func (e *Engine) settings(disc discovery.DiscoveryInterface) (Settings, argodiff.DiffConfig, error) {
	var s Settings
	var err error
	if s.AppLabelKey, err = e.Settings.GetAppInstanceLabelKey(); err != nil {
		return s, nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.TrackingMethod, err = e.Settings.GetTrackingMethod(); err != nil {
		return s, nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.TrackingMethod == "" {
		s.TrackingMethod = e.DefaultTracking
	}
	if s.InstallationID, err = e.Settings.GetInstallationID(); err != nil {
		return s, nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.HelmOptions, err = e.Settings.GetHelmSettings(); err != nil {
		return s, nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.EnabledSourceTypes, err = e.Settings.GetEnabledSourceTypes(); err != nil {
		return s, nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	overrides, err := e.Settings.GetResourceOverrides()
	if err != nil {
		return s, nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	compare, err := e.Settings.GetResourceCompareOptions()
	if err != nil {
		return s, nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if v, err := disc.ServerVersion(); err == nil {
		s.KubeVersion = v.String()
	}
	if groups, err := disc.ServerGroups(); err == nil {
		for _, g := range groups.Groups {
			for _, v := range g.Versions {
				s.APIVersions = append(s.APIVersions, v.GroupVersion)
			}
		}
		sort.Strings(s.APIVersions)
	}
	// Our Applications set no ignoreDifferences: only argocd-cm's
	// resource.customizations apply, as in the controller.
	dc, err := argodiff.NewDiffConfigBuilder().
		WithDiffSettings([]argov1alpha1.ResourceIgnoreDifferences{}, overrides, compare.IgnoreAggregatedRoles, normalizers.IgnoreNormalizerOpts{}).
		WithTracking(s.AppLabelKey, s.TrackingMethod).
		WithNoCache().
		Build()
	return s, dc, err
}

// component renders, compares and dry-runs one component.
func (e *Engine) component(ctx context.Context, repo apiclient.RepoServerServiceClient, remote client.Client, inventory []*unstructured.Unstructured, seb *as.SnapshotEnvironmentBinding,
	p argocd.GeneratorParams, sc scope, s Settings, dc argodiff.DiffConfig) (ComponentResult, error) {
	res := ComponentResult{Name: p.Component, ArgoApplication: p.Name}
	fail := func(format string, args ...any) (ComponentResult, error) {
		res.RenderError = fmt.Sprintf(format, args...)
		return res, nil
	}
	app, err := GeneratedApplication(e.ArgoNamespace, seb, p)
	if err != nil {
		return fail("%v", err)
	}
	targets, err := e.render(ctx, repo, app, sc.Project, s)
	if unavailable(err) {
		// The repo-server is down or busy: not the component's result.
		return res, fmt.Errorf("the repo-server: %w", err)
	}
	if err != nil {
		return fail("rendering: %v", err)
	}
	ns := app.Spec.Destination.Namespace
	// refused: the targets the project does not permit (Argo CD's words),
	// which are neither read nor dry-run.
	refused := map[kube.ResourceKey]string{}
	for _, t := range targets {
		// A kind the cluster does not serve counts as namespaced: its
		// dry-run fails on the kind, before any request for the object.
		namespaced, err := remote.IsObjectNamespaced(t)
		namespaced = namespaced || err != nil
		if t.GetNamespace() == "" && namespaced {
			t.SetNamespace(ns)
		}
		objNS := t.GetNamespace()
		if !namespaced {
			objNS = ""
		}
		msg, err := sc.permission(t.GroupVersionKind().GroupKind(), objNS)
		if err != nil {
			return res, err
		}
		if msg == "" && sc.Local {
			// A kind the cluster does not serve: its dry-run fails on the kind.
			if m, err := remote.RESTMapper().RESTMapping(t.GroupVersionKind().GroupKind(), t.GroupVersionKind().Version); err == nil {
				msg = sc.tenantReads(m.Resource.GroupResource())
			}
		}
		if msg != "" {
			refused[kube.GetResourceKey(t)] = msg
		}
	}
	lives := liveObjects(ctx, remote, inventory, targets, refused, app.Name, s)
	rec := sync.Reconcile(targets, lives, ns, namespacedBy{remote})
	for i, t := range rec.Target {
		if _, no := refused[key(t)]; no && t != nil {
			// Never compared with anything live: only the rendered object shows.
			rec.Live[i] = nil
		}
	}
	results, err := argodiff.StateDiffs(rec.Live, rec.Target, dc)
	if err != nil {
		return fail("comparing: %v", err)
	}
	for i := range rec.Target {
		target, live := rec.Target[i], rec.Live[i]
		d := results.Diffs[i]
		obj := target
		if obj == nil {
			obj = live
		}
		o := ObjectResult{Kind: KindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		switch {
		case target == nil:
			o.Change = Removed
		case live == nil:
			o.Change = Added
		case d.Modified:
			o.Change = Changed
		default:
			o.Change = Unchanged
		}
		if o.Change != Unchanged {
			predicted := d.PredictedLive
			if target == nil {
				predicted = nil
			}
			liveJSON := d.NormalizedLive
			if live == nil {
				liveJSON = nil
			}
			if o.Diff, err = UnifiedDiff(p.Component, o.Kind, o.Namespace, o.Name, liveJSON, predicted); err != nil {
				o.Diff = ""
			}
		}
		if msg, no := refused[key(target)]; no && target != nil {
			o.DryRunErr = msg
		} else if target != nil {
			o.DryRunErr = dryRun(ctx, remote, target)
		}
		res.Objects = append(res.Objects, o)
	}
	return res, nil
}

// unavailable says err is the repo-server's unavailability (a transient
// error), not its answer about the manifests.
func unavailable(err error) bool {
	switch grpcstatus.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Canceled:
		return true
	}
	return false
}

// render asks the repo-server for app's manifests as the application
// controller does, with the repository and credentials Argo CD's database
// gives the tenant's project for that URL.
func (e *Engine) render(ctx context.Context, repoClient apiclient.RepoServerServiceClient, app *argov1alpha1.Application, proj *argov1alpha1.AppProject, s Settings) ([]*unstructured.Unstructured, error) {
	src := app.Spec.GetSource()
	repo, err := e.DB.GetRepository(ctx, src.RepoURL, proj.Name)
	if err != nil {
		return nil, errors.New("the repository's credentials cannot be read")
	}
	ks, err := e.Settings.GetKustomizeSettings()
	if err != nil {
		return nil, err
	}
	if s.KustomizeOptions, err = ks.GetOptions(src); err != nil {
		return nil, err
	}
	resp, err := repoClient.GenerateManifest(ctx, ManifestRequest(app, repo, proj, s))
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, m := range resp.Manifests {
		u, err := argov1alpha1.UnmarshalToUnstructured(m)
		if err != nil {
			return nil, err
		}
		if u != nil {
			out = append(out, u)
		}
	}
	return out, nil
}

// inventory lists every object in namespace ns of the target cluster of a
// kind Argo CD watches (every listable namespaced kind but those argocd-cm's
// resource exclusions leave out, Events and Endpoints among them by
// default): the candidates for prune of every component. A kind the
// Environment's credentials may not list is skipped, as Argo CD's cluster
// cache skips it with resource.respectRBAC; so is, before any request, a kind
// the project does not permit there (Argo CD leaves such live objects out of
// the comparison), and all of them when the namespace is not permitted.
func (e *Engine) inventory(ctx context.Context, remote client.Client, disc discovery.DiscoveryInterface, sc scope) ([]*unstructured.Unstructured, error) {
	ns, server := sc.Namespace, sc.Server
	filter, err := e.Settings.GetResourcesFilter()
	if err != nil {
		return nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	lists, err := disc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || filter.IsExcludedResource(gv.Group, r.Kind, server) {
				continue
			}
			if msg, err := sc.permission(schema.GroupKind{Group: gv.Group, Kind: r.Kind}, ns); err != nil {
				return nil, err
			} else if msg != "" || sc.tenantReads(schema.GroupResource{Group: gv.Group, Resource: r.Name}) != "" {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gv.WithKind(r.Kind + "List"))
			lctx, cancel := context.WithTimeout(ctx, remoteTimeout)
			err := remote.List(lctx, list, client.InNamespace(ns))
			cancel()
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for i := range list.Items {
				u := &list.Items[i]
				u.SetGroupVersionKind(gv.WithKind(r.Kind))
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// liveObjects are the objects Argo CD would compare the targets with: those
// of the inventory the app's tracking (label or annotation, as configured)
// names as the app's (top-level ones: Argo CD prunes no object another
// owns), and those of the targets' keys, read one by one when the inventory
// does not have them (cluster-scoped, or of a kind not listed). A refused
// target is never read.
func liveObjects(ctx context.Context, remote client.Client, inventory, targets []*unstructured.Unstructured, refused map[kube.ResourceKey]string, appName string, s Settings) map[kube.ResourceKey]*unstructured.Unstructured {
	tracking := argo.NewResourceTracking()
	out := map[kube.ResourceKey]*unstructured.Unstructured{}
	byKey := map[kube.ResourceKey]*unstructured.Unstructured{}
	for _, u := range inventory {
		key := kube.GetResourceKey(u)
		byKey[key] = u
		if len(u.GetOwnerReferences()) == 0 && tracking.GetAppName(u, s.AppLabelKey, argov1alpha1.TrackingMethod(s.TrackingMethod), s.InstallationID) == appName {
			out[key] = u.DeepCopy()
		}
	}
	for _, t := range targets {
		key := kube.GetResourceKey(t)
		if _, no := refused[key]; no {
			delete(out, key)
			continue
		}
		if _, ok := out[key]; ok {
			continue
		}
		if u, ok := byKey[key]; ok {
			out[key] = u.DeepCopy()
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(t.GroupVersionKind())
		gctx, cancel := context.WithTimeout(ctx, remoteTimeout)
		err := remote.Get(gctx, client.ObjectKey{Namespace: t.GetNamespace(), Name: t.GetName()}, u)
		cancel()
		if err == nil {
			out[key] = u
		}
	}
	for _, u := range out {
		// gitops-engine's diff compares without server-side bookkeeping.
		u.SetManagedFields(nil)
	}
	return out
}

// key is obj's key, the zero key for nil.
func key(obj *unstructured.Unstructured) kube.ResourceKey {
	if obj == nil {
		return kube.ResourceKey{}
	}
	return kube.GetResourceKey(obj)
}

// namespacedBy answers gitops-engine's question from the target cluster's
// discovery.
type namespacedBy struct{ c client.Client }

func (n namespacedBy) IsNamespaced(gk schema.GroupKind) (bool, error) {
	m, err := n.c.RESTMapper().RESTMapping(gk)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == "namespace", nil
}

// dryRun applies target on the target cluster server-side with dryRun=All, as
// Argo CD's field manager: admission, quotas, PodSecurity and RBAC answer as
// for the real sync, nothing is stored. It returns the refusal, or "".
func dryRun(ctx context.Context, remote client.Client, target *unstructured.Unstructured) string {
	obj := target.DeepCopy()
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	err := remote.Patch(ctx, obj, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner(ssaManager))
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	// No such kind on the cluster, or no answer: the sync would fail the same way.
	return err.Error()
}
