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
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// Headers argocd-server sends (the Application and project the user asked
// about, checked by its RBAC) and the secret one our extension.config adds.
const (
	HeaderApplication = "Argocd-Application-Name"
	HeaderProject     = "Argocd-Project-Name"
	HeaderToken       = "Gitops-Service-Token"
	// HeaderVersion is on every answer: the sidecar's version, for
	// `argocd gitops version` with an Argo CD login.
	HeaderVersion = "Gitops-Service-Version"
	// ExtensionName is the name of the proxy extension in argocd-cm: the UI
	// calls /extensions/<ExtensionName>/api/v1/deployment.
	// The tenants' Argo CD policy grants invoking it by this name.
	ExtensionName = argocd.UIExtensionName
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

// Deployment is the panel's view of the GitOps Service object behind an
// Application.
type Deployment struct {
	// Kind is GitOpsDeployment or SnapshotEnvironmentBinding.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Conditions of the object (errors the user must see).
	Conditions []Condition `json:"conditions,omitempty"`

	// GitOpsDeployment: its type, what it deploys where, the sync/health it
	// reports and its latest SyncRuns.
	Type        string       `json:"type,omitempty"`
	Sync        string       `json:"sync,omitempty"`
	Health      string       `json:"health,omitempty"`
	Source      *Source      `json:"source,omitempty"`
	Destination *Destination `json:"destination,omitempty"`
	SyncRuns    []SyncRun    `json:"syncRuns,omitempty"`

	// SnapshotEnvironmentBinding: what it deploys and this Application's part.
	Application   string           `json:"application,omitempty"`
	Environment   string           `json:"environment,omitempty"`
	Snapshot      string           `json:"snapshot,omitempty"`
	Component     string           `json:"component,omitempty"`
	Image         string           `json:"image,omitempty"`
	Components    []ComponentState `json:"components,omitempty"`
	PromotionRuns []PromotionRun   `json:"promotionRuns,omitempty"`
	// Path is the application's promotion path: every Environment of the
	// tenant's digraph, parents before children, with what runs there.
	Path []EnvironmentState `json:"path,omitempty"`
	// History is what ran in the binding's Environment (rollback.go).
	History *History `json:"history,omitempty"`
}

// Source is where a GitOpsDeployment deploys from (the repository URL
// without any user info).
type Source struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
}

// Destination is where a GitOpsDeployment deploys to: a ManagedEnvironment
// (empty: the tenant's own cluster) and namespace.
type Destination struct {
	Environment string `json:"environment,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
}

// SyncRun is a GitOpsDeploymentSyncRun of the deployment, newest first.
type SyncRun struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
	Phase    string `json:"phase,omitempty"`
	Sync     string `json:"sync,omitempty"`
	Health   string `json:"health,omitempty"`
	// Message of its ErrorOccurred condition.
	Message string `json:"message,omitempty"`
	Created string `json:"created"`
}

// EnvironmentState is one Environment of the promotion path and what the
// application runs there.
type EnvironmentState struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Parent      string `json:"parent,omitempty"`
	Strategy    string `json:"strategy,omitempty"`
	// Depth is the number of ancestors (0 for a root of the digraph).
	Depth int `json:"depth"`
	// Current is the Environment of the Application being looked at.
	Current bool `json:"current,omitempty"`
	// Gates are the Environment's promotion gates (soak, freeze, approvals), as in its spec.
	Gates *as.PromotionGates `json:"gates,omitempty"`
	// Binding and Snapshot are empty when the application does not run here.
	Binding    string           `json:"binding,omitempty"`
	Snapshot   string           `json:"snapshot,omitempty"`
	Components []ComponentState `json:"components,omitempty"`
	// Changed are the components whose image differs from the parent
	// Environment's (or that only one of them runs).
	Changed []string `json:"changed,omitempty"`
}

// Condition is a condition of the object, in short.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ComponentState is one component of a binding as Argo CD sees it.
type ComponentState struct {
	Name   string `json:"name"`
	Sync   string `json:"sync,omitempty"`
	Health string `json:"health,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Image is the component's container image in the binding's Snapshot.
	Image string `json:"image,omitempty"`
}

// PromotionRun is a promotion of the binding's application, newest first.
type PromotionRun struct {
	Name         string   `json:"name"`
	Snapshot     string   `json:"snapshot"`
	State        string   `json:"state,omitempty"`
	Result       string   `json:"result,omitempty"`
	Environments []string `json:"environments,omitempty"`
	// Target is the manual promotion's Environment, Initial the automated
	// promotion's first one.
	Target  string `json:"target,omitempty"`
	Initial string `json:"initial,omitempty"`
	Steps   []Step `json:"steps,omitempty"`
	// Conditions (ErrorOccurred says why a promotion failed).
	Conditions []Condition `json:"conditions,omitempty"`
	Created    string      `json:"created"`
}

// Step is one step of a PromotionRun.
type Step struct {
	Step        int    `json:"step"`
	Environment string `json:"environment"`
	Status      string `json:"status"`
	Message     string `json:"message,omitempty"`
}

// Handler routes the extension's API.
func (s *Server) Handler() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/api/v1/deployment", s.deployment).Methods(http.MethodGet)
	// Actions change things: POST only.
	r.HandleFunc("/api/v1/sync", s.sync).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/promote", s.promote).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/approve", s.approve).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/freeze", s.freeze(true)).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/unfreeze", s.freeze(false)).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/rollback", s.rollback).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/release", s.release).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/history", s.histories).Methods(http.MethodGet)
	// A preview changes nothing but is a run of its own: created by POST.
	r.HandleFunc("/api/v1/preview", s.createPreview).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/preview", s.getPreview).Methods(http.MethodGet)
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
			Sync: string(gd.Status.Sync.Status), Health: string(gd.Status.Health.Status), Conditions: gitopsConditions(gd.Status.Conditions),
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
			Conditions: append(conditions(seb.Status.BindingConditions), conditions(seb.Status.ComponentDeploymentConditions)...)}
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
		run := PromotionRun{Name: p.Name, Snapshot: p.Spec.Snapshot, State: string(p.Status.State),
			Result: string(p.Status.CompletionResult), Created: timestamp(p.CreationTimestamp),
			Conditions: conditions(p.Status.Conditions)}
		if p.Spec.ManualPromotion != nil {
			run.Target = p.Spec.ManualPromotion.TargetEnvironment
		}
		if p.Spec.AutomatedPromotion != nil {
			run.Initial = p.Spec.AutomatedPromotion.InitialEnvironment
		}
		for _, e := range p.Status.EnvironmentStatus {
			run.Environments = append(run.Environments, e.EnvironmentName+": "+string(e.Status))
			run.Steps = append(run.Steps, Step{Step: e.Step, Environment: e.EnvironmentName, Status: string(e.Status), Message: e.DisplayStatus})
		}
		out = append(out, run)
	}
	return out, nil
}

func conditions(cs []metav1.Condition) []Condition {
	var out []Condition
	for _, c := range cs {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func gitopsConditions(cs []v1.GitOpsDeploymentCondition) []Condition {
	var out []Condition
	for _, c := range cs {
		out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: string(c.Reason), Message: c.Message})
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
