package promotionpreview

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v2/util/argo"
	argodiff "github.com/argoproj/argo-cd/v2/util/argo/diff"
	"github.com/argoproj/argo-cd/v2/util/argo/normalizers"
	"github.com/argoproj/gitops-engine/pkg/sync"
	"github.com/argoproj/gitops-engine/pkg/utils/kube"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/render"
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

// Engine computes previews. It renders through the shared Renderer (Argo
// CD's repo-server, settings, database and the tenant's project), and reads
// and dry-runs on the target cluster with the Environment's own credentials
// (its Argo CD cluster Secret), or on Argo CD's own cluster as Argo CD's
// application controller (the Renderer's Local); only objects the tenant's
// AppProject permits there, as Argo CD's sync checks them. It writes
// nothing.
type Engine struct {
	*render.Renderer
	// TenantRole is the ClusterRole whose rules stand for the tenant in its
	// namespace on Argo CD's own cluster (DefaultTenantRole when empty).
	TenantRole string
}

// Preview is one preview's result, for the status.
type Preview struct {
	Components []ComponentResult
}

// Run computes what promoting application's Snapshot snapshot to
// Environment env of namespace ns would change. Bad input is a
// *kernel.Refusal; a component's render failure or dry-run errors are part
// of the result.
func (e *Engine) Run(ctx context.Context, ns, application, snapshot, env string) (*Preview, error) {
	t, err := e.Resolve(ctx, ns, application, snapshot, env)
	if err != nil {
		return nil, err
	}
	params := t.Params
	// Every component deploys to the Environment's one namespace.
	sc := scope{Project: t.Project, Server: params[0].DestinationServer, Namespace: params[0].DestinationNamespace, Local: t.Local,
		Clusters: func(project string) ([]*argov1alpha1.Cluster, error) { return e.DB.GetProjectClusters(ctx, project) }}
	if t.Local {
		// Read as the application controller: only what the tenant may read.
		sc.TenantRole = cmp.Or(e.TenantRole, DefaultTenantRole)
		role := &rbacv1.ClusterRole{}
		if err := e.APIReader.Get(ctx, types.NamespacedName{Name: sc.TenantRole}, role); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading ClusterRole %s: %w", sc.TenantRole, err)
		}
		sc.TenantRules = role.Rules // none when missing: nothing is read
	}
	remote, disc, err := render.RemoteClients(t.Config)
	if err != nil {
		return nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "the cluster of Environment %q: %v", env, err)
	}
	s, err := e.ReadSettings(disc)
	if err != nil {
		return nil, err
	}
	diffConfig, err := e.diffConfig(s)
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
		return nil, kernel.Refuse(as.PromotionPreviewReasonInvalid, "reading namespace %s of Environment %q: %v", params[0].DestinationNamespace, env, err)
	}
	out := &Preview{}
	for _, p := range params {
		res, err := e.component(ctx, repo, remote, inv, t.Binding, p, sc, s, diffConfig)
		if err != nil {
			return nil, err
		}
		out.Components = append(out.Components, res)
	}
	return out, nil
}

// diffConfig is the application controller's comparison with argocd-cm's
// resource customizations. Our Applications set no ignoreDifferences.
func (e *Engine) diffConfig(s render.Settings) (argodiff.DiffConfig, error) {
	overrides, err := e.Settings.GetResourceOverrides()
	if err != nil {
		return nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	compare, err := e.Settings.GetResourceCompareOptions()
	if err != nil {
		return nil, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	return argodiff.NewDiffConfigBuilder().
		WithDiffSettings([]argov1alpha1.ResourceIgnoreDifferences{}, overrides, compare.IgnoreAggregatedRoles, normalizers.IgnoreNormalizerOpts{}).
		WithTracking(s.AppLabelKey, s.TrackingMethod).
		WithNoCache().
		Build()
}

// component renders, compares and dry-runs one component.
func (e *Engine) component(ctx context.Context, repo apiclient.RepoServerServiceClient, remote client.Client, inventory []*unstructured.Unstructured, seb *as.SnapshotEnvironmentBinding,
	p argocd.GeneratorParams, sc scope, s render.Settings, dc argodiff.DiffConfig) (ComponentResult, error) {
	res := ComponentResult{Name: p.Component, ArgoApplication: p.Name}
	fail := func(format string, args ...any) (ComponentResult, error) {
		res.RenderError = fmt.Sprintf(format, args...)
		return res, nil
	}
	app, err := render.GeneratedApplication(e.ArgoNamespace, seb, p)
	if err != nil {
		return fail("%v", err)
	}
	// The hash is of the manifests as rendered, before anything below
	// sets a namespace on them.
	targets, hash, err := e.Render(ctx, repo, app, sc.Project, s)
	if render.Unavailable(err) {
		// The repo-server is down or busy: not the component's result.
		return res, fmt.Errorf("the repo-server: %w", err)
	}
	if err != nil {
		return fail("rendering: %v", err)
	}
	res.RenderHash = hash
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
			lctx, cancel := context.WithTimeout(ctx, render.RemoteTimeout)
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
func liveObjects(ctx context.Context, remote client.Client, inventory, targets []*unstructured.Unstructured, refused map[kube.ResourceKey]string, appName string, s render.Settings) map[kube.ResourceKey]*unstructured.Unstructured {
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
		gctx, cancel := context.WithTimeout(ctx, render.RemoteTimeout)
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
	ctx, cancel := context.WithTimeout(ctx, render.RemoteTimeout)
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
