package promotionrun

import (
	"context"
	"time"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
)

// The promotion policies (PromotionPolicy, docs/policies.md) are the last
// rung of the ladder: a platform's CEL rules over the facts of the
// promotion. They hold rollbacks too: the rules see `rollback` and may let
// them pass.

// defaultChangeFailureWindow is how far back the source Environment's
// change failure rate is counted when a policy does not say.
const defaultChangeFailureWindow = 30 * 24 * time.Hour

// policyRung: the platform's rules decide for rollbacks too.
var policyRung = policy{policyGate, always}

// boundPolicies are the compiled policies that bind env of a namespace
// with nsLabels; a policy whose selectors do not parse binds (it holds
// every promotion it might bind until it is fixed).
func boundPolicies(all []policyrules.Compiled, nsLabels map[string]string, env *as.Environment) []policyrules.Compiled {
	var out []policyrules.Compiled
	for _, c := range all {
		ok, err := policyrules.Binds(c.Policy, nsLabels, env.Labels)
		if ok || err != nil {
			out = append(out, c)
		}
	}
	return out
}

// policyGate holds the promotion while a rule of a policy binding in.Env
// does not hold (reason PolicyDenied, naming the policy, the rule and the
// facts it read), or while such a policy cannot be used.
func policyGate(in gateInput) *kernel.Waiting {
	if len(in.Policies) == 0 {
		return nil
	}
	facts := policyFacts(in)
	// Evaluation is CPU only, bounded per rule and per promotion
	// (policyrules.MaxPromotionTime): it needs no cancellation from the pass.
	ctx, cancel := context.WithTimeout(context.Background(), policyrules.MaxPromotionTime)
	defer cancel()
	for _, c := range in.Policies {
		if c.Err != nil {
			return kernel.Wait(as.WaitingReasonPolicyDenied, kernel.WaitingRetry, "PromotionPolicy %s to be fixed: %s", c.Policy.Name, c.Err)
		}
		facts.Source = sourceFacts(in, c.Policy)
		if d := policyrules.Evaluate(ctx, c.Policy.Name, c.Rules, facts); d != nil {
			return kernel.Wait(as.WaitingReasonPolicyDenied, kernel.WaitingRetry, "%s", d)
		}
	}
	return nil
}

// policyFacts are the facts of the promotion into in.Env (docs/policies.md).
func policyFacts(in gateInput) *policyrules.Facts {
	f := &policyrules.Facts{
		Application: in.Application, Snapshot: in.Snapshot, Signatures: in.Signatures, Now: in.Now, Rollback: in.Rollback,
		Environment: policyrules.Environment{Name: in.Env.Name, Namespace: in.Env.Namespace, Parent: in.Env.Spec.ParentEnvironment, Labels: in.Env.Labels},
	}
	for _, c := range in.Components {
		f.Images = append(f.Images, policyrules.ParseImage(c.Name, c.ContainerImage))
	}
	f.Preview = policyrules.PreviewOf(latestPreview(in))
	if in.Identity.Enforced() {
		g := &as.ApprovalGate{}
		if in.Env.Spec.Gates != nil && in.Env.Spec.Gates.Approvals != nil {
			g = in.Env.Spec.Gates.Approvals
		}
		f.Approvers = countedApprovers(in, g)
	}
	return f
}

// latestPreview is the latest completed preview of the Snapshot and
// Application into in.Env, for its current spec, nil when there is none.
func latestPreview(in gateInput) *as.PromotionPreview {
	var latest *as.PromotionPreview
	for i := range in.Previews {
		p := &in.Previews[i]
		if p.Namespace != in.Env.Namespace || p.Spec.Snapshot != in.Snapshot || p.Spec.Application != in.Application || p.Spec.TargetEnvironment != in.Env.Name {
			continue
		}
		if p.Status.CompletedAt == nil || p.Status.ObservedGeneration != p.Generation || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if latest == nil || p.Status.CompletedAt.After(latest.Status.CompletedAt.Time) {
			latest = p
		}
	}
	return latest
}

// sourceFacts are the source Environment's (in.Env's parent) recent
// changes of the Application, over the policy's window.
func sourceFacts(in gateInput, p *as.PromotionPolicy) policyrules.Source {
	parent := in.Env.Spec.ParentEnvironment
	s := policyrules.Source{Environment: parent}
	if parent == "" || in.SourceHistory == nil {
		return s
	}
	window := defaultChangeFailureWindow
	// The CRD refuses a window outside (0, a year]; one written around it
	// gets the default.
	if w := p.Spec.ChangeFailureWindow; w != nil && w.Duration > 0 && w.Duration <= 8760*time.Hour {
		window = w.Duration
	}
	s.Changes, s.Failures = in.SourceHistory.ChangeFailures(in.Now.Add(-window))
	return s
}
