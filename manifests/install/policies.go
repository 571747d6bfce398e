// Package install holds the install's admission policies as shipped, so that
// the sidecar can tell whether the API server enforces who approves and who
// promotes: approvals and requesters count only then (docs/gates.md).
package install

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Every manifest of the install: the admission policies (and bindings) among
// them are what must be live, whatever file they are in.
//
//go:embed *.yaml
var manifests embed.FS

// Policy is a shipped ValidatingAdmissionPolicy with its binding.
type Policy struct {
	File    string
	Policy  admissionv1.ValidatingAdmissionPolicy
	Binding admissionv1.ValidatingAdmissionPolicyBinding
}

// Policies are the shipped admission policies, each with its binding, in file order.
func Policies() ([]Policy, error) {
	files, err := fs.Glob(manifests, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []Policy
	bindings := map[string]admissionv1.ValidatingAdmissionPolicyBinding{}
	for _, f := range files {
		b, err := manifests.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLReader(bufioReader(b))
		for {
			doc, err := dec.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			// Kustomize's own files (instance-names.yaml: a list of
			// replacements) are no objects: only objects can be policies.
			var v any
			if err := yaml.Unmarshal(doc, &v); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if _, isObject := v.(map[string]any); !isObject {
				continue
			}
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			switch head.Kind {
			case "ValidatingAdmissionPolicy":
				p := Policy{File: f}
				if err := yaml.UnmarshalStrict(doc, &p.Policy); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				out = append(out, p)
			case "ValidatingAdmissionPolicyBinding":
				var vb admissionv1.ValidatingAdmissionPolicyBinding
				if err := yaml.UnmarshalStrict(doc, &vb); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				bindings[vb.Spec.PolicyName] = vb
			}
		}
	}
	for i := range out {
		b, ok := bindings[out[i].Policy.Name]
		if !ok {
			return nil, fmt.Errorf("%s: policy %s has no binding", out[i].File, out[i].Policy.Name)
		}
		out[i].Binding = b
	}
	return out, nil
}

// ServiceAccount is the GitOps Service's ServiceAccount: the policies'
// parameter (it alone approves and promotes on behalf of Argo CD users).
type ServiceAccount struct{ Namespace, Name string }

func (s ServiceAccount) String() string { return s.Namespace + "/" + s.Name }

// Enforcement is whether the live policies enforce the shipped rules.
type Enforcement struct {
	// Problem says what is missing or changed; empty when enforced.
	Problem string
	// Since is when the last of the live policies and bindings that enforce
	// was created: what was written before then was not checked by them.
	Since time.Time
}

// Enforced says whether every shipped policy is live as shipped.
func (e Enforcement) Enforced() bool { return e.Problem == "" }

// Check compares the live policies and bindings with the shipped ones. A
// shipped policy is enforced when a live policy has its spec (as the API
// server defaults it) and a live binding of that policy has the shipped
// binding's spec with the parameter sa: the names may differ (an overlay's
// prefix or suffix, a second instance), the rules may not. Any other policy
// or binding (a Warn or Audit one beside it) neither helps nor hurts.
func Check(shipped []Policy, policies []admissionv1.ValidatingAdmissionPolicy, bindings []admissionv1.ValidatingAdmissionPolicyBinding, sa ServiceAccount) Enforcement {
	var problems []string
	var since time.Time
	for _, s := range shipped {
		want := defaultedPolicy(s.Policy.Spec)
		found, changed := false, ""
		for _, p := range policies {
			if !p.DeletionTimestamp.IsZero() {
				continue
			}
			if !apiequality.Semantic.DeepEqual(defaultedPolicy(p.Spec), want) {
				if p.Name == s.Policy.Name {
					changed = "ValidatingAdmissionPolicy " + p.Name + " differs from the shipped one"
				}
				continue
			}
			b := bindingOf(p.Name, s.Policy.Spec.ParamKind, s.Binding.Spec, bindings, sa)
			if b == nil {
				if p.Name == s.Policy.Name {
					changed = "ValidatingAdmissionPolicyBinding " + s.Binding.Name + " is missing or differs from the shipped one (validationActions [Deny], paramRef " + sa.String() + ")"
				}
				continue
			}
			found = true
			for _, t := range []time.Time{p.CreationTimestamp.Time, b.CreationTimestamp.Time} {
				if t.After(since) {
					since = t
				}
			}
			break
		}
		if found {
			continue
		}
		if changed == "" {
			changed = "ValidatingAdmissionPolicy " + s.Policy.Name + " and its binding are not installed"
		}
		problems = append(problems, changed+" ("+s.File+")")
	}
	if len(problems) > 0 {
		return Enforcement{Problem: strings.Join(problems, "; ")}
	}
	return Enforcement{Since: since}
}

// bindingOf is a live binding of policy with the shipped spec: its parameter
// in the install's namespace (sa's: kustomize's namespace moves it), and sa
// itself when the parameter is a ServiceAccount.
func bindingOf(policy string, paramKind *admissionv1.ParamKind, shipped admissionv1.ValidatingAdmissionPolicyBindingSpec, bindings []admissionv1.ValidatingAdmissionPolicyBinding, sa ServiceAccount) *admissionv1.ValidatingAdmissionPolicyBinding {
	want := *shipped.DeepCopy()
	want.PolicyName = policy
	if want.ParamRef != nil && want.ParamRef.Namespace != "" {
		want.ParamRef.Namespace = sa.Namespace
	}
	if want.ParamRef != nil && paramKind != nil && paramKind.APIVersion == "v1" && paramKind.Kind == "ServiceAccount" {
		want.ParamRef.Name = sa.Name
	}
	want = defaultedBinding(want)
	for i := range bindings {
		if b := &bindings[i]; b.DeletionTimestamp.IsZero() && apiequality.Semantic.DeepEqual(defaultedBinding(b.Spec), want) {
			return b
		}
	}
	return nil
}

// defaultedPolicy is spec as the API server stores it (its defaults).
func defaultedPolicy(spec admissionv1.ValidatingAdmissionPolicySpec) admissionv1.ValidatingAdmissionPolicySpec {
	s := *spec.DeepCopy()
	if s.FailurePolicy == nil {
		fail := admissionv1.Fail
		s.FailurePolicy = &fail
	}
	s.MatchConstraints = defaultedMatch(s.MatchConstraints)
	return s
}

func defaultedBinding(spec admissionv1.ValidatingAdmissionPolicyBindingSpec) admissionv1.ValidatingAdmissionPolicyBindingSpec {
	s := *spec.DeepCopy()
	s.MatchResources = defaultedMatch(s.MatchResources)
	slices.Sort(s.ValidationActions)
	return s
}

func defaultedMatch(m *admissionv1.MatchResources) *admissionv1.MatchResources {
	if m == nil {
		return nil
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	if m.MatchPolicy == nil {
		eq := admissionv1.Equivalent
		m.MatchPolicy = &eq
	}
	for i := range m.ResourceRules {
		if r := &m.ResourceRules[i]; r.Scope == nil {
			all := admissionv1.AllScopes
			r.Scope = &all
		}
	}
	for i := range m.ExcludeResourceRules {
		if r := &m.ExcludeResourceRules[i]; r.Scope == nil {
			all := admissionv1.AllScopes
			r.Scope = &all
		}
	}
	return m
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
