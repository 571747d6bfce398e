package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kubectlWaitReady is what a user or a kstatus-based tool does with any of our
// kinds (docs/reference.md, "`Ready` on every CR"): the real `kubectl wait
// --for=condition=Ready`, then status.observedGeneration at the object's
// generation (kstatus counts a status of an older generation as in progress).
// resource is the plural.group, so that no other API's kind of the same name
// (Argo CD's Application, ...) is meant.
func kubectlWaitReady(t *testing.T, ns, resource, name string) {
	t.Helper()
	obj := resource + "/" + name
	out, err := kubectl(t, "wait", "-n", ns, obj, "--for=condition=Ready", "--timeout=120s")
	require.NoError(t, err, "kubectl wait --for=condition=Ready %s: %s", obj, out)
	gen, err := kubectl(t, "get", "-n", ns, obj, "-o", "jsonpath={.metadata.generation}")
	require.NoError(t, err, gen)
	require.NotEmpty(t, strings.TrimSpace(gen))
	out, err = kubectl(t, "wait", "-n", ns, obj, "--for=jsonpath={.status.observedGeneration}="+strings.TrimSpace(gen), "--timeout=10s")
	require.NoError(t, err, "%s: status.observedGeneration is not its generation %s: %s", obj, gen, out)
}

// The plural.group of each kind with a Ready condition.
const (
	resSyncRun      = "gitopsdeploymentsyncruns.managed-gitops.redhat.com"
	resRepoCreds    = "gitopsdeploymentrepositorycredentials.managed-gitops.redhat.com"
	resManagedEnv   = "gitopsdeploymentmanagedenvironments.managed-gitops.redhat.com"
	resEnvironment  = "environments.appstudio.redhat.com"
	resBinding      = "snapshotenvironmentbindings.appstudio.redhat.com"
	resPromotionRun = "promotionruns.appstudio.redhat.com"
	resTarget       = "deploymenttargets.appstudio.redhat.com"
	resClaim        = "deploymenttargetclaims.appstudio.redhat.com"
)
