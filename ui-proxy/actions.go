package uiproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/ui-proxy/api"
)

// Headers argocd-server sets to the user it authenticated, each only when
// not empty: otherwise the browser's own header passes through unchanged.
const (
	HeaderUsername = "Argocd-Username"
	HeaderUserID   = "Argocd-User-Id"
)

// Refusals the panel shows as they are.
const (
	msgNotNamed = "panel actions need a user named in the tenant mapping (annotation " + argocd.AnnotationArgoCDSubjects +
		" of namespace %s); group entries are not trusted because argocd-server forwards a client's own groups header when the user has none"
	msgNoUser = "argocd-server did not say who you are (header " + HeaderUsername + "): panel actions need a user named in the tenant mapping"
	// msgNotReleaseManager: lifting a gate is the release managers' duty.
	msgNotReleaseManager = "user %s may not %s: lifting a gate in the panel needs a user named in the tenant's release managers (annotation " +
		argocd.AnnotationArgoCDReleaseManagers + " of namespace %s, users only, group entries are not trusted); freezing, promoting and approving need only the tenant mapping"
)

// refusal is an action refused with a message that says why.
type refusal struct {
	status int
	msg    string
}

func (e *refusal) Error() string { return e.msg }

// sync creates a GitOpsDeploymentSyncRun for the GitOpsDeployment behind the
// Application, in its namespace.
func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	var req api.SyncRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, `the body must be empty or {"revision": "<revision to sync to>"}`)
		return
	}
	s.act(w, r, ownership.KindGitOpsDeployment, func(ns, name, uid string) (client.Object, error) {
		gd := &v1.GitOpsDeployment{}
		if err := s.get(r, client.ObjectKey{Namespace: ns, Name: name}, gd, uid); err != nil {
			return nil, err
		}
		return &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: runName(name)},
			Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: name, RevisionID: req.Revision}}, nil
	})
}

// promote creates a PromotionRun of the binding's Snapshot to the Environment
// the request names, in the binding's namespace.
func (s *Server) promote(w http.ResponseWriter, r *http.Request) {
	var req api.PromoteRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.Environment == "" {
		writeError(w, http.StatusBadRequest, `the body must be {"environment": "<Environment to promote to>"}`)
		return
	}
	s.act(w, r, ownership.KindBinding, func(ns, name, uid string) (client.Object, error) {
		seb, snap, env, err := s.promotion(r, ns, name, uid, req.Environment)
		if err != nil {
			return nil, err
		}
		return as.NewPromotion(ns, seb.Spec.Application, snap.Name, env.Name, "", requester(r)), nil
	})
}

// requester is the Argo CD user argocd-server authenticated, whom the
// PromotionRun names as its requester (argocd:<user>, as approve names the
// approver; the admission policy lets only our ServiceAccount do so).
func requester(r *http.Request) *as.Requester {
	return &as.Requester{User: ArgoCDIdentityPrefix + strings.TrimSpace(r.Header.Get(HeaderUsername))}
}

// act checks the Application as reads do, that its owner is of kind, and that
// the tenant mapping of the owner's namespace names the user; then creates the
// run that build makes, in that namespace and nowhere else.
func (s *Server) act(w http.ResponseWriter, r *http.Request, kind string, build func(ns, name, uid string) (client.Object, error)) {
	s.actOn(w, r, kind, func(ns, name, uid string) (client.Object, error) {
		run, err := build(ns, name, uid)
		if err != nil {
			return nil, err
		}
		if err := s.Writer.Create(r.Context(), run); err != nil {
			return nil, &writeFailed{err: err, what: "cannot create the run"}
		}
		return run, nil
	})
}

// actOn is act for any change do makes (a create or a patch) in the owner's
// namespace, after the same checks; it answers with the object do returns.
func (s *Server) actOn(w http.ResponseWriter, r *http.Request, kind string, do func(ns, name, uid string) (client.Object, error)) {
	app, key, ok := s.authorized(w, r, kind, true)
	if !ok {
		return
	}
	ns := key.Namespace
	obj, err := do(ns, key.Name, app.Labels[ownership.LabelOwnerUID])
	if err != nil {
		s.fail(w, r, app, err)
		return
	}
	kindOf := "GitOpsDeploymentSyncRun"
	switch obj.(type) {
	case *as.PromotionRun:
		kindOf = "PromotionRun"
	case *as.PromotionApproval:
		kindOf = "PromotionApproval"
	case *as.Environment:
		kindOf = "Environment"
	case *as.PromotionPreview:
		kindOf = "PromotionPreview"
	case *as.PromotionHistory:
		kindOf = "PromotionHistory"
	}
	ctrl.LoggerFrom(r.Context()).Info("ui-proxy: panel action", "user", r.Header.Get(HeaderUsername), "kind", kindOf,
		"namespace", ns, "name", obj.GetName(), "application", app.Name)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(Action{Kind: kindOf, Namespace: ns, Name: obj.GetName()})
}

// authorized checks the Application as reads do, that its owner is of kind,
// and that the tenant mapping of the owner's namespace names the user; it
// answers the refusal itself, and otherwise returns the Application and its
// owner. write: the caller writes (refused when this server takes no actions).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, kind string, write bool) (*argov1alpha1.Application, client.ObjectKey, bool) {
	app, status, msg := s.application(r)
	if app == nil {
		writeError(w, status, msg)
		return nil, client.ObjectKey{}, false
	}
	if write && s.Writer == nil {
		writeError(w, http.StatusServiceUnavailable, "this gitops-service does not take panel actions")
		return nil, client.ObjectKey{}, false
	}
	if app.Labels[ownership.LabelOwnerKind] != kind {
		writeError(w, http.StatusBadRequest, "Application "+app.Name+" is not made for a "+kind)
		return nil, client.ObjectKey{}, false
	}
	key, ok := ownership.Owner(app, kind)
	if !ok {
		writeError(w, http.StatusNotFound, (&ownerGone{what: "the owner of Application " + app.Name}).Error())
		return nil, client.ObjectKey{}, false
	}
	if err := s.authorize(r, key.Namespace); err != nil {
		s.fail(w, r, app, err)
		return nil, client.ObjectKey{}, false
	}
	return app, key, true
}

// writeFailed is a write of a panel action the API server did not take.
type writeFailed struct {
	err  error
	what string
}

func (e *writeFailed) Error() string { return e.what + ": " + e.err.Error() }

func (s *Server) fail(w http.ResponseWriter, r *http.Request, app *argov1alpha1.Application, err error) {
	var ref *refusal
	var gone *ownerGone
	var wf *writeFailed
	switch {
	case errors.As(err, &wf):
		ctrl.LoggerFrom(r.Context()).Error(wf.err, "ui-proxy: "+wf.what, "application", app.Name)
		writeError(w, http.StatusInternalServerError, wf.what+"; see the gitops-service log")
	case errors.As(err, &ref):
		writeError(w, ref.status, ref.msg)
	case errors.As(err, &gone):
		writeError(w, http.StatusNotFound, gone.Error())
	default:
		ctrl.LoggerFrom(r.Context()).Error(err, "ui-proxy: a panel action", "application", app.Name)
		writeError(w, http.StatusInternalServerError, "cannot check this action; see the gitops-service log")
	}
}

// authorize allows the user argocd-server authenticated if the tenant mapping
// of ns names them. Never by groups: Argocd-User-Groups is the client's own
// header for a user without groups. Argo CD 3.x always sets Argocd-User-Id,
// and its Argocd-Username is that id for local accounts (an SSO user's is
// their email): a username that is neither is not the one argocd-server set.
func (s *Server) authorize(r *http.Request, ns string) error {
	user := strings.TrimSpace(r.Header.Get(HeaderUsername))
	if user == "" {
		return &refusal{http.StatusForbidden, msgNoUser}
	}
	if id := r.Header.Get(HeaderUserID); id != "" && id != user && !strings.Contains(user, "@") {
		return &refusal{http.StatusForbidden, "headers " + HeaderUsername + " and " + HeaderUserID + " disagree: the username did not come from argocd-server"}
	}
	named, err := s.names(r, ns, argocd.AnnotationArgoCDSubjects, user)
	if err != nil || named {
		return err
	}
	return &refusal{http.StatusForbidden, "user " + user + " may not act here: " + fmt.Sprintf(msgNotNamed, ns)}
}

// authorizeGateKeeper allows what lifts a gate (unfreeze, release a
// rollback's hold; what) only to a user the tenant's release managers
// annotation of ns names, after authorize: the panel writes as our
// ServiceAccount, which the gate policies exempt, so this is where a user
// who may only promote is held. Users only, as authorize.
func (s *Server) authorizeGateKeeper(r *http.Request, ns, what string) error {
	user := strings.TrimSpace(r.Header.Get(HeaderUsername))
	named, err := s.names(r, ns, argocd.AnnotationArgoCDReleaseManagers, user)
	if err != nil || named {
		return err
	}
	return &refusal{http.StatusForbidden, fmt.Sprintf(msgNotReleaseManager, user, what, ns)}
}

// names reports whether annotation of namespace ns (a list of Argo CD
// subjects) names user; invalid entries never match.
func (s *Server) names(r *http.Request, ns, annotation, user string) (bool, error) {
	nsObj := &corev1.Namespace{}
	if err := s.Client.Get(r.Context(), client.ObjectKey{Name: ns}, nsObj); err != nil {
		return false, err
	}
	subjects, _ := argocd.ParseSubjects(nsObj.Annotations[annotation])
	return user != "" && slices.Contains(subjects, user), nil
}

// runName is the generateName prefix of a SyncRun, approval or preview made
// from the panel (PromotionRuns are named by their constructors in the API
// package, as every client makes them).
func runName(base string) string {
	return as.GenerateName(truncate(base, 200) + "-panel")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
