package promotionrun

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
)

const policyDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func promotionPolicy(name string, nsLabels map[string]string, rules ...string) as.PromotionPolicy {
	p := as.PromotionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: as.PromotionPolicySpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: nsLabels}}}
	for i, r := range rules {
		p.Spec.Rules = append(p.Spec.Rules, as.PolicyRule{Name: "rule-" + string(rune('a'+i)), Expression: r})
	}
	return p
}

// policyInput is a promotion of Snapshot s1 (one image, digest-pinned) of
// Application app into prod (parent staging) in namespace t, labelled
// tier=prod, bound by the policies.
func policyInput(t *testing.T, envLabels map[string]string, policies ...as.PromotionPolicy) gateInput {
	t.Helper()
	env := gated("prod", nil)
	env.Labels = envLabels
	env.Spec.ParentEnvironment = "staging"
	compiled := (&policyrules.Cache{}).CompileAll(policies)
	in := identified(gateInput{Application: "app", Snapshot: "s1", Env: env, Now: utc("2026-03-02T10:00:00Z"),
		Components: []as.SnapshotComponent{{Name: "api", ContainerImage: "registry.example.com/team/api@" + policyDigest}}})
	in.Policies = boundPolicies(compiled, map[string]string{"tier": "prod"}, env)
	return in
}

func TestPolicyGate(t *testing.T) {
	prod := map[string]string{"tier": "prod"}
	ours := "images.all(i, i.registry == 'registry.example.com' && i.digest != '')"

	t.Run("allowed", func(t *testing.T) {
		assert.Nil(t, gate(policyInput(t, nil, promotionPolicy("registries", prod, ours))))
	})
	t.Run("look-alike registry denied, naming policy, rule and facts", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("registries", prod, ours))
		in.Components[0].ContainerImage = "registry.example.com.evil.io/team/api@" + policyDigest
		w := gate(in)
		require.NotNil(t, w)
		assert.Equal(t, as.WaitingReasonPolicyDenied, w.Reason)
		assert.Equal(t, "PromotionPolicy registries rule rule-a to allow the promotion; it saw images=[api: registry.example.com.evil.io/team/api@"+policyDigest+"]", w.For)
	})
	t.Run("tag instead of digest denied", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("registries", prod, ours))
		in.Components[0].ContainerImage = "registry.example.com/team/api:v1"
		assert.NotNil(t, gate(in))
	})
	t.Run("policy of other namespaces does not bind", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("dev-only", map[string]string{"tier": "dev"}, "false"))
		assert.Nil(t, gate(in))
	})
	t.Run("Environment labels the tenant edits do not unbind a namespace-bound policy", func(t *testing.T) {
		in := policyInput(t, map[string]string{"policy-exempt": "true", "tier": "dev"}, promotionPolicy("deny", prod, "false"))
		assert.NotNil(t, gate(in))
	})
	t.Run("a policy with a bad selector holds", func(t *testing.T) {
		p := promotionPolicy("broken", prod, "true")
		p.Spec.EnvironmentSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}}
		w := gate(policyInput(t, nil, p))
		require.NotNil(t, w)
		assert.Contains(t, w.For, "PromotionPolicy broken to be fixed")
	})
	t.Run("a policy with a rule that does not compile holds", func(t *testing.T) {
		w := gate(policyInput(t, nil, promotionPolicy("broken", prod, "images.all(i, ")))
		require.NotNil(t, w)
		assert.Contains(t, w.For, "PromotionPolicy broken to be fixed: rule rule-a (rules[0]): does not compile")
	})
	t.Run("approvers are those the approval gate counts", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("two", prod, "size(approvers) >= 2"))
		in.Approvals = []as.PromotionApproval{approval("s1", "prod", "alice"), approval("s1", "prod", "argocd:alice"), approval("s1", "staging", "bob"),
			approval("s1", "prod", "system:serviceaccount:t:bot")}
		w := gate(in)
		require.NotNil(t, w, "alice twice, bob for another Environment and a ServiceAccount are one approver")
		assert.Contains(t, w.For, "approvers=[alice]")
		in.Approvals = append(in.Approvals, approval("s1", "prod", "carol"))
		assert.Nil(t, gate(in))
	})
	t.Run("the source's change failure rate over the window", func(t *testing.T) {
		p := promotionPolicy("stable-source", prod, "source.changeFailureRate <= 0.5")
		p.Spec.ChangeFailureWindow = dur(24 * time.Hour)
		in := policyInput(t, nil, p)
		entry := func(at string, r as.PromotionRunCompleteResult, rolledBack string) as.PromotionHistoryEntry {
			return as.PromotionHistoryEntry{Kind: as.PromotionKindPromotion, CompletionTime: metav1.NewTime(utc(at)), Result: r, RolledBackBy: rolledBack}
		}
		in.SourceHistory = &as.PromotionHistory{Spec: as.PromotionHistorySpec{Application: "app", Environment: "staging"},
			Status: as.PromotionHistoryStatus{Entries: []as.PromotionHistoryEntry{
				entry("2026-02-01T00:00:00Z", as.PromotionRunCompleteResultSuccess, ""), // out of the window
				entry("2026-02-01T00:00:00Z", as.PromotionRunCompleteResultSuccess, ""),
				entry("2026-03-02T01:00:00Z", as.PromotionRunCompleteResultFailure, ""),
				entry("2026-03-02T02:00:00Z", as.PromotionRunCompleteResultSuccess, "rollback-1"),
			}}}
		w := gate(in)
		require.NotNil(t, w)
		assert.Contains(t, w.For, "source=staging changeFailureRate:1.00 (2 of 2)")
		p.Spec.ChangeFailureWindow = dur(60 * 24 * time.Hour)
		in.Policies = (&policyrules.Cache{}).CompileAll([]as.PromotionPolicy{p})
		assert.Nil(t, gate(in), "2 of 4 is 0.5")
	})
	t.Run("the latest completed preview of the current spec", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("no-removals", prod, "preview.found && preview.removed == 0"))
		preview := func(at string, removed int, gen int64) as.PromotionPreview {
			at2 := metav1.NewTime(utc(at))
			return as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Generation: 1},
				Spec:   as.PromotionPreviewSpec{Snapshot: "s1", Application: "app", TargetEnvironment: "prod"},
				Status: as.PromotionPreviewStatus{CompletedAt: &at2, ObservedGeneration: gen, Components: []as.PreviewComponentSummary{{Name: "api", Removed: removed}}}}
		}
		require.NotNil(t, gate(in), "no preview")
		in.Previews = []as.PromotionPreview{preview("2026-03-02T09:00:00Z", 0, 1), preview("2026-03-02T09:30:00Z", 2, 1), preview("2026-03-02T09:50:00Z", 0, 0)}
		w := gate(in)
		require.NotNil(t, w, "the latest of the current spec removes 2")
		assert.Contains(t, w.For, "removed:2")
		in.Previews = in.Previews[:1]
		assert.Nil(t, gate(in))
	})
	t.Run("rollbacks are held unless a rule lets them", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("pinned", prod, "rollback || images.all(i, i.digest != '')"))
		in.Components[0].ContainerImage = "registry.example.com/team/api:v1"
		require.NotNil(t, gate(in))
		in.Rollback = true
		assert.Nil(t, gate(in))
		in = policyInput(t, nil, promotionPolicy("deny", prod, "false"))
		in.Rollback = true
		assert.NotNil(t, gate(in))
	})
	t.Run("the other gates are reported first", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("deny", prod, "false"))
		in.Env.Spec.Gates = &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}}
		w := gate(in)
		require.NotNil(t, w)
		assert.Equal(t, as.WaitingReasonFrozen, w.Reason)
	})
	t.Run("the first denying policy by name", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("zz", prod, "false"), promotionPolicy("aa", prod, "true", "size(approvers) > 3"))
		w := gate(in)
		require.NotNil(t, w)
		assert.True(t, strings.HasPrefix(w.For, "PromotionPolicy aa rule rule-b "), w.For)
	})
	t.Run("signature results are facts", func(t *testing.T) {
		in := policyInput(t, nil, promotionPolicy("signed", prod, "signaturesRequired && signatures.all(s, s.verified && 'release' in s.signers)"))
		require.NotNil(t, gate(in), "signatures not required: the rule asks for them")
		in.Signatures = []as.ImageVerification{{Component: "api", Image: in.Components[0].ContainerImage, Digest: policyDigest, Verified: true, Signers: []string{"release"}}}
		assert.Nil(t, gate(in))
	})
}
