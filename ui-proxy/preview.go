package uiproxy

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/ui-proxy/api"
)

// PreviewDiffs holds the full diff of the previews the sidecar ran (a
// preview's status holds a capped one).
type PreviewDiffs interface {
	Get(key types.NamespacedName, generation int64) (string, error)
}

// preview creates a PromotionPreview of the binding's Snapshot to the
// Environment the request names, in the binding's namespace, with the checks
// of promote (the user must be named by the tenant mapping).
func (s *Server) createPreview(w http.ResponseWriter, r *http.Request) {
	var req api.PromoteRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || (req.Environment == "") == !req.AllEnvironments {
		writeError(w, http.StatusBadRequest, `the body must be {"environment": "<Environment to preview a promotion to>"} or {"allEnvironments": true}`)
		return
	}
	s.act(w, r, ownership.KindBinding, func(ns, name, uid string) (client.Object, error) {
		if req.AllEnvironments {
			seb, snap, err := s.released(r, ns, name, uid)
			if err != nil {
				return nil, err
			}
			return &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: runName(snap.Name + "-preview-all")},
				Spec: as.PromotionPreviewSpec{Snapshot: snap.Name, Application: seb.Spec.Application, AllEnvironments: true}}, nil
		}
		seb, snap, env, err := s.promotion(r, ns, name, uid, req.Environment)
		if err != nil {
			return nil, err
		}
		return &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: runName(snap.Name + "-preview-" + env.Name)},
			Spec: as.PromotionPreviewSpec{Snapshot: snap.Name, Application: seb.Spec.Application, TargetEnvironment: env.Name}}, nil
	})
}

// getPreview answers a PromotionPreview named by ?name= of the
// Application's application, in its binding's namespace: nothing of
// another namespace or application.
func (s *Server) getPreview(w http.ResponseWriter, r *http.Request) {
	app, status, msg := s.application(r)
	if app == nil {
		writeError(w, status, msg)
		return
	}
	key, ok := ownership.Owner(app, ownership.KindBinding)
	if !ok || app.Labels[ownership.LabelOwnerKind] != ownership.KindBinding {
		writeError(w, http.StatusBadRequest, "Application "+app.Name+" is not made for a "+ownership.KindBinding)
		return
	}
	seb := &as.SnapshotEnvironmentBinding{}
	err := s.get(r, key, seb, app.Labels[ownership.LabelOwnerUID])
	var gone *ownerGone
	if errors.As(err, &gone) {
		writeError(w, http.StatusNotFound, gone.Error())
		return
	} else if err != nil {
		ctrl.LoggerFrom(r.Context()).Error(err, "ui-proxy: reading a binding", "application", app.Name)
		writeError(w, http.StatusInternalServerError, "cannot read the GitOps Service object of this Application; see the gitops-service log")
		return
	}
	name := r.URL.Query().Get("name")
	pp := &as.PromotionPreview{}
	err = s.Client.Get(r.Context(), client.ObjectKey{Namespace: key.Namespace, Name: name}, pp)
	if apierrors.IsNotFound(err) || (err == nil && pp.Spec.Application != seb.Spec.Application) || name == "" {
		writeError(w, http.StatusNotFound, "no PromotionPreview "+name+" of application "+seb.Spec.Application+" in namespace "+key.Namespace)
		return
	} else if err != nil {
		ctrl.LoggerFrom(r.Context()).Error(err, "ui-proxy: reading a PromotionPreview", "namespace", key.Namespace, "name", name)
		writeError(w, http.StatusInternalServerError, "cannot read the PromotionPreview; see the gitops-service log")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.previewView(pp))
}

func (s *Server) previewView(pp *as.PromotionPreview) Preview {
	st := pp.Status
	done := st.CompletedAt != nil && st.ObservedGeneration == pp.Generation
	v := Preview{Namespace: pp.Namespace, Name: pp.Name, Snapshot: pp.Spec.Snapshot, Environment: pp.Spec.TargetEnvironment,
		Completed: done, Clean: done && st.Clean, Components: st.Components, Diff: st.Diff, Truncated: st.DiffTruncated,
		Conditions: api.ConditionsOf(st.Conditions), AllEnvironments: pp.Spec.AllEnvironments, Environments: st.Environments}
	if done {
		v.CompletedAt = st.CompletedAt
	}
	if done && s.Diffs != nil {
		if full, err := s.Diffs.Get(client.ObjectKeyFromObject(pp), pp.Generation); err == nil {
			v.Diff, v.Full, v.Truncated = full, true, false
		}
	}
	if done && !v.Truncated && v.Diff == st.Diff {
		v.Full = true
	}
	return v
}

// released reads and checks what a release preview of binding ns/name (UID
// uid) starts from: the binding and its Snapshot, of its application.
func (s *Server) released(r *http.Request, ns, name, uid string) (*as.SnapshotEnvironmentBinding, *as.Snapshot, error) {
	seb := &as.SnapshotEnvironmentBinding{}
	if err := s.get(r, client.ObjectKey{Namespace: ns, Name: name}, seb, uid); err != nil {
		return nil, nil, err
	}
	snap := &as.Snapshot{}
	err := s.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: seb.Spec.Snapshot}, snap)
	if apierrors.IsNotFound(err) || (err == nil && snap.Spec.Application != seb.Spec.Application) {
		return nil, nil, &refusal{http.StatusConflict, "Snapshot " + seb.Spec.Snapshot + " is not a Snapshot of application " + seb.Spec.Application}
	} else if err != nil {
		return nil, nil, err
	}
	return seb, snap, nil
}

// promotion reads and checks what a promotion (or its preview) of binding
// ns/name (UID uid) to Environment envName starts from.
func (s *Server) promotion(r *http.Request, ns, name, uid, envName string) (*as.SnapshotEnvironmentBinding, *as.Snapshot, *as.Environment, error) {
	seb := &as.SnapshotEnvironmentBinding{}
	if err := s.get(r, client.ObjectKey{Namespace: ns, Name: name}, seb, uid); err != nil {
		return nil, nil, nil, err
	}
	env := &as.Environment{}
	err := s.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: envName}, env)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil, &refusal{http.StatusBadRequest, "there is no Environment " + envName + " in namespace " + ns}
	} else if err != nil {
		return nil, nil, nil, err
	}
	if envName == seb.Spec.Environment {
		return nil, nil, nil, &refusal{http.StatusBadRequest, "Snapshot " + seb.Spec.Snapshot + " already runs in " + envName + "; choose another Environment"}
	}
	snap := &as.Snapshot{}
	err = s.Client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: seb.Spec.Snapshot}, snap)
	if apierrors.IsNotFound(err) || (err == nil && snap.Spec.Application != seb.Spec.Application) {
		return nil, nil, nil, &refusal{http.StatusConflict, "Snapshot " + seb.Spec.Snapshot + " is not a Snapshot of application " + seb.Spec.Application}
	} else if err != nil {
		return nil, nil, nil, err
	}
	return seb, snap, env, nil
}
