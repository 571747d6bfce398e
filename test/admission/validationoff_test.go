//go:build !unit

package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/gitops-service/gitops-service/test/stack"
)

// The reconciler suites and e2e install the CRDs without the rules that
// repeat a reconciler's refusal (stack.InstallCRDsWithoutAdmissionChecks), so
// that hostile values reach the reconcilers and their own checks are tested
// (e.g. reconcilers/gitopsdeployment TestHostileDeploymentsAreRefused,
// TestRefusesRepositoryURLsThatAreNotNetworkURLs; reconcilers/syncrun,
// repositorycredentials, managedenvironment, environment). Here: without
// them, every hostile value of the table is admitted except those refused by
// the rest of the schema (lengths), and with them again it is refused.
func TestWithoutAdmissionChecksHostileValuesReachTheReconcilers(t *testing.T) {
	tenant(t)
	ctx := context.Background()
	require.NoError(t, kube.InstallCRDsWithoutAdmissionChecks(ctx, crdDir))
	restored := false
	t.Cleanup(func() {
		if !restored {
			assert.NoError(t, kube.InstallCRDs(ctx, crdDir))
		}
	})
	hostile := 0
	for _, f := range fields() {
		for v, msg := range f.refused {
			if msg == tooLong || v == "" {
				continue
			}
			hostile++
			obj := f.make(v)
			// The API server serves a changed CRD's schema a moment later.
			assert.Eventually(t, func() bool { return admit(obj) == nil }, 10*time.Second, 100*time.Millisecond,
				"%s %s is still refused without the admission checks", f.name, show(v))
		}
	}
	require.Greater(t, hostile, 100)

	require.NoError(t, kube.InstallCRDs(ctx, crdDir))
	restored = true
	for _, f := range fields() {
		for v := range f.refused {
			obj := f.make(v)
			assert.Eventually(t, func() bool { return admit(obj) != nil }, 10*time.Second, 100*time.Millisecond,
				"%s %s is admitted again with the admission checks", f.name, show(v))
		}
	}
}

// StripAdmissionChecks removes exactly the rules marked as admission checks:
// immutability, one-of and name rules stay in the reconciler suites.
func TestStripAdmissionChecksKeepsOtherRules(t *testing.T) {
	crds, err := stack.ReadCRDs(crdDir)
	require.NoError(t, err)
	stripped := 0
	kept := map[string]int{}
	for _, crd := range crds {
		n := stack.StripAdmissionChecks(crd)
		stripped += n
		walkRules(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, func(r apiextensionsv1.ValidationRule) {
			assert.Nil(t, r.Reason, "%s: rule %q with a reason was kept", crd.Name, r.Rule)
			kept[r.Rule]++
		})
	}
	t.Logf("%d admission checks stripped, kept: %v", stripped, kept)
	assert.Greater(t, stripped, 30)
	for rule := range kept {
		assert.Contains(t, []string{
			"self == oldSelf",
			"has(self.manualPromotion) != has(self.automatedPromotion)",
			"has(self.components) == has(oldSelf.components)",
			"size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
			// A PromotionHistory is of one (application, environment) for good;
			// a rollback is never forced (shapes of the API, like the one-of above).
			"self.application == oldSelf.application && self.environment == oldSelf.environment",
			"!(has(self.rollback) && self.rollback && has(self.force) && self.force)",
			// A PromotionRun's requester is immutable (set, changed or removed).
			"has(self.requestedBy) == has(oldSelf.requestedBy) && (!has(self.requestedBy) || self.requestedBy == oldSelf.requestedBy)",
		}, rule)
	}
	assert.Positive(t, kept["self == oldSelf"])
}

func walkRules(s *apiextensionsv1.JSONSchemaProps, f func(apiextensionsv1.ValidationRule)) {
	if s == nil {
		return
	}
	for _, r := range s.XValidations {
		f(r)
	}
	for _, p := range s.Properties {
		walkRules(&p, f)
	}
	if s.Items != nil {
		walkRules(s.Items.Schema, f)
	}
}
