package namespace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func claimOf(ns, name string) *as.DeploymentTargetClaim {
	return &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// Issue 21 defect 5: with {namespace}-{claim}, tenant "cert" claiming
// "manager" owned cert-manager before the platform installed it. The default
// never gives a name a platform component could want, nor another claim's.
func TestDefaultNamespaceNameCannotSquat(t *testing.T) {
	platform := []string{"cert-manager", "openshift-gitops", "kube-system", "argocd", "istio-system",
		"openshift-monitoring", "gitops-service", "default", "tekton-pipelines", "a-b-c"}
	claims := [][2]string{
		{"cert", "manager"}, {"openshift", "gitops"}, {"kube", "system"}, {"istio", "system"},
		{"openshift", "monitoring"}, {"a-b", "c"}, {"a", "b-c"}, {"a", "b.c"}, {"a", "b-c."},
		{strings.Repeat("n", 63), strings.Repeat("c", 253)}, {strings.Repeat("n", 63), strings.Repeat("c", 252) + "d"},
		{"tekton", "pipelines"}, {"dt", "x"}, {"jane", "dt-jane-x"},
	}
	seen := map[string][2]string{}
	for _, c := range claims {
		name, err := namespaceName("", claimOf(c[0], c[1]))
		require.NoError(t, err)
		assert.Empty(t, validation.IsDNS1123Label(name), "%q is not a valid namespace name", name)
		assert.True(t, strings.HasPrefix(name, DefaultNamespacePrefix), name)
		assert.NotContains(t, platform, name, "tenant %s claim %s", c[0], c[1])
		if prev, ok := seen[name]; ok {
			t.Errorf("claims %v and %v share the namespace %q", prev, c, name)
		}
		seen[name] = c
		again, _ := namespaceName("", claimOf(c[0], c[1]))
		assert.Equal(t, name, again, "stable")
	}
	assert.Equal(t, "dt-cert-manager-"+claimHash("cert", "manager"), DefaultNamespaceName("cert", "manager"))
}

func TestNamespacePatterns(t *testing.T) {
	c := claimOf("jane", "qa")
	for _, tc := range []struct {
		pattern, want, err string
	}{
		{pattern: "{namespace}-{claim}", want: "jane-qa"},
		{pattern: "env-{claim}-{hash}", want: "env-qa-" + claimHash("jane", "qa")},
		{pattern: "{namespace}_{claim}", err: "is not valid"},
		{pattern: "{namespace}-" + strings.Repeat("x", 60), err: "is not valid"},
	} {
		got, err := namespaceName(tc.pattern, c)
		if tc.err != "" {
			require.Error(t, err, tc.pattern)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}

func TestClassLabel(t *testing.T) {
	assert.Equal(t, "isolation-level-namespace", classLabel("isolation-level-namespace"))
	long := classLabel(strings.Repeat("c", 200))
	assert.Empty(t, validation.IsValidLabelValue(long))
	assert.NotEqual(t, long, classLabel(strings.Repeat("c", 201)))
}
