package sidecar

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/deploymenttarget"
	"github.com/gitops-service/gitops-service/reconcilers/deploymenttargetclaim"
	"github.com/gitops-service/gitops-service/reconcilers/environment"
	"github.com/gitops-service/gitops-service/reconcilers/gitopsdeployment"
	"github.com/gitops-service/gitops-service/reconcilers/managedenvironment"
	"github.com/gitops-service/gitops-service/reconcilers/nontenant"
	"github.com/gitops-service/gitops-service/reconcilers/notifications"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/devsandbox"
	nsprovisioner "github.com/gitops-service/gitops-service/reconcilers/provisioner/namespace"
	"github.com/gitops-service/gitops-service/reconcilers/repositorycredentials"
	shardreconciler "github.com/gitops-service/gitops-service/reconcilers/shard"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
	"github.com/gitops-service/gitops-service/reconcilers/signatures"
	"github.com/gitops-service/gitops-service/reconcilers/snapshotenvironmentbinding"
	"github.com/gitops-service/gitops-service/reconcilers/subscription"
	"github.com/gitops-service/gitops-service/reconcilers/syncrun"
	"github.com/gitops-service/gitops-service/reconcilers/tenant"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// setup is the one shape of a reconciler package's registration.
type setup interface {
	SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error
}

// setupFunc is a setup that is a function.
type setupFunc func(ctx context.Context, mgr ctrl.Manager, concurrency int) error

func (f setupFunc) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	return f(ctx, mgr, concurrency)
}

// registration is one row of the sidecar's table of reconcilers: what it is
// (for errors), its setup with its concurrency, and the kinds it reads from
// the manager's cache (those its controllers watch, and those read without a
// watch), whose informers start with the cache (startInformers). A kind a
// controller watches that its row lacks is reported at start-up
// (lateInformers) and fails TestEveryWatchedKindStartsWithTheCache. The kinds
// are named here because controller-runtime keeps a controller's watches to
// itself until the controller starts, after the cache.
type registration struct {
	what        string
	setup       setup
	concurrency int
	kinds       []client.Object
}

// shared are the objects several reconcilers are built with.
type shared struct {
	shard    *sharding.Shard
	refused  nontenant.Namespaces
	access   *tenantproject.Access
	projects *tenantproject.Projects
	trees    argocd.ResourceTrees
}

// registrations is the table of every reconciler this sidecar runs with o.
func registrations(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, o Options, s shared) ([]registration, error) {
	rec := mgr.GetEventRecorderFor("gitops-service")
	argoApp, project, appSet := &argov1alpha1.Application{}, &argov1alpha1.AppProject{}, &argov1alpha1.ApplicationSet{}
	var regs []registration
	if s.shard != nil {
		regs = append(regs, registration{what: "the shard reconciler", kinds: []client.Object{&corev1.Namespace{}},
			setup: &shardreconciler.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Shard: s.shard,
				Recorder: rec, Never: s.refused,
			}})
	}
	sa, err := serviceAccount(ctx, cfg, o.ServiceAccount)
	if err != nil {
		return nil, err
	}
	verifier, err := signatureVerifier(o.SigstoreTrustedRoot)
	if err != nil {
		return nil, err
	}
	// Previews and promotions render the same way (a promotion checks it
	// renders what was previewed).
	renderer, err := newRenderer(ctx, mgr, cfg, o, s.access)
	if err != nil {
		return nil, err
	}
	regs = append(regs,
		registration{what: "the GitOpsDeployment reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&v1.GitOpsDeployment{}, argoApp, project, &v1.GitOpsDeploymentManagedEnvironment{}, &v1.GitOpsDeploymentRepositoryCredentials{}},
			setup: &gitopsdeployment.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Projects: s.projects, Recorder: rec, Trees: s.trees,
				// file:// repositories only for demos and tests.
				AllowFileRepositories: o.AllowFileRepositories,
			}},
		registration{what: "the GitOpsDeploymentManagedEnvironment reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&v1.GitOpsDeploymentManagedEnvironment{}, &corev1.Secret{}},
			setup: &managedenvironment.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Recorder: rec, Egress: &o.Egress,
			}},
		registration{what: "the GitOpsDeploymentRepositoryCredentials reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&v1.GitOpsDeploymentRepositoryCredentials{}, &corev1.Secret{}},
			setup: &repositorycredentials.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Recorder: rec,
				Verifier: repositorycredentials.GitVerifier{Egress: &o.Egress},
			}},
		registration{what: "the GitOpsDeploymentSyncRun reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&v1.GitOpsDeploymentSyncRun{}, &v1.GitOpsDeployment{}, argoApp},
			setup: &syncrun.Reconciler{Client: mgr.GetClient(), ArgoNamespace: o.ArgoNamespace, Recorder: rec}},
		registration{what: "the PromotionRun reconciler", concurrency: o.Concurrency,
			// The admission policies are watched where the API server has them.
			kinds: []client.Object{&as.PromotionRun{}, &as.SnapshotEnvironmentBinding{}, &as.Environment{}, &as.PromotionApproval{},
				&as.PromotionPreview{}, &as.DeploymentTargetClaim{}, &as.PromotionHistory{}, argoApp, &as.Snapshot{},
				&admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{},
				&as.PromotionPolicy{}, &corev1.Namespace{}},
			setup: &promotionrun.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Recorder: rec,
				Timeout: o.PromotionTimeout, ServiceAccount: sa, Signatures: verifier, Egress: &o.Egress,
				Renderer: renderer,
			}},
		registration{what: "the Environment reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&as.Environment{}, &v1.GitOpsDeploymentManagedEnvironment{}, &as.DeploymentTargetClaim{}, &as.DeploymentTarget{}},
			setup: &environment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec}},
		// Its own cache, of the refused namespaces only.
		registration{what: "the refusal of namespaces that are never tenants", concurrency: o.Concurrency,
			setup: setupFunc(func(_ context.Context, mgr ctrl.Manager, concurrency int) error {
				return nontenant.Setup(mgr, s.refused, concurrency)
			})},
	)
	regs = append(regs, deploymentTargets(mgr, cfg, o)...)
	regs = append(regs, policyRegistration(mgr))
	regs = append(regs,
		registration{what: "the tenant reconciler",
			kinds: []client.Object{project, appSet, &v1.GitOpsDeploymentManagedEnvironment{}, argoApp, &v1.GitOpsDeploymentRepositoryCredentials{}, &corev1.Namespace{}},
			setup: &tenant.Reconciler{Projects: s.projects}},
		registration{what: "the tenant RBAC policy reconciler", kinds: []client.Object{&corev1.Namespace{}},
			setup: &tenant.PolicyReconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Recorder: rec, Shard: s.shard,
				RBACConfigMap: o.ArgoSettings.Names.RBACCM,
			}},
		registration{what: "the SnapshotEnvironmentBinding reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&as.SnapshotEnvironmentBinding{}, appSet, argoApp, &as.Snapshot{}, &as.Environment{}, &as.Component{}, &as.Application{}},
			setup: &snapshotenvironmentbinding.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Projects: s.projects, Recorder: rec,
				AllowFileRepositories: o.AllowFileRepositories,
			}},
		registration{what: "the SnapshotSubscription reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&as.SnapshotSubscription{}, &as.Application{}, &as.Component{}},
			setup: &subscription.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Recorder: rec, Egress: &o.Egress,
			}},
	)
	// Promotion events through Argo CD's notifications engine, with the
	// platform's argocd-notifications-cm (nothing is sent without it).
	notify := &notifications.Platform{APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace}
	regs = append(regs,
		registration{what: "the notifications reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&as.PromotionRun{}, &as.Environment{}},
			setup: &notifications.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Platform: notify}},
		registration{what: "the notification subscriptions reconciler", concurrency: o.Concurrency,
			kinds: []client.Object{&as.Environment{}},
			setup: &notifications.SubscriptionReconciler{Client: mgr.GetClient(), Recorder: rec, Platform: notify}},
	)
	if preview := previews(mgr, o, renderer); preview != nil {
		regs = append(regs, *preview)
	}
	return regs, nil
}

// deploymentTargets are the binder and the reclaimer with the provisioners
// whose APIs this cluster serves: ours always, devsandbox when the
// SpaceRequest API is installed (the binder watches what they make).
func deploymentTargets(mgr ctrl.Manager, cfg *rest.Config, o Options) []registration {
	provs := []provisioner.Provisioner{&nsprovisioner.Provisioner{
		Client: mgr.GetClient(), Local: cfg, APIReader: mgr.GetAPIReader(), SidecarNamespace: o.ArgoNamespace,
	}}
	if devsandbox.Available(mgr.GetRESTMapper()) {
		provs = append(provs, &devsandbox.Provisioner{Client: mgr.GetClient()})
	}
	binderKinds := []client.Object{&as.DeploymentTargetClaim{}, &as.DeploymentTarget{}, &as.DeploymentTargetClass{}}
	for _, p := range provs {
		if w, ok := p.(provisioner.Watcher); ok {
			binderKinds = append(binderKinds, w.Watched())
		}
	}
	set := provisioner.NewSet(provs...)
	rec := mgr.GetEventRecorderFor("gitops-service")
	return []registration{
		{what: "the DeploymentTargetClaim binder", concurrency: cmp.Or(o.BinderConcurrency, o.Concurrency), kinds: binderKinds,
			setup: &deploymenttargetclaim.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec, Provisioners: set}},
		{what: "the DeploymentTarget reclaimer", concurrency: o.Concurrency,
			kinds: []client.Object{&as.DeploymentTarget{}, &as.DeploymentTargetClaim{}, &as.DeploymentTargetClass{}},
			setup: &deploymenttarget.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec, Provisioners: set, ReleaseTimeout: o.ReleaseTimeout}},
	}
}

// register sets every row of regs up with mgr.
func register(ctx context.Context, mgr ctrl.Manager, regs []registration) error {
	for _, r := range regs {
		if err := r.setup.SetupWithManager(ctx, mgr, r.concurrency); err != nil {
			return fmt.Errorf("setting up %s: %w", r.what, err)
		}
	}
	return nil
}

// startInformers starts, with the cache, the informer of every kind the rows
// read, not when a controller starts (its workers wait for them) or on a
// first read (which would stall that reconcile): so "caches synced" also means
// the controllers are working. Measured: without this, the first
// GitOpsDeployments after a start waited ~1.2 s in the queue. A kind the API
// server does not serve (the admission policies before Kubernetes 1.30) is
// watched by nobody and skipped.
func startInformers(ctx context.Context, c cache.Cache, regs []registration) error {
	for _, r := range regs {
		for _, obj := range r.kinds {
			_, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
			if meta.IsNoMatchError(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%T informer (%s): %w", obj, r.what, err)
			}
		}
	}
	return nil
}

// lateInformers is the manager's cache, telling which kinds' informers did
// not start with it: asked for (a controller's watch, a read) only once it
// had started. Each is a kind missing from its registration's row: it is
// logged once, and TestEveryWatchedKindStartsWithTheCache fails on it.
type lateInformers struct {
	cache.Cache
	scheme *runtime.Scheme

	mu      sync.Mutex
	started bool
	early   map[informerKey]bool
	late    []string
}

// informerKey is one informer of the cache: a kind, in one of the cache's
// forms (typed, metadata only, unstructured).
type informerKey struct {
	gvk  schema.GroupVersionKind
	form string
}

func (c *lateInformers) Start(ctx context.Context) error {
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	return c.Cache.Start(ctx)
}

func (c *lateInformers) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.saw(obj)
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *lateInformers) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.add(informerKey{gvk: gvk})
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (c *lateInformers) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	c.saw(obj)
	return c.Cache.IndexField(ctx, obj, field, extract)
}

func (c *lateInformers) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.saw(obj)
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *lateInformers) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.saw(list)
	return c.Cache.List(ctx, list, opts...)
}

// saw notes the informer obj (an object or a list) is read through.
func (c *lateInformers) saw(obj runtime.Object) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return // the cache itself refuses it
	}
	k := informerKey{gvk: gvk}
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		k.form = "metadata"
	case runtime.Unstructured:
		k.form = "unstructured"
	}
	if _, isList := obj.(client.ObjectList); isList {
		k.gvk.Kind = strings.TrimSuffix(k.gvk.Kind, "List")
	}
	c.add(k)
}

func (c *lateInformers) add(k informerKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.early[k] {
		return
	}
	if !c.started {
		if c.early == nil {
			c.early = map[informerKey]bool{}
		}
		c.early[k] = true
		return
	}
	c.early[k] = true // reported once
	what := strings.TrimSpace(k.gvk.String() + " " + k.form)
	c.late = append(c.late, what)
	ctrl.Log.WithName("sidecar").Info("an informer started after the cache: a registration's row lacks its kind (extension/sidecar/registry.go)", "kind", what)
}

// lateKinds are the kinds whose informers started after the cache.
func (c *lateInformers) lateKinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.late)
}

// signatureVerifier is the signature gate's verifier, with the platform's
// trusted root for keyless signatures when one is given (a file that
// cannot be read or parsed stops the start: a gate is never weaker than
// the platform configured it).
func signatureVerifier(trustedRoot string) (*signatures.Verifier, error) {
	v := &signatures.Verifier{}
	if trustedRoot == "" {
		return v, nil
	}
	data, err := os.ReadFile(trustedRoot)
	if err != nil {
		return nil, fmt.Errorf("--sigstore-trusted-root: %w", err)
	}
	if v.Root, v.RootHash, err = signatures.LoadRoot(data); err != nil {
		return nil, fmt.Errorf("--sigstore-trusted-root %s: %w", trustedRoot, err)
	}
	return v, nil
}
