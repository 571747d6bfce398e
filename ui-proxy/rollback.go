package uiproxy

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/ui-proxy/api"
)

// history reads the PromotionHistory of app in env (in the binding's own
// namespace), or nil when nothing ran there yet.
func (s *Server) history(r *http.Request, ns, app, env string) (*History, error) {
	var list as.PromotionHistoryList
	if err := s.Client.List(r.Context(), &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, h := range list.Items {
		if h.Spec.Application == app && h.Spec.Environment == env {
			return historyView(&h), nil
		}
	}
	return nil, nil
}

// historyView is the view of h in a Deployment: its own binding's, so it
// does not say whose.
func historyView(h *as.PromotionHistory) *History {
	v := api.HistoryOf(h)
	v.Application, v.Environment = "", ""
	return v
}

// rollback creates a PromotionRun that rolls the binding's Snapshot back out
// of its Environment (to the last other Snapshot verified there), in the
// binding's namespace; authorized as Promote is.
func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	s.act(w, r, ownership.KindBinding, func(ns, name, uid string) (client.Object, error) {
		seb := &as.SnapshotEnvironmentBinding{}
		if err := s.get(r, client.ObjectKey{Namespace: ns, Name: name}, seb, uid); err != nil {
			return nil, err
		}
		return as.NewRollback(ns, seb.Spec.Application, seb.Spec.Environment, seb.Spec.Snapshot, requester(r)), nil
	})
}

// histories answers GET /api/v1/history?environment=E[&application=A]: the
// PromotionHistories of Environment E in the binding's namespace (of every
// application, or A's). Authorized as actions are: histories of other
// applications of the namespace are the tenant's, whom the mapping names.
func (s *Server) histories(w http.ResponseWriter, r *http.Request) {
	env, application := r.URL.Query().Get("environment"), r.URL.Query().Get("application")
	if env == "" {
		writeError(w, http.StatusBadRequest, "GET /api/v1/history needs ?environment=<Environment> (and optionally &application=<application>)")
		return
	}
	app, key, ok := s.authorized(w, r, ownership.KindBinding, false)
	if !ok {
		return
	}
	var list as.PromotionHistoryList
	if err := s.Client.List(r.Context(), &list, client.InNamespace(key.Namespace)); err != nil {
		s.fail(w, r, app, err)
		return
	}
	out := Histories{Namespace: key.Namespace, Items: []History{}}
	for i := range list.Items {
		h := &list.Items[i]
		if h.Spec.Environment == env && (application == "" || h.Spec.Application == application) {
			out.Items = append(out.Items, *api.HistoryOf(h))
		}
	}
	slices.SortFunc(out.Items, func(a, b History) int { return strings.Compare(a.Application, b.Application) })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// release releases the hold a rollback put on automated promotion out of an
// Environment, for the binding's application (sets its PromotionHistory's
// spec.releasedAt): it lets automated promotion past the Snapshot a rollback
// rejected, so only the tenant's release managers may (as only they update
// PromotionHistories with kubectl).
func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.Environment == "" {
		writeError(w, http.StatusBadRequest, `the body must be {"environment": "<Environment whose hold to release>"}`)
		return
	}
	s.actOn(w, r, ownership.KindBinding, func(ns, name, uid string) (client.Object, error) {
		if err := s.authorizeGateKeeper(r, ns, "release the hold on Environment "+req.Environment); err != nil {
			return nil, err
		}
		seb := &as.SnapshotEnvironmentBinding{}
		if err := s.get(r, client.ObjectKey{Namespace: ns, Name: name}, seb, uid); err != nil {
			return nil, err
		}
		h := &as.PromotionHistory{}
		err := s.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: as.PromotionHistoryName(seb.Spec.Application, req.Environment)}, h)
		if apierrors.IsNotFound(err) {
			return nil, &refusal{http.StatusConflict, "nothing ran in Environment " + req.Environment + " for application " + seb.Spec.Application + ": there is no hold to release"}
		}
		if err != nil {
			return nil, err
		}
		if !h.Held() {
			return nil, &refusal{http.StatusConflict, "Environment " + req.Environment + " of application " + seb.Spec.Application + " is not held"}
		}
		patch := client.MergeFromWithOptions(h.DeepCopy(), client.MergeFromWithOptimisticLock{})
		now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		if now.Before(&h.Status.Hold.Since) {
			now = h.Status.Hold.Since // our clock behind the server's: release this hold all the same
		}
		h.Spec.ReleasedAt = &now
		if err := s.Writer.Patch(r.Context(), h, patch); err != nil {
			if apierrors.IsConflict(err) {
				return nil, &refusal{http.StatusConflict, "the history of " + seb.Spec.Application + " in " + req.Environment + " changed meanwhile; try again"}
			}
			return nil, &writeFailed{err: err, what: "cannot release the hold"}
		}
		return h, nil
	})
}
