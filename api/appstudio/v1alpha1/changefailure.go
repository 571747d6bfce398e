/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import "time"

// Causes of a failed change (the delivery metrics' cause label).
const (
	ChangeFailureFailed     = "failed"
	ChangeFailureRolledBack = "rolled_back"
	ChangeFailureAnalysis   = "analysis"
)

// ChangeFailure is why the entry is a failed change, for the change failure
// rate: ChangeFailureAnalysis (an analysis check failed it),
// ChangeFailureFailed (verification failed or timed out otherwise),
// ChangeFailureRolledBack (verified, later rolled back), or "" when it is not.
func (e *PromotionHistoryEntry) ChangeFailure() string {
	switch {
	case e.Result == PromotionRunCompleteResultFailure:
		for _, a := range e.Analysis {
			if a.Phase == AnalysisFailed {
				return ChangeFailureAnalysis
			}
		}
		return ChangeFailureFailed
	case e.Result == PromotionRunCompleteResultSuccess && e.RolledBackBy != "":
		return ChangeFailureRolledBack
	}
	return ""
}

// ChangeFailures counts the changes (promotions, not rollbacks) into the
// history's Environment that completed at or after since, and how many of
// them failed (ChangeFailure): the change failure rate over that window, as
// the delivery metrics count it.
func (h *PromotionHistory) ChangeFailures(since time.Time) (changes, failures int) {
	for i := range h.Status.Entries {
		e := &h.Status.Entries[i]
		if e.Kind != PromotionKindPromotion || e.CompletionTime.Time.Before(since) {
			continue
		}
		changes++
		if e.ChangeFailure() != "" {
			failures++
		}
	}
	return changes, failures
}
