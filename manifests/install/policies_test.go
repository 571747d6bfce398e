package install

import (
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var sa = ServiceAccount{Namespace: "gitops", Name: "gitops-service"}

// shippedExtra is a further shipped policy a case adds (as another file of
// manifests/install would be).
var shippedExtra *Policy

// live is the shipped policies as an install into namespace sa.Namespace
// with a name suffix would leave them on the API server.
func live(t *testing.T, suffix string) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	shipped, err := Policies()
	if err != nil {
		t.Fatal(err)
	}
	var ps []admissionv1.ValidatingAdmissionPolicy
	var bs []admissionv1.ValidatingAdmissionPolicyBinding
	for i, s := range shipped {
		p, b := *s.Policy.DeepCopy(), *s.Binding.DeepCopy()
		p.Name += suffix
		b.Name += suffix
		b.Spec.PolicyName = p.Name
		if b.Spec.ParamRef != nil { // the force policy takes no parameter
			b.Spec.ParamRef.Namespace = sa.Namespace
		}
		p.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
		b.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 1, i, 0, time.UTC))
		ps, bs = append(ps, defaultedPolicyObj(p)), append(bs, b)
	}
	return ps, bs
}

func defaultedPolicyObj(p admissionv1.ValidatingAdmissionPolicy) admissionv1.ValidatingAdmissionPolicy {
	p.Spec = defaultedPolicy(p.Spec)
	return p
}

func TestShippedPoliciesAreFound(t *testing.T) {
	shipped, err := Policies()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range shipped {
		names[s.Policy.Name] = true
		if s.Binding.Spec.PolicyName != s.Policy.Name || len(s.Binding.Spec.ValidationActions) == 0 {
			t.Errorf("%s: binding %+v", s.File, s.Binding.Spec)
		}
	}
	for _, want := range []string{"gitops-service-promotion-approvals", "gitops-service-promotion-requesters"} {
		if !names[want] {
			t.Errorf("policy %s not among the shipped ones: %v", want, names)
		}
	}
}

func TestCheck(t *testing.T) {
	shipped, err := Policies()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		change   func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding)
		suffix   string
		enforced bool
		problem  string
	}{
		"as shipped":                      {enforced: true},
		"as shipped, names with a suffix": {suffix: "-b", enforced: true},
		"nothing installed": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			return nil, nil
		}, problem: "are not installed"},
		"a validation removed": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			ps[0].Spec.Validations = ps[0].Spec.Validations[1:]
			return ps, bs
		}, problem: "differs from the shipped one"},
		"a match condition added": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			ps[1].Spec.MatchConditions = append(ps[1].Spec.MatchConditions, admissionv1.MatchCondition{Name: "never", Expression: "false"})
			return ps, bs
		}, problem: "differs from the shipped one"},
		"failure policy Ignore": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			ignore := admissionv1.Ignore
			ps[0].Spec.FailurePolicy = &ignore
			return ps, bs
		}, problem: "differs from the shipped one"},
		"binding Warn": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			bs[0].Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
			return ps, bs
		}, problem: "is missing or differs"},
		"binding Audit beside Deny is harmless": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			extra := *bs[0].DeepCopy()
			extra.Name += "-audit"
			extra.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Audit}
			return ps, append(bs, extra)
		}, enforced: true},
		"binding deleted": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			return ps, bs[1:]
		}, problem: "is missing or differs"},
		"binding's parameter another ServiceAccount": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			bs[bindingIndex(t, bs, "gitops-service-promotion-requesters")].Spec.ParamRef.Namespace = "tenant"
			return ps, bs
		}, problem: "is missing or differs"},
		"binding scoped to some namespaces": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			bs[0].Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
			return ps, bs
		}, problem: "is missing or differs"},
		"a policy whose parameter is not the ServiceAccount keeps its name, in the install's namespace": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			// As a policy whose parameter is a ConfigMap would be shipped and installed.
			p, b := *ps[0].DeepCopy(), *bs[0].DeepCopy()
			p.Name, b.Name, b.Spec.PolicyName = "other", "other", "other"
			p.Spec.ParamKind = &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			b.Spec.ParamRef.Name = "settings"
			shippedExtra = &Policy{File: "admission-x.yaml", Policy: p, Binding: b}
			shippedExtra.Binding.Spec.ParamRef = &admissionv1.ParamRef{Name: "settings", Namespace: "argocd", ParameterNotFoundAction: b.Spec.ParamRef.ParameterNotFoundAction}
			return append(ps, defaultedPolicyObj(p)), append(bs, b)
		}, enforced: true},
		"binding being deleted": {change: func(ps []admissionv1.ValidatingAdmissionPolicy, bs []admissionv1.ValidatingAdmissionPolicyBinding) ([]admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding) {
			now := metav1.Now()
			bs[0].DeletionTimestamp = &now
			return ps, bs
		}, problem: "is missing or differs"},
	} {
		t.Run(name, func(t *testing.T) {
			ps, bs := live(t, tc.suffix)
			shippedExtra = nil
			if tc.change != nil {
				ps, bs = tc.change(ps, bs)
			}
			all := shipped
			if shippedExtra != nil {
				all = append(append([]Policy{}, shipped...), *shippedExtra)
			}
			got := Check(all, ps, bs, sa)
			if got.Enforced() != tc.enforced {
				t.Fatalf("Enforced = %v (%s), want %v", got.Enforced(), got.Problem, tc.enforced)
			}
			if tc.enforced {
				if want := time.Date(2026, 1, 1, 0, 1, len(shipped)-1, 0, time.UTC); !got.Since.Equal(want) {
					t.Errorf("Since = %s, want the newest creation %s", got.Since, want)
				}
				return
			}
			if !strings.Contains(got.Problem, tc.problem) {
				t.Errorf("Problem = %q, want it to say %q", got.Problem, tc.problem)
			}
		})
	}
}

// bindingIndex is the index of the binding of policy (with any name suffix) in bs.
func bindingIndex(t *testing.T, bs []admissionv1.ValidatingAdmissionPolicyBinding, policy string) int {
	for i := range bs {
		if strings.HasPrefix(bs[i].Spec.PolicyName, policy) {
			return i
		}
	}
	t.Fatalf("no binding of %s", policy)
	return -1
}
