// Package uiproxy is the backend of our Argo CD proxy extension: argocd-server
// authenticates the user, checks that they may get the Application named in
// the Argocd-Application-Name header (and invoke the extension), and forwards
// the request here with a secret header only it knows. We answer with the
// GitOps Service object behind that Application (a GitOpsDeployment, or a
// SnapshotEnvironmentBinding with its Snapshot and PromotionRuns) for the UI
// panel. Nothing else is reachable: only Applications we made (in their
// owner's tenant project, the owner there with its UID), only the CRs that
// own them, never a Secret.
package uiproxy

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
	"github.com/gitops-service/gitops-service/ui-proxy/api"
)

// Headers argocd-server sends (the Application and project the user asked
// about, checked by its RBAC) and the secret one our extension.config adds.
const (
	HeaderApplication = api.HeaderApplication
	HeaderProject     = api.HeaderProject
	HeaderToken       = "Gitops-Service-Token"
	// HeaderVersion is on every answer: the sidecar's version, for
	// `argocd gitops version` with an Argo CD login.
	HeaderVersion = api.HeaderVersion
	// ExtensionName is the name of the proxy extension in argocd-cm: the UI
	// calls /extensions/<ExtensionName>/api/v1/deployment.
	// The tenants' Argo CD policy grants invoking it by this name.
	ExtensionName = api.ExtensionName
	// maxPromotionRuns bounds the PromotionRuns shown for a binding, and
	// maxSyncRuns the SyncRuns shown for a GitOpsDeployment.
	maxPromotionRuns = 10
	maxSyncRuns      = 10
)

// Server answers the UI panel.
type Server struct {
	// Client reads the manager's cache: our Applications, the tenants' CRs.
	Client client.Reader
	// Writer creates the runs of panel actions (PromotionRuns, SyncRuns);
	// nil refuses every action.
	Writer client.Writer
	// ArgoNamespace is the namespace of our Applications.
	ArgoNamespace string
	// Token returns the secret argocd-server adds to each request; nil or
	// empty refuses everything.
	Token func() []byte
	// Serves says whether a tenant namespace is this Argo CD instance's; an
	// Application of another's is answered "not here", with no data. nil:
	// every namespace.
	Serves func(ctx context.Context, namespace string) bool
	// Diffs has the full diffs of PromotionPreviews; nil: the panel shows
	// the capped diff of their status.
	Diffs PreviewDiffs
	// Version is the sidecar's, sent to argocd-server's callers (HeaderVersion).
	Version string
}

// Handler routes the extension's API.
func (s *Server) Handler() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc(api.PathDeployment, s.deployment).Methods(http.MethodGet)
	// Actions change things: POST only.
	r.HandleFunc(api.PathSync, s.sync).Methods(http.MethodPost)
	r.HandleFunc(api.PathPromote, s.promote).Methods(http.MethodPost)
	r.HandleFunc(api.PathApprove, s.approve).Methods(http.MethodPost)
	r.HandleFunc(api.PathFreeze, s.freeze(true)).Methods(http.MethodPost)
	r.HandleFunc(api.PathUnfreeze, s.freeze(false)).Methods(http.MethodPost)
	r.HandleFunc(api.PathRollback, s.rollback).Methods(http.MethodPost)
	r.HandleFunc(api.PathRelease, s.release).Methods(http.MethodPost)
	r.HandleFunc(api.PathHistory, s.histories).Methods(http.MethodGet)
	// A preview changes nothing but is a run of its own: created by POST.
	r.HandleFunc(api.PathPreview, s.createPreview).Methods(http.MethodPost)
	r.HandleFunc(api.PathPreview, s.getPreview).Methods(http.MethodGet)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: the panel calls GET /api/v1/deployment, POST /api/v1/sync, /api/v1/promote, /api/v1/approve, /api/v1/freeze, /api/v1/unfreeze, /api/v1/rollback and /api/v1/release, GET /api/v1/history, and POST or GET /api/v1/preview")
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed here: GET /api/v1/deployment, /api/v1/history and /api/v1/preview read; the actions are POST")
	})
	return s.authenticated(r)
}

// authenticated refuses requests without argocd-server's secret header:
// anyone who reaches the backend directly could forge the other headers.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := s.Token()
		got := r.Header.Get(HeaderToken)
		if len(want) == 0 || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			writeError(w, http.StatusUnauthorized, "requests must come through argocd-server's proxy extension (header "+HeaderToken+")")
			return
		}
		w.Header().Set(HeaderVersion, s.Version)
		next.ServeHTTP(w, r)
	})
}

func (s *Server) deployment(w http.ResponseWriter, r *http.Request) {
	app, status, msg := s.application(r)
	if app == nil {
		writeError(w, status, msg)
		return
	}
	d, err := s.owner(r, app)
	var notFound *ownerGone
	switch {
	case errors.As(err, &notFound):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		ctrl.LoggerFrom(r.Context()).Error(err, "ui-proxy: reading the owner of an Application", "application", app.Name)
		writeError(w, http.StatusInternalServerError, "cannot read the GitOps Service object of this Application; see the gitops-service log")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d)
}

// application is the Application named by the headers, if it is one of ours in
// the project argocd-server checked.
func (s *Server) application(r *http.Request) (*argov1alpha1.Application, int, string) {
	ns, name, ok := strings.Cut(r.Header.Get(HeaderApplication), ":")
	if !ok || name == "" {
		return nil, http.StatusBadRequest, "header " + HeaderApplication + " must be <namespace>:<application>"
	}
	if ns != s.ArgoNamespace {
		return nil, http.StatusNotFound, "the GitOps Service makes Applications in namespace " + s.ArgoNamespace + " only"
	}
	app := &argov1alpha1.Application{}
	err := s.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, app)
	if apierrors.IsNotFound(err) {
		return nil, http.StatusNotFound, "Application " + name + " was not made by the GitOps Service"
	}
	if err != nil {
		return nil, http.StatusInternalServerError, "cannot read Application " + name
	}
	// The project argocd-server authorized must be the Application's own.
	if app.Spec.Project != r.Header.Get(HeaderProject) {
		return nil, http.StatusForbidden, "header " + HeaderProject + " does not name the project of Application " + name
	}
	if app.Labels[ownership.LabelManagedBy] != ownership.ManagedByValue {
		return nil, http.StatusNotFound, "Application " + name + " was not made by the GitOps Service"
	}
	if tenant := app.Labels[ownership.LabelTenantNS]; s.Serves != nil && !s.Serves(r.Context(), tenant) {
		return nil, http.StatusNotFound, "namespace " + tenant + " is served by another Argo CD instance, not here"
	}
	// Labels alone are forged by anyone who may create an Application in
	// some project: the Application must be in its owner's tenant project and
	// the owner must exist with the labelled UID.
	if _, err := tenantproject.OwnerOf(r.Context(), s.Client, app); errors.Is(err, kernel.ErrNotOurs) {
		return nil, http.StatusNotFound, (&ownerGone{what: "the owner of Application " + name}).Error() + ", or the Application was not made by the GitOps Service for it"
	} else if err != nil {
		ctrl.LoggerFrom(r.Context()).Error(err, "ui-proxy: reading the owner of an Application", "application", name)
		return nil, http.StatusInternalServerError, "cannot read the GitOps Service object of Application " + name
	}
	return app, 0, ""
}

// ownerGone says the CR that made an Application is gone (or was never there).
type ownerGone struct{ what string }

func (e *ownerGone) Error() string { return e.what + " is gone" }

// owner reads the CR named by the Application's owner labels: only in the
// Application's tenant namespace, only with the UID it was made for.
func (s *Server) owner(r *http.Request, app *argov1alpha1.Application) (*Deployment, error) {
	ctx := r.Context()
	l := app.Labels
	owner, ok := ownership.Owner(app, l[ownership.LabelOwnerKind])
	if !ok {
		return nil, &ownerGone{what: "the owner of Application " + app.Name}
	}
	key, ns, name := owner, owner.Namespace, owner.Name
	switch l[ownership.LabelOwnerKind] {
	case ownership.KindGitOpsDeployment:
		gd := &v1.GitOpsDeployment{}
		if err := s.get(r, key, gd, l[ownership.LabelOwnerUID]); err != nil {
			return nil, err
		}
		runs, err := s.syncRuns(r, ns, name)
		if err != nil {
			return nil, err
		}
		return &Deployment{Kind: "GitOpsDeployment", Namespace: ns, Name: name, Type: string(gd.Spec.Type),
			Sync: string(gd.Status.Sync.Status), Health: string(gd.Status.Health.Status), Conditions: api.GitOpsConditionsOf(gd.Status.Conditions),
			Source:      &Source{RepoURL: withoutUserInfo(gd.Spec.Source.RepoURL), Path: gd.Spec.Source.Path, TargetRevision: gd.Spec.Source.TargetRevision},
			Destination: &Destination{Environment: gd.Spec.Destination.Environment, Namespace: gd.Spec.Destination.Namespace},
			SyncRuns:    runs}, nil
	case ownership.KindBinding:
		seb := &as.SnapshotEnvironmentBinding{}
		if err := s.get(r, key, seb, l[ownership.LabelOwnerUID]); err != nil {
			return nil, err
		}
		d := &Deployment{Kind: "SnapshotEnvironmentBinding", Namespace: ns, Name: name, Application: seb.Spec.Application,
			Environment: seb.Spec.Environment, Snapshot: seb.Spec.Snapshot, Component: l[as.LabelComponent],
			Conditions: append(api.ConditionsOf(seb.Status.BindingConditions), api.ConditionsOf(seb.Status.ComponentDeploymentConditions)...)}
		for _, c := range seb.Status.GitOpsDeployments {
			d.Components = append(d.Components, ComponentState{Name: c.ComponentName, Sync: c.GitOpsDeploymentSyncStatus,
				Health: c.GitOpsDeploymentHealthStatus, Commit: c.GitOpsDeploymentCommitID})
		}
		snap := &as.Snapshot{}
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: seb.Spec.Snapshot}, snap); err == nil {
			for _, c := range snap.Spec.Components {
				if c.Name == d.Component {
					d.Image = c.ContainerImage
				}
			}
		}
		runs, err := s.promotionRuns(r, ns, seb.Spec.Application)
		if err != nil {
			return nil, err
		}
		d.PromotionRuns = runs
		if d.Path, err = s.promotionPath(r, ns, seb); err != nil {
			return nil, err
		}
		if d.History, err = s.history(r, ns, seb.Spec.Application, seb.Spec.Environment); err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, &ownerGone{what: "the owner of Application " + app.Name}
}

// get reads obj and checks it is the one the Application was made for.
func (s *Server) get(r *http.Request, key client.ObjectKey, obj client.Object, uid string) error {
	err := s.Client.Get(r.Context(), key, obj)
	if apierrors.IsNotFound(err) || (err == nil && string(obj.GetUID()) != uid) {
		return &ownerGone{what: key.String()}
	}
	return err
}

// promotionRuns are the application's latest PromotionRuns in its namespace.
func (s *Server) promotionRuns(r *http.Request, ns, application string) ([]PromotionRun, error) {
	var list as.PromotionRunList
	if err := s.Client.List(r.Context(), &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	newestFirst(list.Items, func(p *as.PromotionRun) *metav1.Time { return &p.CreationTimestamp })
	var out []PromotionRun
	for _, p := range list.Items {
		if p.Spec.Application != application || len(out) == maxPromotionRuns {
			continue
		}
		out = append(out, api.PromotionRunOf(&p))
	}
	return out, nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
