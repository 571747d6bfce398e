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

// StripAdmissionChecks leaves every other rule: immutability, one-of and
// name rules stay in the reconciler suites.
func TestStripAdmissionChecksKeepsOtherRules(t *testing.T) {
	crds, err := stack.ReadCRDs(crdDir)
	require.NoError(t, err)
	stripped, kept := 0, 0
	for _, crd := range crds {
		before := countRules(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
		n := stack.StripAdmissionChecks(crd)
		after := countRules(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
		assert.Equal(t, before-n, after, crd.Name)
		stripped += n
		kept += after
	}
	// GitOpsDeployment repoURL 3, path 2, targetRevision 1 (twice: spec.source
	// and status.reconciledState.source), syncOptions 1; SyncRun revisionId 1;
	// RepositoryCredentials url 2; ManagedEnvironment and Environment apiURL 2 each.
	assert.Equal(t, 20, stripped)
	assert.Positive(t, kept, "the immutability and one-of rules are gone too")
}

func countRules(s *apiextensionsv1.JSONSchemaProps) int {
	if s == nil {
		return 0
	}
	n := len(s.XValidations)
	for _, p := range s.Properties {
		n += countRules(&p)
	}
	if s.Items != nil {
		n += countRules(s.Items.Schema)
	}
	return n
}
