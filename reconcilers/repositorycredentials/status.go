package repositorycredentials

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Reasons of a refusal that is about the credentials rather than the URL.
var credentialReasons = map[string]bool{
	v1.RepositoryCredentialReasonSecretNotSpecified: true,
	v1.RepositoryCredentialReasonSecretNotFound:     true,
	v1.RepositoryCredentialReasonSecretInvalidType:  true,
	v1.RepositoryCredentialReasonInvalidCredentials: true,
}

// firstRefusal is what the user must fix: the refusal that kept the
// credentials from Argo CD, else what checking them found (Argo CD keeps
// them then: Keep), else nil.
func firstRefusal(refusal *kernel.Refusal, v Verdict) *kernel.Refusal {
	if found := cmp.Or(v.URL, v.Credential); refusal == nil && found != nil {
		kept := *found
		return kept.Keeping()
	}
	return refusal
}

// conditions derives the three conditions from refusal, when Argo CD was not
// given the credentials, else from the verdict of checking them:
// ErrorOccurred says whether anything is wrong (and what first);
// ValidRepositoryUrl and ValidRepositoryCredential say what was found about
// each, Unknown when an earlier problem kept it from being checked.
func conditions(refusal *kernel.Refusal, v Verdict) []metav1.Condition {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	notChecked := func(t, why string) metav1.Condition {
		return cond(t, metav1.ConditionUnknown, v1.RepositoryCredentialReasonNotChecked, why)
	}
	const (
		errType  = v1.RepositoryCredentialConditionErrorOccurred
		urlType  = v1.RepositoryCredentialConditionValidRepositoryURL
		credType = v1.RepositoryCredentialConditionValidCredential
	)
	if r := refusal; r != nil {
		errCond := cond(errType, metav1.ConditionTrue, r.Reason, r.Message+" Argo CD has no credentials for this repository until this is fixed.")
		switch {
		case r.Reason == v1.RepositoryCredentialReasonInvalidRepositoryURL:
			return []metav1.Condition{errCond, cond(urlType, metav1.ConditionFalse, r.Reason, r.Message), notChecked(credType, "the repository URL is invalid")}
		case credentialReasons[r.Reason]:
			return []metav1.Condition{errCond, notChecked(urlType, "the credentials are unusable"), cond(credType, metav1.ConditionFalse, r.Reason, r.Message)}
		default:
			return []metav1.Condition{errCond, notChecked(urlType, r.Message), notChecked(credType, r.Message)}
		}
	}
	switch {
	case v.URL != nil:
		return []metav1.Condition{cond(errType, metav1.ConditionTrue, v.URL.Reason, v.URL.Message),
			cond(urlType, metav1.ConditionFalse, v.URL.Reason, v.URL.Message), notChecked(credType, "the repository could not be reached")}
	case v.Credential != nil:
		return []metav1.Condition{cond(errType, metav1.ConditionTrue, v.Credential.Reason, v.Credential.Message),
			cond(urlType, metav1.ConditionTrue, v1.RepositoryCredentialReasonValidRepositoryURL, "the repository answered"),
			cond(credType, metav1.ConditionFalse, v.Credential.Reason, v.Credential.Message)}
	}
	return []metav1.Condition{cond(errType, metav1.ConditionFalse, v1.RepositoryCredentialReasonRepositoryCredentialUpToDate, "Argo CD has the credentials of this repository"),
		cond(urlType, metav1.ConditionTrue, v1.RepositoryCredentialReasonValidRepositoryURL, "the repository answered"),
		cond(credType, metav1.ConditionTrue, v1.RepositoryCredentialReasonRepositoryCredentialUpToDate, "the repository accepted the credentials")}
}
