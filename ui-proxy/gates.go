package uiproxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/ui-proxy/api"
)

// ArgoCDIdentityPrefix marks an approver that argocd-server authenticated (the
// panel, the CLI with an Argo CD login): the GitOps Service's ServiceAccount
// approves on their behalf, and the admission policy lets only it use the prefix.
const ArgoCDIdentityPrefix = "argocd:"

// approve creates a PromotionApproval of a Snapshot into an Environment of
// the binding's namespace, for the Argo CD user argocd-server authenticated
// (argocd:<user>; the user's groups are not trusted, see authorize).
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	var req api.ApproveRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.Environment == "" || req.Snapshot == "" {
		writeError(w, http.StatusBadRequest, `the body must be {"environment": "<Environment>", "snapshot": "<Snapshot to approve into it>"}`)
		return
	}
	s.act(w, r, ownership.KindBinding, func(ns, name, uid string) (client.Object, error) {
		seb := &as.SnapshotEnvironmentBinding{}
		if err := s.get(r, client.ObjectKey{Namespace: ns, Name: name}, seb, uid); err != nil {
			return nil, err
		}
		if err := s.mustExist(r, ns, req.Environment, &as.Environment{}, "Environment"); err != nil {
			return nil, err
		}
		snap := &as.Snapshot{}
		if err := s.mustExist(r, ns, req.Snapshot, snap, "Snapshot"); err != nil {
			return nil, err
		}
		if req.Application != "" && snap.Spec.Application != req.Application {
			return nil, &refusal{http.StatusConflict, "Snapshot " + snap.Name + " is not a Snapshot of application " + req.Application}
		}
		user := ArgoCDIdentityPrefix + strings.TrimSpace(r.Header.Get(HeaderUsername))
		return &as.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: runName(snap.Name + "-into-" + req.Environment)},
			// What the user approves is this Snapshot with this content: one
			// re-created under the name later is not approved.
			Spec: as.PromotionApprovalSpec{Snapshot: snap.Name, SnapshotIdentity: snap.Identity(), Environment: req.Environment, Application: req.Application,
				Comment: req.Comment, Approver: as.Approver{User: user}}}, nil
	})
}

// freeze sets (or unfreeze clears) the freeze switch of an Environment of the
// binding's namespace, naming the Argo CD user who did it. Any mapped user
// freezes; only the tenant's release managers unfreeze.
func (s *Server) freeze(frozen bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req api.FreezeRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.Environment == "" {
			writeError(w, http.StatusBadRequest, `the body must be {"environment": "<Environment>", "reason": "<why, optional>"}`)
			return
		}
		if len(req.Reason) > 256 {
			writeError(w, http.StatusBadRequest, "the reason is at most 256 characters")
			return
		}
		s.actOn(w, r, ownership.KindBinding, func(ns, name, uid string) (client.Object, error) {
			// Freezing tightens a gate: every mapped user may. Unfreezing lifts it.
			if !frozen {
				if err := s.authorizeGateKeeper(r, ns, "unfreeze Environment "+req.Environment); err != nil {
					return nil, err
				}
			}
			if err := s.get(r, client.ObjectKey{Namespace: ns, Name: name}, &as.SnapshotEnvironmentBinding{}, uid); err != nil {
				return nil, err
			}
			env := &as.Environment{}
			if err := s.mustExist(r, ns, req.Environment, env, "Environment"); err != nil {
				return nil, err
			}
			patch := client.MergeFromWithOptions(env.DeepCopy(), client.MergeFromWithOptimisticLock{})
			if env.Spec.Gates == nil {
				env.Spec.Gates = &as.PromotionGates{}
			}
			by := ArgoCDIdentityPrefix + strings.TrimSpace(r.Header.Get(HeaderUsername))
			env.Spec.Gates.Freeze = &as.FreezeSwitch{Frozen: false, By: by}
			if frozen {
				since := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
				env.Spec.Gates.Freeze = &as.FreezeSwitch{Frozen: true, By: by, Reason: req.Reason, Since: &since}
			}
			if err := s.Writer.Patch(r.Context(), env, patch); err != nil {
				if apierrors.IsConflict(err) {
					return nil, &refusal{http.StatusConflict, "Environment " + env.Name + " changed meanwhile; try again"}
				}
				return nil, &writeFailed{err: err, what: "cannot change Environment " + env.Name}
			}
			return env, nil
		})
	}
}

// mustExist reads name in ns; a missing one is refused.
func (s *Server) mustExist(r *http.Request, ns, name string, obj client.Object, kind string) error {
	err := s.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return &refusal{http.StatusBadRequest, "there is no " + kind + " " + name + " in namespace " + ns}
	}
	return err
}
