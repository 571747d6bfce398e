// Package promotionpolicy checks PromotionPolicies: at admission (a
// validating webhook the sidecar serves, with a certificate it manages,
// certs.go) a policy whose rules do not compile, are not bools or may cost
// too much is refused; the reconciler says the same on the policy's Ready
// condition for one written while the webhook was not there.
package promotionpolicy

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
)

// WebhookPath is where the webhook is served (controller-runtime's path for the kind).
const WebhookPath = "/validate-appstudio-redhat-com-v1alpha1-promotionpolicy"

// Validator refuses a PromotionPolicy whose selectors or rules are not usable.
type Validator struct{}

var _ admission.CustomValidator = Validator{}

// SetupWebhook serves the validator on mgr's webhook server.
func SetupWebhook(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr).For(&as.PromotionPolicy{}).WithValidator(Validator{}).Complete()
}

func (Validator) ValidateCreate(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	return validate(obj)
}

func (Validator) ValidateUpdate(_ context.Context, _, obj runtime.Object) (admission.Warnings, error) {
	return validate(obj)
}

// ValidateDelete lets every deletion through.
func (Validator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func validate(obj runtime.Object) (admission.Warnings, error) {
	p, ok := obj.(*as.PromotionPolicy)
	if !ok {
		return nil, fmt.Errorf("not a PromotionPolicy: %T", obj)
	}
	if errs := Check(&p.Spec); len(errs) > 0 {
		return nil, apierrors.NewInvalid(as.GroupVersion.WithKind("PromotionPolicy").GroupKind(), p.Name, errs)
	}
	var warnings admission.Warnings
	if p.Spec.EnvironmentSelector != nil {
		warnings = append(warnings, "spec.environmentSelector matches Environment labels, which tenants edit: a tenant can take an Environment out of it (docs/policies.md)")
	}
	return warnings, nil
}

// Check is what is wrong with spec's selectors and rules, as field errors.
func Check(spec *as.PromotionPolicySpec) field.ErrorList {
	var errs field.ErrorList
	if _, err := metav1.LabelSelectorAsSelector(&spec.NamespaceSelector); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "namespaceSelector"), metav1.FormatLabelSelector(&spec.NamespaceSelector), err.Error()))
	}
	if spec.EnvironmentSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(spec.EnvironmentSelector); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "environmentSelector"), metav1.FormatLabelSelector(spec.EnvironmentSelector), err.Error()))
		}
	}
	if _, err := policyrules.Compile(spec.Rules); err != nil {
		if ce := (*policyrules.CompileError)(nil); errors.As(err, &ce) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "rules").Index(ce.Index).Child("expression"), spec.Rules[ce.Index].Expression, ce.Reason))
		} else {
			errs = append(errs, field.InternalError(field.NewPath("spec", "rules"), err))
		}
	}
	return errs
}
