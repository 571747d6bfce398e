package uiproxy

import "github.com/gitops-service/gitops-service/ui-proxy/api"

// The views this server answers are declared in ui-proxy/api, which its
// clients (the CLI) import without the server; these names keep the
// server's callers and tests as they were.
type (
	Action           = api.Action
	Deployment       = api.Deployment
	Source           = api.Source
	Destination      = api.Destination
	SyncRun          = api.SyncRun
	EnvironmentState = api.EnvironmentState
	Condition        = api.Condition
	ComponentState   = api.ComponentState
	PromotionRun     = api.PromotionRun
	Step             = api.Step
	AnalysisResult   = api.AnalysisResult
	HistoryEntry     = api.HistoryEntry
	History          = api.History
	Histories        = api.Histories
	Preview          = api.Preview
)
