package sidecar

import (
	"context"

	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v2/util/db"
	"github.com/argoproj/argo-cd/v2/util/settings"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionpreview"
	"github.com/gitops-service/gitops-service/reconcilers/render"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// previewDiffs are the full diffs of the previews this sidecar ran, for the
// panel's backend.
var previewDiffs = &promotionpreview.Diffs{}

// newRenderer is the rendering shared by previews and promotions, with
// Argo CD's own clients: the repo-server's gRPC client, and the settings
// manager and database the application controller reads argocd-cm and
// repositories with; nil without a repo-server.
func newRenderer(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, o Options, access *tenantproject.Access) (*render.Renderer, error) {
	p := o.Preview
	if p.RepoServerAddr == "" {
		return nil, nil
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	settingsMgr := settings.NewSettingsManager(ctx, kube, o.ArgoNamespace)
	timeout := int(p.RepoServerTimeout.Seconds())
	if timeout <= 0 {
		timeout = 60
	}
	var local *rest.Config
	if p.LocalIdentity != "" {
		// Previews on Argo CD's own cluster read and dry-run as its
		// application controller would apply, never as the sidecar.
		local = rest.CopyConfig(cfg)
		local.Impersonate = rest.ImpersonationConfig{UserName: p.LocalIdentity}
	}
	return &render.Renderer{
		Client:                mgr.GetClient(),
		APIReader:             mgr.GetAPIReader(),
		ArgoNamespace:         o.ArgoNamespace,
		Repo:                  apiclient.NewRepoServerClientset(p.RepoServerAddr, timeout, apiclient.TLSConfiguration{DisableTLS: p.RepoServerPlaintext, StrictValidation: p.RepoServerStrictTLS}),
		Settings:              settingsMgr,
		DB:                    db.NewDB(o.ArgoNamespace, settingsMgr, kube),
		DefaultTracking:       p.DefaultTracking,
		AllowFileRepositories: o.AllowFileRepositories,
		Local:                 local,
		Access:                access,
		Egress:                &o.Egress,
		Cache:                 &render.Cache{},
	}, nil
}

// previews is the row of the PromotionPreview reconciler; nil without a
// renderer (a repo-server).
func previews(mgr ctrl.Manager, o Options, renderer *render.Renderer) *registration {
	if renderer == nil {
		return nil
	}
	p := o.Preview
	return &registration{what: "the PromotionPreview reconciler", concurrency: max(p.Total, 1),
		kinds: []client.Object{&as.PromotionPreview{}},
		setup: &promotionpreview.Reconciler{
			Client:   mgr.GetClient(),
			Engine:   &promotionpreview.Engine{Renderer: renderer},
			Limiter:  &promotionpreview.Limiter{PerTenant: p.PerTenant, Total: p.Total},
			Recorder: mgr.GetEventRecorderFor("gitops-service"),
			Diffs:    previewDiffs,
		}}
}
