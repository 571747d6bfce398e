package argocd

import (
	"fmt"
	"path"
	"sort"
	"strings"

	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// DeploymentStatus is the part of a GitOpsDeployment's status mirrored from its
// Application. Conditions are returned separately: the caller merges them.
type DeploymentStatus struct {
	Sync            v1.SyncStatus
	Health          v1.HealthStatus
	Resources       []v1.ResourceStatus
	ReconciledState v1.ReconciledState
	OperationState  *v1.OperationState
	// Conditions are the Application's current conditions, type = reason = Argo CD's type.
	Conditions []AppCondition
}

// AppCondition is one Argo CD Application condition.
type AppCondition struct {
	Type    string
	Message string
}

// ServerNames maps a destination server URL back to the ManagedEnvironment name
// shown in reconciledState (the local cluster maps to "").
type ServerNames map[string]string

// MirrorStatus reads an Application's status into our terms.
func MirrorStatus(app *argov1alpha1.Application, names ServerNames) DeploymentStatus {
	st := app.Status
	out := DeploymentStatus{
		Sync:   v1.SyncStatus{Status: v1.SyncStatusCode(st.Sync.Status), Revision: st.Sync.Revision},
		Health: v1.HealthStatus{Status: v1.HealthStatusCode(st.Health.Status), Message: st.Health.Message},
	}
	for _, r := range st.Resources {
		rs := v1.ResourceStatus{
			Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Status: v1.SyncStatusCode(r.Status),
		}
		if r.Health != nil {
			rs.Health = &v1.HealthStatus{Status: v1.HealthStatusCode(r.Health.Status), Message: r.Health.Message}
		}
		out.Resources = append(out.Resources, rs)
	}
	if cmp := st.Sync.ComparedTo; cmp.Source.RepoURL != "" {
		out.ReconciledState = v1.ReconciledState{
			Source: v1.GitOpsDeploymentSource{
				RepoURL: cmp.Source.RepoURL, Path: cmp.Source.Path, Branch: cmp.Source.TargetRevision,
			},
			Destination: v1.GitOpsDeploymentDestination{
				Name: names[cmp.Destination.Server], Namespace: cmp.Destination.Namespace,
			},
		}
	}
	out.OperationState = operationState(st.OperationState)
	refused := refusedResources(st.OperationState)
	for _, c := range st.Conditions {
		if c.Type == argov1alpha1.ApplicationConditionSyncError && refused != "" {
			c.Message += "; " + refused
			refused = ""
		}
		out.Conditions = append(out.Conditions, AppCondition{Type: c.Type, Message: c.Message})
	}
	if refused != "" {
		out.Conditions = append(out.Conditions, AppCondition{Type: argov1alpha1.ApplicationConditionSyncError, Message: refused})
	}
	sort.SliceStable(out.Conditions, func(i, j int) bool { return out.Conditions[i].Type < out.Conditions[j].Type })
	return out
}

// maxRefusedShown caps how many refused resources a SyncError names.
const maxRefusedShown = 10

// refusedResources names the resources of the current or last sync that Argo
// CD refused before applying anything (the project fence: a namespace, a
// cluster-scoped kind; or an unknown kind), with Argo CD's reason. Argo CD
// itself only says "one or more synchronization tasks are not valid" and keeps
// retrying, so without this the refusal is invisible. "" when none.
func refusedResources(op *argov1alpha1.OperationState) string {
	if op == nil || op.SyncResult == nil || op.Phase == synccommon.OperationSucceeded {
		return ""
	}
	var names []string
	n := 0
	for _, r := range op.SyncResult.Resources {
		if r == nil || r.Status != synccommon.ResultCodeSyncFailed || r.Message == "" {
			continue
		}
		n++
		if len(names) < maxRefusedShown {
			gk := r.Kind
			if r.Group != "" {
				gk += "." + r.Group
			}
			names = append(names, fmt.Sprintf("%s %s: %s", gk, path.Join(r.Namespace, r.Name), r.Message))
		}
	}
	if n == 0 {
		return ""
	}
	more := ""
	if n > len(names) {
		more = fmt.Sprintf(" (and %d more)", n-len(names))
	}
	return fmt.Sprintf("Argo CD could not sync %d resource(s): %s%s", n, strings.Join(names, "; "), more)
}

func operationState(in *argov1alpha1.OperationState) *v1.OperationState {
	if in == nil {
		return nil
	}
	out := &v1.OperationState{
		Operation:  operation(in.Operation),
		Phase:      v1.OperationPhase(in.Phase),
		Message:    in.Message,
		StartedAt:  in.StartedAt,
		RetryCount: in.RetryCount,
	}
	if in.FinishedAt != nil {
		t := *in.FinishedAt
		out.FinishedAt = &t
	}
	if r := in.SyncResult; r != nil {
		res := &v1.SyncOperationResult{Revision: r.Revision}
		res.Source = v1.ApplicationSource{RepoURL: r.Source.RepoURL, Path: r.Source.Path, TargetRevision: r.Source.TargetRevision}
		for _, rr := range r.Resources {
			if rr == nil {
				continue
			}
			res.Resources = append(res.Resources, v1.ResourceResult{
				Group: rr.Group, Version: rr.Version, Kind: rr.Kind, Namespace: rr.Namespace, Name: rr.Name,
				Status: string(rr.Status), Message: rr.Message, HookType: string(rr.HookType),
				HookPhase: string(rr.HookPhase), SyncPhase: string(rr.SyncPhase),
			})
		}
		out.SyncResult = res
	}
	return out
}

func operation(in argov1alpha1.Operation) v1.Operation {
	out := v1.Operation{
		InitiatedBy: v1.OperationInitiator{Username: in.InitiatedBy.Username, Automated: in.InitiatedBy.Automated},
		Retry:       v1.RetryStrategy{Limit: in.Retry.Limit},
	}
	if b := in.Retry.Backoff; b != nil {
		out.Retry.Backoff = &v1.Backoff{Duration: b.Duration, MaxDuration: b.MaxDuration}
		if b.Factor != nil {
			f := *b.Factor
			out.Retry.Backoff.Factor = &f
		}
	}
	for _, i := range in.Info {
		if i != nil {
			out.Info = append(out.Info, v1.Info{Name: i.Name, Value: i.Value})
		}
	}
	if s := in.Sync; s != nil {
		so := &v1.SyncOperation{Revision: s.Revision, Prune: s.Prune, DryRun: s.DryRun, SyncOptions: append([]string(nil), s.SyncOptions...)}
		for _, r := range s.Resources {
			so.Resources = append(so.Resources, v1.SyncOperationResource{Group: r.Group, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace})
		}
		out.Sync = so
	}
	return out
}

// SyncError is the SyncError an Application's owner shows (Argo CD's, with the
// resources it could not sync named), or "" when there is none.
func SyncError(app *argov1alpha1.Application) string {
	refused := refusedResources(app.Status.OperationState)
	for _, c := range app.Status.Conditions {
		if c.Type == argov1alpha1.ApplicationConditionSyncError {
			if refused != "" {
				return c.Message + "; " + refused
			}
			return c.Message
		}
	}
	return refused
}
