// Package api is the JSON the GitOps Service's Argo CD proxy extension
// (ui-proxy) answers, and the bodies it takes: the panel's views of our CRs.
// ui-proxy builds the views from the CRs (the ...Of functions); its clients
// (the CLI with an Argo CD login) turn them back into the CRs they show (the
// methods). Both directions live here, so a field the view gains or loses is
// one change, and a round trip is tested once.
package api

import (
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// Headers of the extension's requests and answers.
const (
	// HeaderApplication and HeaderProject name the Application a request is
	// about (<namespace>:<name>) and its project; argocd-server checks that
	// the user may get it before it forwards the request.
	HeaderApplication = "Argocd-Application-Name"
	HeaderProject     = "Argocd-Project-Name"
	// HeaderVersion is on every answer: the sidecar's version.
	HeaderVersion = "Gitops-Service-Version"
	// ExtensionName is the name of the proxy extension in argocd-cm: its API
	// is under /extensions/<ExtensionName>/.
	ExtensionName = argocd.UIExtensionName
)

// Paths of the extension's API (under /extensions/<ExtensionName>).
const (
	PathDeployment = "/api/v1/deployment"
	PathSync       = "/api/v1/sync"
	PathPromote    = "/api/v1/promote"
	PathApprove    = "/api/v1/approve"
	PathFreeze     = "/api/v1/freeze"
	PathUnfreeze   = "/api/v1/unfreeze"
	PathRollback   = "/api/v1/rollback"
	PathRelease    = "/api/v1/release"
	PathHistory    = "/api/v1/history"
	PathPreview    = "/api/v1/preview"
)

// Action is the answer of an action: the object it created or changed, to
// follow in the deployment's syncRuns or promotionRuns.
type Action struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// SyncRequest is the optional body of POST /api/v1/sync.
type SyncRequest struct {
	// Revision to sync to (the SyncRun's revisionID; the SyncRun reconciler
	// checks it); empty: the deployment's target revision.
	Revision string `json:"revision,omitempty"`
}

// PromoteRequest is the body of POST /api/v1/promote and /api/v1/preview.
type PromoteRequest struct {
	// Environment is the manual promotion's target Environment.
	Environment string `json:"environment"`
	// AllEnvironments (preview only, instead of Environment): a release
	// preview into every Environment of the path.
	AllEnvironments bool `json:"allEnvironments,omitempty"`
}

// ApproveRequest is the body of POST /api/v1/approve.
type ApproveRequest struct {
	Environment string `json:"environment"`
	Snapshot    string `json:"snapshot"`
	// Application: the approval only for this Application's promotions (optional).
	Application string `json:"application,omitempty"`
	Comment     string `json:"comment,omitempty"`
}

// FreezeRequest is the body of POST /api/v1/freeze and /api/v1/unfreeze.
type FreezeRequest struct {
	Environment string `json:"environment"`
	Reason      string `json:"reason,omitempty"`
}

// ReleaseRequest is the body of POST /api/v1/release.
type ReleaseRequest struct {
	Environment string `json:"environment"`
}
