package policyrules

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Binds says whether policy binds an Environment with envLabels in a
// namespace with nsLabels: the namespace's labels (which tenants cannot
// edit) match namespaceSelector and, when it has one, the Environment's
// match environmentSelector. A selector that does not parse is an error;
// the caller then holds the promotion (a policy is never skipped).
func Binds(policy *as.PromotionPolicy, nsLabels, envLabels map[string]string) (bool, error) {
	ns, err := metav1.LabelSelectorAsSelector(&policy.Spec.NamespaceSelector)
	if err != nil {
		return false, fmt.Errorf("namespaceSelector: %w", err)
	}
	if !ns.Matches(labels.Set(nsLabels)) {
		return false, nil
	}
	if policy.Spec.EnvironmentSelector == nil {
		return true, nil
	}
	env, err := metav1.LabelSelectorAsSelector(policy.Spec.EnvironmentSelector)
	if err != nil {
		return false, fmt.Errorf("environmentSelector: %w", err)
	}
	return env.Matches(labels.Set(envLabels)), nil
}

// CheckSelectors says whether both selectors of spec parse.
func CheckSelectors(spec *as.PromotionPolicySpec) error {
	if _, err := metav1.LabelSelectorAsSelector(&spec.NamespaceSelector); err != nil {
		return fmt.Errorf("namespaceSelector: %w", err)
	}
	if spec.EnvironmentSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(spec.EnvironmentSelector); err != nil {
			return fmt.Errorf("environmentSelector: %w", err)
		}
	}
	return nil
}
