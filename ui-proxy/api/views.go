package api

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// Deployment is the panel's view of the GitOps Service object behind an
// Application (GET /api/v1/deployment).
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
	// History is what ran in the binding's Environment.
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
	// Started is when its sync started (empty: not yet, or refused).
	Started string `json:"started,omitempty"`
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
	// Analysis are the results of the Environment's analysis checks.
	Analysis []AnalysisResult `json:"analysis,omitempty"`
}

// AnalysisResult is the result of one analysis check of a step: the value
// measured, successes and failures, when it was last measured and when the
// next measurement is due (RFC 3339; Next is empty once the check ended).
type AnalysisResult struct {
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	Value     string `json:"value,omitempty"`
	Successes int32  `json:"successes,omitempty"`
	Failures  int32  `json:"failures,omitempty"`
	Message   string `json:"message,omitempty"`
	Last      string `json:"last,omitempty"`
	Next      string `json:"next,omitempty"`
}

// AnalysisOf are the views of analysis results.
func AnalysisOf(results []as.AnalysisCheckStatus) []AnalysisResult {
	var out []AnalysisResult
	for _, r := range results {
		v := AnalysisResult{Name: r.Name, Phase: string(r.Phase), Value: r.Value, Successes: r.Successes, Failures: r.Failures, Message: r.Message}
		if r.LastCheckTime != nil {
			v.Last = Timestamp(*r.LastCheckTime)
		}
		if r.NextCheckTime != nil {
			v.Next = Timestamp(*r.NextCheckTime)
		}
		out = append(out, v)
	}
	return out
}

// analysisStatus are the results the views show.
func analysisStatus(views []AnalysisResult) []as.AnalysisCheckStatus {
	var out []as.AnalysisCheckStatus
	for _, v := range views {
		r := as.AnalysisCheckStatus{Name: v.Name, Phase: as.AnalysisPhase(v.Phase), Value: v.Value, Successes: v.Successes, Failures: v.Failures, Message: v.Message}
		if v.Last != "" {
			t := parseTime(v.Last)
			r.LastCheckTime = &t
		}
		if v.Next != "" {
			t := parseTime(v.Next)
			r.NextCheckTime = &t
		}
		out = append(out, r)
	}
	return out
}

// HistoryEntry is one promotion or rollback into an Environment (its
// PromotionHistory), newest first.
type HistoryEntry struct {
	PromotionRun string   `json:"promotionRun"`
	Kind         string   `json:"kind"`
	Snapshot     string   `json:"snapshot"`
	Result       string   `json:"result"`
	Completed    string   `json:"completed"`
	PromotedBy   string   `json:"promotedBy,omitempty"`
	ApprovedBy   []string `json:"approvedBy,omitempty"`
	RolledBackBy string   `json:"rolledBackBy,omitempty"`
	// Verifications: what the Environment's signature gate verified of each image.
	Verifications []as.ImageVerification `json:"verifications,omitempty"`
	// Analysis are the results of the Environment's analysis checks for it.
	Analysis []AnalysisResult `json:"analysis,omitempty"`
}

// History is the view of the PromotionHistory of an application and
// Environment.
type History struct {
	// Application and Environment: set in the answers of GET /api/v1/history
	// (a Deployment's History is its own binding's).
	Application string         `json:"application,omitempty"`
	Environment string         `json:"environment,omitempty"`
	Entries     []HistoryEntry `json:"entries,omitempty"`
	Rejected    []string       `json:"rejected,omitempty"`
	// HeldSince is when a rollback held automated promotion out of the
	// Environment, while it is held.
	HeldSince string `json:"heldSince,omitempty"`
	HeldBy    string `json:"heldBy,omitempty"`
	// HeldSnapshot is the Snapshot the holding rollback rolled back.
	HeldSnapshot string `json:"heldSnapshot,omitempty"`
}

// Histories is the answer of GET /api/v1/history.
type Histories struct {
	Namespace string    `json:"namespace"`
	Items     []History `json:"items"`
}

// Preview is the view of a PromotionPreview: what promoting its Snapshot to
// an Environment would change.
type Preview struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Snapshot    string `json:"snapshot"`
	Environment string `json:"environment"`
	// Completed: the preview ran; Clean: without render or dry-run errors.
	Completed   bool                         `json:"completed"`
	CompletedAt *metav1.Time                 `json:"completedAt,omitempty"`
	Clean       bool                         `json:"clean"`
	Components  []as.PreviewComponentSummary `json:"components,omitempty"`
	// Diff is the full diff when the sidecar still has it (Full), else the
	// status's capped one (Truncated says it was cut).
	Diff       string      `json:"diff,omitempty"`
	Full       bool        `json:"full"`
	Truncated  bool        `json:"truncated,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	// AllEnvironments: a release preview; Environments are its results in
	// each Environment of the path (each component with its render hash).
	AllEnvironments bool                          `json:"allEnvironments,omitempty"`
	Environments    []as.PreviewEnvironmentResult `json:"environments,omitempty"`
}

// Timestamp is how views write times.
func Timestamp(t metav1.Time) string { return t.UTC().Format(time.RFC3339) }

func parseTime(s string) metav1.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return metav1.NewTime(t)
}

// ConditionsOf are the views of conditions.
func ConditionsOf(cs []metav1.Condition) []Condition {
	var out []Condition
	for _, c := range cs {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// GitOpsConditionsOf are the views of a GitOpsDeployment's conditions.
func GitOpsConditionsOf(cs []v1.GitOpsDeploymentCondition) []Condition {
	var out []Condition
	for _, c := range cs {
		out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: string(c.Reason), Message: c.Message})
	}
	return out
}

func metaConditions(cs []Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range cs {
		out = append(out, metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// GitOpsDeployment is the GitOpsDeployment the view shows (uid and the
// synced revision come from its Argo CD Application).
func (d *Deployment) GitOpsDeployment(uid types.UID, revision string) *v1.GitOpsDeployment {
	gd := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, UID: uid}}
	gd.Spec.Type = v1.GitOpsDeploymentSpecType(d.Type)
	if d.Source != nil {
		gd.Spec.Source = v1.ApplicationSource{RepoURL: d.Source.RepoURL, Path: d.Source.Path, TargetRevision: d.Source.TargetRevision}
	}
	if d.Destination != nil {
		gd.Spec.Destination = v1.ApplicationDestination{Environment: d.Destination.Environment, Namespace: d.Destination.Namespace}
	}
	gd.Status.Sync.Status = v1.SyncStatusCode(d.Sync)
	gd.Status.Sync.Revision = revision
	gd.Status.Health.Status = v1.HealthStatusCode(d.Health)
	for _, c := range d.Conditions {
		gd.Status.Conditions = append(gd.Status.Conditions, v1.GitOpsDeploymentCondition{Type: v1.GitOpsConditionType(c.Type),
			Status: v1.GitOpsConditionStatus(c.Status), Reason: v1.GitOpsConditionReason(c.Reason), Message: c.Message})
	}
	return gd
}

// Binding is the SnapshotEnvironmentBinding the view shows.
func (d *Deployment) Binding() *as.SnapshotEnvironmentBinding {
	b := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: d.Application, Environment: d.Environment, Snapshot: d.Snapshot}}
	for _, c := range d.Components {
		b.Status.GitOpsDeployments = append(b.Status.GitOpsDeployments, as.BindingStatusGitOpsDeployment{ComponentName: c.Name,
			GitOpsDeploymentSyncStatus: c.Sync, GitOpsDeploymentHealthStatus: c.Health, GitOpsDeploymentCommitID: c.Commit})
	}
	for _, c := range metaConditions(d.Conditions) {
		if c.Type == as.ComponentDeploymentConditionAllComponentsDeployed {
			b.Status.ComponentDeploymentConditions = append(b.Status.ComponentDeploymentConditions, c)
		} else {
			b.Status.BindingConditions = append(b.Status.BindingConditions, c)
		}
	}
	return b
}

// SyncRunOf is the view of a SyncRun.
func SyncRunOf(sr *v1.GitOpsDeploymentSyncRun) SyncRun {
	run := SyncRun{Name: sr.Name, Revision: sr.Status.Revision, Phase: string(sr.Status.Phase), Sync: string(sr.Status.SyncStatus),
		Health: string(sr.Status.Health), Created: Timestamp(sr.CreationTimestamp)}
	if run.Revision == "" {
		run.Revision = sr.Spec.RevisionID
	}
	if sr.Status.StartedAt != nil {
		run.Started = Timestamp(*sr.Status.StartedAt)
	}
	for _, c := range sr.Status.Conditions {
		if c.Type == v1.GitOpsDeploymentConditionErrorOccurred && c.Status == v1.GitOpsConditionStatusTrue {
			run.Message = c.Message
		}
	}
	return run
}

// Status is the status the view of a SyncRun shows.
func (r SyncRun) Status() v1.GitOpsDeploymentSyncRunStatus {
	st := v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationPhase(r.Phase), SyncStatus: v1.SyncStatusCode(r.Sync),
		Health: v1.HealthStatusCode(r.Health), Revision: r.Revision}
	if r.Started != "" {
		t := parseTime(r.Started)
		st.StartedAt = &t
	}
	if r.Message != "" {
		st.Conditions = []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue,
			Reason: v1.GitOpsDeploymentReasonErrorOccurred, Message: r.Message}}
	}
	return st
}

// PromotionRunOf is the view of a PromotionRun.
func PromotionRunOf(p *as.PromotionRun) PromotionRun {
	run := PromotionRun{Name: p.Name, Snapshot: p.Spec.Snapshot, State: string(p.Status.State),
		Result: string(p.Status.CompletionResult), Created: Timestamp(p.CreationTimestamp),
		Conditions: ConditionsOf(p.Status.Conditions)}
	if p.Spec.ManualPromotion != nil {
		run.Target = p.Spec.ManualPromotion.TargetEnvironment
	}
	if p.Spec.AutomatedPromotion != nil {
		run.Initial = p.Spec.AutomatedPromotion.InitialEnvironment
	}
	for _, e := range p.Status.EnvironmentStatus {
		run.Environments = append(run.Environments, e.EnvironmentName+": "+string(e.Status))
		run.Steps = append(run.Steps, Step{Step: e.Step, Environment: e.EnvironmentName, Status: string(e.Status), Message: e.DisplayStatus,
			Analysis: AnalysisOf(e.Analysis)})
	}
	return run
}

// Status is the status the view of a PromotionRun shows.
func (r PromotionRun) Status() as.PromotionRunStatus {
	st := as.PromotionRunStatus{State: as.PromotionRunState(r.State), CompletionResult: as.PromotionRunCompleteResult(r.Result),
		Conditions: metaConditions(r.Conditions)}
	for _, s := range r.Steps {
		st.EnvironmentStatus = append(st.EnvironmentStatus, as.PromotionRunEnvironmentStatus{Step: s.Step, EnvironmentName: s.Environment,
			Status: as.PromotionRunEnvironmentStatusField(s.Status), DisplayStatus: s.Message, Analysis: analysisStatus(s.Analysis)})
	}
	return st
}

// HistoryOf is the view of a PromotionHistory (entries newest first).
func HistoryOf(h *as.PromotionHistory) *History {
	out := &History{Application: h.Spec.Application, Environment: h.Spec.Environment}
	for i := len(h.Status.Entries) - 1; i >= 0; i-- {
		e := h.Status.Entries[i]
		out.Entries = append(out.Entries, HistoryEntry{PromotionRun: e.PromotionRun, Kind: string(e.Kind), Snapshot: e.Snapshot, Result: string(e.Result),
			Completed: Timestamp(e.CompletionTime), PromotedBy: e.PromotedBy, ApprovedBy: e.ApprovedBy, RolledBackBy: e.RolledBackBy,
			Verifications: e.Verifications, Analysis: AnalysisOf(e.Analysis)})
	}
	for _, r := range h.Status.Rejected {
		out.Rejected = append(out.Rejected, r.Snapshot)
	}
	if h.Held() {
		out.HeldSince, out.HeldBy, out.HeldSnapshot = Timestamp(h.Status.Hold.Since), h.Status.Hold.PromotionRun, h.Status.Hold.Snapshot
	}
	return out
}

// Object is the PromotionHistory (of namespace ns) the view shows (entries
// oldest first, as the object keeps them).
func (v History) Object(ns string) as.PromotionHistory {
	h := as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: as.PromotionHistoryName(v.Application, v.Environment)},
		Spec: as.PromotionHistorySpec{Application: v.Application, Environment: v.Environment}}
	for i := len(v.Entries) - 1; i >= 0; i-- {
		e := v.Entries[i]
		h.Status.Entries = append(h.Status.Entries, as.PromotionHistoryEntry{PromotionRun: e.PromotionRun, Kind: as.PromotionKind(e.Kind), Snapshot: e.Snapshot,
			Result: as.PromotionRunCompleteResult(e.Result), CompletionTime: parseTime(e.Completed), PromotedBy: e.PromotedBy, ApprovedBy: e.ApprovedBy, RolledBackBy: e.RolledBackBy,
			Verifications: e.Verifications, Analysis: analysisStatus(e.Analysis)})
	}
	for _, r := range v.Rejected {
		h.Status.Rejected = append(h.Status.Rejected, as.RejectedSnapshot{Snapshot: r})
	}
	if v.HeldSince != "" {
		h.Status.Hold = &as.PromotionHold{Since: parseTime(v.HeldSince), PromotionRun: v.HeldBy, Snapshot: v.HeldSnapshot}
	}
	return h
}

// Status is the status the view of a preview shows: completed only when
// it ran (its diff the full one when the sidecar still had it).
func (v *Preview) Status() as.PromotionPreviewStatus {
	st := as.PromotionPreviewStatus{Clean: v.Clean, Components: v.Components, Diff: v.Diff, DiffTruncated: v.Truncated,
		Conditions: metaConditions(v.Conditions)}
	if v.Completed {
		st.CompletedAt = v.CompletedAt
	}
	return st
}
