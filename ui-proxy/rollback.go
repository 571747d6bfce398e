package uiproxy

import (
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// HistoryEntry is one promotion or rollback into the binding's Environment
// (its PromotionHistory), newest first.
type HistoryEntry struct {
	PromotionRun string   `json:"promotionRun"`
	Kind         string   `json:"kind"`
	Snapshot     string   `json:"snapshot"`
	Result       string   `json:"result"`
	Completed    string   `json:"completed"`
	PromotedBy   string   `json:"promotedBy,omitempty"`
	ApprovedBy   []string `json:"approvedBy,omitempty"`
	RolledBackBy string   `json:"rolledBackBy,omitempty"`
}

// History is the panel's view of the PromotionHistory of the binding's
// application and Environment.
type History struct {
	Entries  []HistoryEntry `json:"entries,omitempty"`
	Rejected []string       `json:"rejected,omitempty"`
	// HeldSince is when a rollback held automated promotion out of the
	// Environment, while it is held.
	HeldSince string `json:"heldSince,omitempty"`
	HeldBy    string `json:"heldBy,omitempty"`
}

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

func historyView(h *as.PromotionHistory) *History {
	out := &History{}
	for i := len(h.Status.Entries) - 1; i >= 0; i-- {
		e := h.Status.Entries[i]
		out.Entries = append(out.Entries, HistoryEntry{PromotionRun: e.PromotionRun, Kind: string(e.Kind), Snapshot: e.Snapshot, Result: string(e.Result),
			Completed: e.CompletionTime.UTC().Format(time.RFC3339), PromotedBy: e.PromotedBy, ApprovedBy: e.ApprovedBy, RolledBackBy: e.RolledBackBy})
	}
	for _, r := range h.Status.Rejected {
		out.Rejected = append(out.Rejected, r.Snapshot)
	}
	if h.Held() {
		out.HeldSince, out.HeldBy = timestamp(h.Status.Hold.Since), h.Status.Hold.PromotionRun
	}
	return out
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
		return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: runName(seb.Spec.Application + "-" + seb.Spec.Environment + "-rollback")},
			Spec: as.PromotionRunSpec{Snapshot: seb.Spec.Snapshot, Application: seb.Spec.Application, RequestedBy: requester(r),
				ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: seb.Spec.Environment, Rollback: true}}}, nil
	})
}
