// Package argocdhealth tests the Argo CD health checks that manifests/install
// writes for our CRs (Lua, reconcilers/argocdsettings/health) with Argo CD's
// own machinery: the argocd-cm keys the sidecar writes are read by Argo CD's
// settings manager and each object's health computed by its Lua VM, as the
// application controller does. Pure: no server.
package argocdhealth

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/util/lua"
	"github.com/argoproj/argo-cd/v2/util/settings"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
)

// renderedArgoCDCM is the argocd-cm the sidecar writes (our keys of
// reconcilers/argocdsettings, as --argocd-settings=ensure applies them), and
// manifests/install renders no argocd-cm of its own.
func renderedArgoCDCM(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "manifests", "install"))
	require.NoError(t, err)
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err)
	for _, r := range resources.Resources() {
		if r.GetKind() == "ConfigMap" && strings.HasPrefix(r.GetName(), "argocd-") {
			t.Fatalf("manifests/install renders Argo CD's ConfigMap %s: the sidecar writes our keys itself", r.GetName())
		}
	}
	desired, err := argocdsettings.Desired(argocdsettings.DefaultNames())
	require.NoError(t, err)
	for _, s := range desired {
		if s.ConfigMap == "argocd-cm" {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.ConfigMap, Namespace: "argocd"}, Data: s.Data}
		}
	}
	t.Fatal("the sidecar writes no argocd-cm keys")
	return nil
}

// overrides are the resource overrides Argo CD's settings manager reads from
// the rendered argocd-cm (applied over Argo CD's own, as the install does).
func overrides(t *testing.T) lua.ResourceHealthOverrides {
	t.Helper()
	cm := renderedArgoCDCM(t)
	cm.Labels = map[string]string{"app.kubernetes.io/part-of": "argocd"}
	mgr := settings.NewSettingsManager(context.Background(), fake.NewSimpleClientset(cm,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: cm.Namespace, Labels: cm.Labels}}), cm.Namespace)
	o, err := mgr.GetResourceOverrides()
	require.NoError(t, err)
	return lua.ResourceHealthOverrides(o)
}

// The sidecar writes only its own keys into argocd-cm: the extension's and
// one health check per kind, each in a key of its own.
func TestRenderedArgoCDCMKeys(t *testing.T) {
	cm := renderedArgoCDCM(t)
	var keys []string
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{
		"extension.config.gitops-service",
		"resource.customizations.health.appstudio.redhat.com_DeploymentTargetClaim",
		"resource.customizations.health.appstudio.redhat.com_Environment",
		"resource.customizations.health.appstudio.redhat.com_PromotionRun",
		"resource.customizations.health.appstudio.redhat.com_SnapshotEnvironmentBinding",
		"resource.customizations.health.managed-gitops.redhat.com_GitOpsDeployment",
		"resource.customizations.health.managed-gitops.redhat.com_GitOpsDeploymentSyncRun",
	}, keys)
}

type healthCase struct {
	name    string
	object  string // YAML; apiVersion and kind come from the table
	status  health.HealthStatusCode
	message string // a part of the message
}

// readyCases are the same for every kind: a Ready condition of the current
// generation decides; one of an older generation means Progressing.
func readyCases(conditions string) []healthCase {
	ready := func(status, gen string) string {
		return "metadata: {generation: 3}\nstatus:\n  " + conditions + ":\n  - {type: Ready, status: \"" + status + "\", reason: R, message: ready says, observedGeneration: " + gen + "}\n"
	}
	return []healthCase{
		{"Ready True", ready("True", "3"), health.HealthStatusHealthy, "ready says"},
		{"Ready False", ready("False", "3"), health.HealthStatusDegraded, "ready says"},
		{"Ready Unknown", ready("Unknown", "3"), health.HealthStatusProgressing, "ready says"},
		{"Ready of an older generation", ready("True", "2"), health.HealthStatusProgressing, "observe generation 3"},
		{"Ready with status.observedGeneration", "metadata: {generation: 3}\nstatus:\n  observedGeneration: 3\n  " + conditions + ":\n  - {type: Ready, status: \"False\", message: broken}\n",
			health.HealthStatusDegraded, "broken"},
		{"Ready with an older status.observedGeneration", "metadata: {generation: 3}\nstatus:\n  observedGeneration: 1\n  " + conditions + ":\n  - {type: Ready, status: \"True\"}\n",
			health.HealthStatusProgressing, "observe generation 3"},
	}
}

func TestHealthChecks(t *testing.T) {
	ov := overrides(t)
	kinds := []struct {
		apiVersion, kind string
		cases            []healthCase
	}{
		{"managed-gitops.redhat.com/v1alpha1", "GitOpsDeployment", append(readyCases("conditions"),
			healthCase{"new", "spec: {}", health.HealthStatusProgressing, "Waiting for the GitOps Service"},
			healthCase{"refused", "status:\n  conditions:\n  - {type: ErrorOccurred, status: \"True\", reason: ErrorOccurred, message: spec.source.path cannot be '/'}\n  health: {status: Healthy}\n",
				health.HealthStatusDegraded, "spec.source.path cannot be '/'"},
			healthCase{"error resolved", "status:\n  conditions:\n  - {type: ErrorOccurred, status: \"False\", reason: ErrorOccurredResolved}\n  sync: {status: Synced}\n  health: {status: Healthy}\n",
				health.HealthStatusHealthy, "Synced/Healthy"},
			healthCase{"comparison error", "status:\n  conditions:\n  - {type: ComparisonError, status: \"True\", reason: ComparisonError, message: path does not exist}\n  health: {status: Healthy}\n",
				health.HealthStatusDegraded, "ComparisonError: path does not exist"},
			healthCase{"sync error", "status:\n  conditions:\n  - {type: SyncError, status: \"True\", message: refused by the project}\n",
				health.HealthStatusDegraded, "SyncError: refused by the project"},
			healthCase{"a warning is no failure", "status:\n  conditions:\n  - {type: SharedResourceWarning, status: \"True\", message: shared}\n  sync: {status: Synced}\n  health: {status: Healthy}\n",
				health.HealthStatusHealthy, "Synced/Healthy"},
			healthCase{"healthy", "status:\n  sync: {status: Synced}\n  health: {status: Healthy}\n", health.HealthStatusHealthy, "Synced/Healthy"},
			healthCase{"progressing", "status:\n  sync: {status: Synced}\n  health: {status: Progressing, message: rollout}\n", health.HealthStatusProgressing, "Synced/Progressing: rollout"},
			healthCase{"degraded", "status:\n  sync: {status: OutOfSync}\n  health: {status: Degraded, message: CrashLoopBackOff}\n", health.HealthStatusDegraded, "CrashLoopBackOff"},
			healthCase{"suspended", "status:\n  health: {status: Suspended}\n", health.HealthStatusSuspended, "Unknown/Suspended"},
			healthCase{"missing", "status:\n  sync: {status: OutOfSync}\n  health: {status: Missing}\n", health.HealthStatusMissing, "OutOfSync/Missing"},
			healthCase{"not yet assessed", "status:\n  sync: {status: OutOfSync}\n", health.HealthStatusProgressing, "Waiting for Argo CD"},
		)},
		{"managed-gitops.redhat.com/v1alpha1", "GitOpsDeploymentSyncRun", append(readyCases("conditions"),
			healthCase{"new", "spec: {gitopsDeploymentName: app}", health.HealthStatusProgressing, "Waiting to start"},
			healthCase{"refused before it started", "status:\n  conditions:\n  - {type: ErrorOccurred, status: \"True\", message: the GitOpsDeployment is automated}\n",
				health.HealthStatusDegraded, "is automated"},
			healthCase{"running", "status: {phase: Running}", health.HealthStatusProgressing, "Sync Running"},
			healthCase{"terminating", "status: {phase: Terminating}", health.HealthStatusProgressing, "Sync Terminating"},
			healthCase{"succeeded", "status:\n  phase: Succeeded\n  conditions:\n  - {type: ErrorOccurred, status: \"False\", message: Successfully completed synchronize operation.}\n",
				health.HealthStatusHealthy, "Successfully completed"},
			healthCase{"failed", "status:\n  phase: Failed\n  conditions:\n  - {type: ErrorOccurred, status: \"True\", message: one or more objects failed to apply}\n",
				health.HealthStatusDegraded, "failed to apply"},
			healthCase{"error", "status: {phase: Error}", health.HealthStatusDegraded, ""},
		)},
		{"appstudio.redhat.com/v1alpha1", "SnapshotEnvironmentBinding", append(append(readyCases("bindingConditions"), readyCases("conditions")...),
			healthCase{"new", "spec: {application: a}", health.HealthStatusProgressing, "Waiting for the components"},
			healthCase{"error", "status:\n  bindingConditions:\n  - {type: ErrorOccurred, status: \"True\", reason: ErrorGeneratingGitOpsDeployment, message: cannot generate}\n  componentDeploymentConditions:\n  - {type: AllComponentsDeployed, status: \"True\"}\n",
				health.HealthStatusDegraded, "cannot generate"},
			healthCase{"error resolved, deployed", "status:\n  bindingConditions:\n  - {type: ErrorOccurred, status: \"False\"}\n  componentDeploymentConditions:\n  - {type: AllComponentsDeployed, status: \"True\", reason: CommitsSynced, message: 2 of 2 components deployed}\n",
				health.HealthStatusHealthy, "2 of 2 components deployed"},
			healthCase{"deploying", "status:\n  componentDeploymentConditions:\n  - {type: AllComponentsDeployed, status: \"False\", reason: CommitsUnsynced, message: 1 of 2 components deployed}\n",
				health.HealthStatusProgressing, "1 of 2 components deployed"},
			healthCase{"state unknown", "status:\n  componentDeploymentConditions:\n  - {type: AllComponentsDeployed, status: \"False\", reason: ErrorOccurred, message: no Application}\n",
				health.HealthStatusDegraded, "no Application"},
			healthCase{"a degraded component", "status:\n  gitopsDeployments:\n  - {componentName: web, health: Healthy}\n  - {componentName: api, health: Degraded}\n  componentDeploymentConditions:\n  - {type: AllComponentsDeployed, status: \"True\"}\n",
				health.HealthStatusDegraded, "Component api is Degraded"},
		)},
		{"appstudio.redhat.com/v1alpha1", "PromotionRun", append(readyCases("conditions"),
			healthCase{"new", "spec: {application: a}", health.HealthStatusProgressing, "Promoting"},
			healthCase{"waiting", "status: {state: Waiting}", health.HealthStatusProgressing, "Waiting for another PromotionRun"},
			healthCase{"active", "status:\n  state: Active\n  environmentStatus:\n  - {step: 1, environmentName: dev, status: success}\n  - {step: 2, environmentName: staging, status: in-progress}\n",
				health.HealthStatusProgressing, "Promoting to staging"},
			healthCase{"succeeded", "status: {state: Completed, completionResult: Success}", health.HealthStatusHealthy, "Promoted"},
			healthCase{"failed", "status:\n  state: Completed\n  completionResult: Failure\n  conditions:\n  - {type: ErrorOccurred, status: \"True\", message: Snapshot not found}\n",
				health.HealthStatusDegraded, "Snapshot not found"},
			healthCase{"failed without a condition", "status: {state: Completed, completionResult: Failure}", health.HealthStatusDegraded, "failed"},
		)},
		{"appstudio.redhat.com/v1alpha1", "Environment", append(readyCases("conditions"),
			healthCase{"no condition: nothing went wrong", "spec: {displayName: dev}", health.HealthStatusHealthy, ""},
			healthCase{"error", "status:\n  conditions:\n  - {type: ErrorOccurred, status: \"True\", reason: SecretNotFound, message: Secret creds not found}\n",
				health.HealthStatusDegraded, "Secret creds not found"},
			healthCase{"error resolved", "status:\n  conditions:\n  - {type: ErrorOccurred, status: \"False\", reason: ErrorOccurredResolved}\n", health.HealthStatusHealthy, ""},
			healthCase{"waiting for the claim", "status:\n  conditions:\n  - {type: ErrorOccurred, status: \"False\", reason: DeploymentTargetClaimNotBound, message: claim prod is Pending}\n",
				health.HealthStatusProgressing, "claim prod is Pending"},
		)},
		{"appstudio.redhat.com/v1alpha1", "DeploymentTargetClaim", append(readyCases("conditions"),
			healthCase{"new", "spec: {deploymentTargetClassName: c}", health.HealthStatusProgressing, "Waiting to be bound"},
			healthCase{"pending", "status:\n  phase: Pending\n  conditions:\n  - {type: ErrorOccurred, status: \"False\", reason: WaitingForProvisioner, message: waiting for the provisioner}\n",
				health.HealthStatusProgressing, "waiting for the provisioner"},
			healthCase{"bound", "spec: {targetName: prod-dt}\nstatus:\n  phase: Bound\n  conditions:\n  - {type: ErrorOccurred, status: \"False\", reason: Success}\n",
				health.HealthStatusHealthy, "Bound to prod-dt"},
			healthCase{"lost", "status: {phase: Lost}", health.HealthStatusDegraded, "deleted"},
			healthCase{"error", "status:\n  phase: Pending\n  conditions:\n  - {type: ErrorOccurred, status: \"True\", reason: DeploymentTargetClassNotFound, message: class c not found}\n",
				health.HealthStatusDegraded, "class c not found"},
		)},
	}
	for _, k := range kinds {
		for _, c := range k.cases {
			t.Run(k.kind+"/"+c.name, func(t *testing.T) {
				obj := &unstructured.Unstructured{}
				require.NoError(t, yaml.Unmarshal([]byte(c.object), &obj.Object))
				obj.SetAPIVersion(k.apiVersion)
				obj.SetKind(k.kind)
				obj.SetNamespace("jane")
				obj.SetName("x")
				got, err := ov.GetResourceHealth(obj)
				require.NoError(t, err)
				require.NotNil(t, got, "no health check for %s", k.kind)
				assert.Equal(t, c.status, got.Status, "message: %s", got.Message)
				assert.True(t, strings.Contains(got.Message, c.message), "message %q does not contain %q", got.Message, c.message)
			})
		}
	}
	// Our other kinds keep Argo CD's default (no check).
	for _, kind := range []string{"GitOpsDeploymentManagedEnvironment", "GitOpsDeploymentRepositoryCredentials"} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("managed-gitops.redhat.com/v1alpha1")
		obj.SetKind(kind)
		got, err := ov.GetResourceHealth(obj)
		require.NoError(t, err)
		assert.Nil(t, got, kind)
	}
}
