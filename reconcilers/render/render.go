// Package render renders a Snapshot's components for an Environment as Argo
// CD's application controller would, through Argo CD's repo-server with its
// settings, database and the tenant's project: the one rendering of the
// PromotionPreview reconciler (what a promotion would change) and of the
// PromotionRun reconciler (whether it still renders what was previewed). It
// writes nothing.
package render

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v2/util/db"
	"github.com/argoproj/argo-cd/v2/util/settings"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// ReasonInvalid: an input of a rendering is missing or not the tenant's.
const ReasonInvalid = as.PromotionPreviewReasonInvalid

// RemoteTimeout bounds each request to the target cluster.
const RemoteTimeout = 20 * time.Second

// Renderer renders. It reads the tenant's objects through Client (the cache)
// and APIReader, Argo CD's settings and repositories through Argo CD's own
// settings manager and database (so a repository gets exactly the
// credentials Argo CD gives the tenant's project), renders through the
// repo-server with Argo CD's gRPC client, and asks the target cluster (with
// the Environment's own credentials, or on Argo CD's own cluster as Argo
// CD's application controller: Local) only for its version and API
// versions, as the controller passes them to the repo-server.
type Renderer struct {
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
	// Argo CD's application controller applies with, for Environments
	// deploying to Argo CD's own cluster. nil: those are refused.
	Local *rest.Config
	// Access renders a repository not yet in the tenant's project only when
	// the tenant can read it (the repo-server would render another tenant's
	// checkout without asking for credentials). nil: none is rendered.
	Access *tenantproject.Access
	// Egress limits the addresses of target clusters dialled, as the
	// ManagedEnvironment reconciler's (egress.Policy.ForAPIServers).
	Egress *egress.Policy
	// Cache keeps render hashes by what decides them; nil: none kept.
	Cache *Cache
}

// Target is what one Environment's rendering starts from, all in the
// tenant's namespace: the binding a PromotionRun would point at the
// Snapshot, its components' parameters, the tenant's project and the
// Environment's cluster.
type Target struct {
	Environment string
	Binding     *as.SnapshotEnvironmentBinding
	Params      []argocd.GeneratorParams
	Project     *argov1alpha1.AppProject
	// Config connects to the Environment's cluster; Local says it is Argo
	// CD's own (then Config acts as its application controller).
	Config *rest.Config
	Local  bool
}

// Resolve reads the inputs of rendering application's Snapshot snapshot for
// Environment env of namespace ns. Bad input is a *kernel.Refusal.
func (r *Renderer) Resolve(ctx context.Context, ns, application, snapshot, env string) (*Target, error) {
	seb, params, err := r.resolve(ctx, ns, application, snapshot, env)
	if err != nil {
		return nil, err
	}
	proj, err := r.project(ctx, ns, params)
	if err != nil {
		return nil, err
	}
	cfg, local, err := r.targetConfig(ctx, ns, snapshot, env, params, proj.Name)
	if err != nil {
		return nil, err
	}
	return &Target{Environment: env, Binding: seb, Params: params, Project: proj, Config: cfg, Local: local}, nil
}

// resolve reads the binding a PromotionRun would point at the Snapshot: the
// Environment's binding of the Application (the oldest, as the PromotionRun
// picks it) or the one it would create.
func (r *Renderer) resolve(ctx context.Context, ns, application, snapshot, env string) (*as.SnapshotEnvironmentBinding, []argocd.GeneratorParams, error) {
	snap := &as.Snapshot{}
	if err := r.get(ctx, ns, snapshot, snap, "Snapshot"); err != nil {
		return nil, nil, err
	}
	if snap.Spec.Application != application {
		return nil, nil, kernel.Refuse(ReasonInvalid, "Snapshot %q is of Application %q, not %q", snap.Name, snap.Spec.Application, application)
	}
	if err := r.get(ctx, ns, application, &as.Application{}, "Application"); err != nil {
		return nil, nil, err
	}
	if err := r.get(ctx, ns, env, &as.Environment{}, "Environment"); err != nil {
		return nil, nil, err
	}
	var list as.SnapshotEnvironmentBindingList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	seb := binding.Of(list.Items, application, env)
	if seb == nil {
		// The one the PromotionRun would create: it names the Applications.
		seb = &as.SnapshotEnvironmentBinding{}
		seb.Namespace, seb.Name = ns, binding.GeneratedName(application, env)
		seb.Spec = as.SnapshotEnvironmentBindingSpec{Application: application, Environment: env}
	}
	seb = seb.DeepCopy()
	seb.Spec.Snapshot = snapshot
	params, err := binding.Generate(ctx, r.Client, r.APIReader, r.ArgoNamespace, seb, r.AllowFileRepositories)
	if ref := kernel.AsRefusal(err); ref != nil {
		return nil, nil, kernel.Refuse(ReasonInvalid, "%s", ref.Message)
	}
	return seb, params, err
}

func (r *Renderer) get(ctx context.Context, ns, name string, obj client.Object, kind string) error {
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return kernel.Refuse(ReasonInvalid, "%s %q not found in namespace %q", kind, name, ns)
	}
	return err
}

// project is the tenant's AppProject as the binding reconciler would make it
// for these repositories (tenantproject adds every repository that passed
// binding.Check, and each write recomputes its destinations and resource
// lists): its source repositories and name go to the repo-server, and Argo
// CD's database gives a repository only this project's credentials.
func (r *Renderer) project(ctx context.Context, ns string, params []argocd.GeneratorParams) (*argov1alpha1.AppProject, error) {
	tenant := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: ns}, tenant); err != nil {
		return nil, err
	}
	var repos []string
	current := &argov1alpha1.AppProject{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.ArgoNamespace, Name: argocd.ProjectName(string(tenant.UID))}, current)
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
		if r.Access == nil {
			return nil, kernel.Refuse(ReasonInvalid, "repository %s is not in the tenant's AppProject yet", p.RepoURL)
		}
		var unreadable *tenantproject.NotReadableError
		if err := r.Access.Check(ctx, ns, p.RepoURL); errors.As(err, &unreadable) {
			return nil, kernel.Refuse(ReasonInvalid, "%s", err.Error())
		} else if err != nil {
			return nil, err
		}
		repos = append(repos, p.RepoURL)
	}
	return (&tenantproject.Projects{Client: r.Client, ArgoNamespace: r.ArgoNamespace}).Build(ctx, tenant, repos)
}

// targetConfig connects to the Environment's cluster with its own
// credentials: those of the Argo CD cluster Secret made for the tenant's
// ManagedEnvironment of that destination (never a Secret of another tenant,
// never the sidecar's own credentials). Argo CD's own cluster (local) has
// none: there the sidecar acts as the identity Argo CD's application
// controller applies with (Local).
func (r *Renderer) targetConfig(ctx context.Context, ns, snapshot, env string, params []argocd.GeneratorParams, project string) (_ *rest.Config, local bool, _ error) {
	if len(params) == 0 {
		return nil, false, kernel.Refuse(ReasonInvalid, "Snapshot %q has no components", snapshot)
	}
	server := params[0].DestinationServer
	if server == argocd.LocalServer {
		if r.Local == nil {
			return nil, false, kernel.Refuse(ReasonInvalid,
				"Environment %q deploys to Argo CD's own cluster, and previews there are off: the sidecar's --preview-local-identity (the identity Argo CD's application controller applies with) enables them", env)
		}
		cfg := rest.CopyConfig(r.Local)
		cfg.Timeout, cfg.UserAgent, cfg.QPS, cfg.Burst = RemoteTimeout, "gitops-service-preview", 20, 40
		return cfg, true, nil
	}
	cfg, err := targetcluster.Config(ctx, r.Client, r.ArgoNamespace, targetcluster.Target{Namespace: ns, Server: server, Project: project},
		r.Egress, RemoteTimeout, "gitops-service-preview")
	if err != nil || cfg != nil {
		return cfg, false, err
	}
	return nil, false, kernel.Refuse(ReasonInvalid, "the cluster credentials of Environment %q are not ready (see its GitOpsDeploymentManagedEnvironment)", env)
}

// RemoteClients are a client and a discovery client of the target cluster
// that follow no redirect (the token would go along: see
// managedenvironment.NewRemoteClient).
func RemoteClients(cfg *rest.Config) (client.Client, discovery.DiscoveryInterface, error) {
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

// ReadSettings reads what the application controller reads from argocd-cm
// for each manifest request, and the target cluster's version and API
// versions.
func (r *Renderer) ReadSettings(disc discovery.DiscoveryInterface) (Settings, error) {
	var s Settings
	var err error
	if s.AppLabelKey, err = r.Settings.GetAppInstanceLabelKey(); err != nil {
		return s, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.TrackingMethod, err = r.Settings.GetTrackingMethod(); err != nil {
		return s, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.TrackingMethod == "" {
		s.TrackingMethod = r.DefaultTracking
	}
	if s.InstallationID, err = r.Settings.GetInstallationID(); err != nil {
		return s, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.HelmOptions, err = r.Settings.GetHelmSettings(); err != nil {
		return s, fmt.Errorf("reading Argo CD's settings: %w", err)
	}
	if s.EnabledSourceTypes, err = r.Settings.GetEnabledSourceTypes(); err != nil {
		return s, fmt.Errorf("reading Argo CD's settings: %w", err)
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
	return s, nil
}

// Unavailable says err is the repo-server's unavailability (a transient
// error), not its answer about the manifests.
func Unavailable(err error) bool { return unavailable(err) }

func unavailable(err error) bool {
	switch grpcstatus.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Canceled:
		return true
	}
	return false
}

// Render asks the repo-server for app's manifests as the application
// controller does, with the repository and credentials Argo CD's database
// gives the tenant's project for that URL, and their render hash.
func (r *Renderer) Render(ctx context.Context, repoClient apiclient.RepoServerServiceClient, app *argov1alpha1.Application, proj *argov1alpha1.AppProject, s Settings) ([]*unstructured.Unstructured, string, error) {
	req, err := r.request(ctx, app, proj, s)
	if err != nil {
		return nil, "", err
	}
	return r.generate(ctx, repoClient, req)
}

func (r *Renderer) request(ctx context.Context, app *argov1alpha1.Application, proj *argov1alpha1.AppProject, s Settings) (*apiclient.ManifestRequest, error) {
	src := app.Spec.GetSource()
	repo, err := r.DB.GetRepository(ctx, src.RepoURL, proj.Name)
	if err != nil {
		return nil, errors.New("the repository's credentials cannot be read")
	}
	ks, err := r.Settings.GetKustomizeSettings()
	if err != nil {
		return nil, err
	}
	if s.KustomizeOptions, err = ks.GetOptions(src); err != nil {
		return nil, err
	}
	return ManifestRequest(app, repo, proj, s), nil
}

func (r *Renderer) generate(ctx context.Context, repoClient apiclient.RepoServerServiceClient, req *apiclient.ManifestRequest) ([]*unstructured.Unstructured, string, error) {
	resp, err := repoClient.GenerateManifest(ctx, req)
	if err != nil {
		return nil, "", err
	}
	var out []*unstructured.Unstructured
	for _, m := range resp.Manifests {
		u, err := argov1alpha1.UnmarshalToUnstructured(m)
		if err != nil {
			return nil, "", err
		}
		if u != nil {
			out = append(out, u)
		}
	}
	h, err := Hash(out)
	return out, h, err
}
