package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	generator "github.com/gitops-service/gitops-service/applicationset-generator"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

// componentFiles is a kustomize base (a Deployment named like the component,
// whose Pods RunPods reports running) and a dev overlay, as App Studio's GitOps
// repositories lay them out.
func componentFiles(component string) map[string]string {
	base := "components/" + component + "/base/"
	return map[string]string{
		base + "kustomization.yaml": "resources:\n- deployment.yaml\n",
		base + "deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s, %[2]s: "true"}
    spec:
      containers:
      - name: app
        image: quay.io/example/%[1]s:placeholder
`, component, stack.PodRunLabel),
		"components/" + component + "/overlays/dev/kustomization.yaml": "resources:\n- ../../base\n",
	}
}

// appWithComponents makes Application appa in ns with Components frontend and
// backend, whose manifests are in a new git repository at
// components/<component>/<dir>; it returns the commit.
func appWithComponents(t *testing.T, ns, dir string) string {
	t.Helper()
	ctx := context.Background()
	files := componentFiles("frontend")
	for k, v := range componentFiles("backend") {
		files[k] = v
	}
	repo, sha := gitRepo(t, files)
	// Every test of appa leaves the Application names free for the next one.
	removeBindingsAfter(t, ns)
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa"}, Spec: as.ApplicationSpec{DisplayName: "App A"}}))
	for _, c := range []string{"frontend", "backend"} {
		comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c},
			Spec: as.ComponentSpec{ComponentName: c, Application: "appa", ContainerImage: "quay.io/example/" + c + ":placeholder"}}
		require.NoError(t, k8s.Create(ctx, comp))
		comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: repo.URL, Branch: "main", Context: "components/" + c + "/" + dir}
		require.NoError(t, k8s.Status().Update(ctx, comp))
	}
	return sha
}

// snapshotOf is a Snapshot of appa whose two components have images tagged tag.
func snapshotOf(ns, name, tag string) *as.Snapshot {
	return &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: as.SnapshotSpec{Application: "appa",
		Components: []as.SnapshotComponent{
			{Name: "frontend", ContainerImage: "quay.io/example/frontend:" + tag},
			{Name: "backend", ContainerImage: "quay.io/example/backend:" + tag},
		}}}
}

func deployment(ns, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	return d, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d)
}

func envOf(d *appsv1.Deployment) map[string]string {
	out := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

func TestBindingDeploysSnapshotWithConfiguration(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	sha := appWithComponents(t, ns, "overlays/dev")
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"},
		Spec: as.EnvironmentSpec{DisplayName: "Dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated,
			Configuration: as.EnvironmentConfiguration{Env: []as.EnvVarPair{{Name: "REGION", Value: "eu"}, {Name: "LOG", Value: "info"}}}}}))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-1",
			Components: []as.BindingComponent{{Name: "backend", Configuration: as.BindingComponentConfiguration{
				Replicas: ptr.To(3), Env: []as.EnvVarPair{{Name: "LOG", Value: "debug"}}}}}}}
	require.NoError(t, k8s.Create(ctx, seb))

	// Both components run the Snapshot's images, with the binding's replicas
	// and the env of the Environment overridden by the binding's.
	require.Eventually(t, func() bool {
		fe, err1 := deployment(ns, "frontend")
		be, err2 := deployment(ns, "backend")
		return err1 == nil && err2 == nil &&
			fe.Spec.Template.Spec.Containers[0].Image == "quay.io/example/frontend:v1" &&
			be.Spec.Template.Spec.Containers[0].Image == "quay.io/example/backend:v1"
	}, deployWait, poll, "the Snapshot's images were not deployed")
	be, _ := deployment(ns, "backend")
	fe, _ := deployment(ns, "frontend")
	assert.Equal(t, int32(3), *be.Spec.Replicas)
	assert.Equal(t, map[string]string{"REGION": "eu", "LOG": "debug"}, envOf(be))
	assert.Equal(t, int32(1), *fe.Spec.Replicas)
	assert.Equal(t, map[string]string{"REGION": "eu", "LOG": "info"}, envOf(fe))

	got := waitBinding(t, seb, "all components deployed at the commit", func(b *as.SnapshotEnvironmentBinding) bool {
		return meta.IsStatusConditionTrue(b.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed) &&
			len(b.Status.GitOpsDeployments) == 2 && b.Status.GitOpsDeployments[0].GitOpsDeploymentCommitID == sha
	})
	assert.Equal(t, "2 of 2 components deployed", meta.FindStatusCondition(got.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed).Message)
	var apps argov1alpha1.ApplicationList
	require.NoError(t, k8s.List(ctx, &apps, client.InNamespace(argo.Namespace), client.MatchingLabels{ownership.LabelOwnerUID: string(seb.UID)}))
	require.Len(t, apps.Items, 2)
	for _, a := range apps.Items {
		assert.Equal(t, "appa", a.Labels[as.LabelApplication])
		assert.Equal(t, "dev", a.Labels[as.LabelEnvironment])
		assert.Contains(t, []string{"frontend", "backend"}, a.Labels[as.LabelComponent])
	}

	// A new Snapshot rolls both components, without waiting for the plugin's requeue.
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-2", "v2")))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(seb), seb))
	// A merge patch: the sidecar writes the binding's status meanwhile.
	patch := client.MergeFrom(seb.DeepCopy())
	seb.Spec.Snapshot = "snap-2"
	require.NoError(t, k8s.Patch(ctx, seb, patch))
	require.Eventually(t, func() bool {
		fe, err1 := deployment(ns, "frontend")
		be, err2 := deployment(ns, "backend")
		return err1 == nil && err2 == nil &&
			fe.Spec.Template.Spec.Containers[0].Image == "quay.io/example/frontend:v2" &&
			be.Spec.Template.Spec.Containers[0].Image == "quay.io/example/backend:v2"
	}, deployWait, poll, "the new Snapshot was not rolled out")
	// ...and the binding says so: every component Synced and Healthy at the commit.
	got = waitBinding(t, seb, "all components deployed and healthy after the roll", func(b *as.SnapshotEnvironmentBinding) bool {
		if !meta.IsStatusConditionTrue(b.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed) ||
			len(b.Status.GitOpsDeployments) != 2 {
			return false
		}
		for _, d := range b.Status.GitOpsDeployments {
			if d.GitOpsDeploymentSyncStatus != "Synced" || d.GitOpsDeploymentHealthStatus != "Healthy" || d.GitOpsDeploymentCommitID != sha {
				return false
			}
		}
		return true
	})
	assert.Equal(t, "snap-2", got.Spec.Snapshot)

	// Deleting the binding removes what it deployed.
	require.NoError(t, k8s.Delete(ctx, seb))
	waitDeleted(t, seb)
	require.Eventually(t, func() bool {
		_, err1 := deployment(ns, "frontend")
		_, err2 := deployment(ns, "backend")
		return err1 != nil && err2 != nil
	}, deployWait, poll, "the binding's Deployments outlived it")
}

// TestBindingsOfTwoTenantsWithTheSameNames: two tenants whose binding,
// application, environment and components have the same names both deploy
// (their Applications share Argo CD's namespace: the second binding's get
// names of their own), and the second keeps its Applications, not renamed,
// when the first goes away.
func TestBindingsOfTwoTenantsWithTheSameNames(t *testing.T) {
	ctx := context.Background()
	bind := func(ns, snapshot string) *as.SnapshotEnvironmentBinding {
		appWithComponents(t, ns, "overlays/dev")
		require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}, Spec: as.EnvironmentSpec{DisplayName: "Dev"}}))
		require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
		seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-dev"},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: snapshot}}
		require.NoError(t, k8s.Create(ctx, seb))
		return seb
	}
	deployed := func(seb *as.SnapshotEnvironmentBinding, tag string) *as.SnapshotEnvironmentBinding {
		require.Eventually(t, func() bool {
			for _, c := range []string{"frontend", "backend"} {
				d, err := deployment(seb.Namespace, c)
				if err != nil || d.Spec.Template.Spec.Containers[0].Image != "quay.io/example/"+c+":"+tag {
					return false
				}
			}
			return true
		}, deployWait, poll, "tenant %s does not run its Snapshot's images %s", seb.Namespace, tag)
		return waitBinding(t, seb, "all components deployed", func(b *as.SnapshotEnvironmentBinding) bool {
			return meta.IsStatusConditionTrue(b.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed) &&
				len(b.Status.GitOpsDeployments) == 2
		})
	}
	appsOf := func(seb *as.SnapshotEnvironmentBinding) map[string]types.UID {
		var apps argov1alpha1.ApplicationList
		require.NoError(t, k8s.List(ctx, &apps, client.InNamespace(argo.Namespace), client.MatchingLabels{ownership.LabelOwnerUID: string(seb.UID)}))
		out := map[string]types.UID{}
		for _, a := range apps.Items {
			assert.Equal(t, seb.Namespace, a.Spec.Destination.Namespace, "Application %s", a.Name)
			out[a.Name] = a.UID
		}
		return out
	}

	first := bind(tenantNamespace(t), "snap-1")
	got1 := deployed(first, "v1")
	assert.Equal(t, "appa-dev-appa-dev-backend", got1.Status.GitOpsDeployments[0].GitOpsDeployment, "the original service's name when it is free")
	second := bind(tenantNamespace(t), "snap-1")
	got2 := deployed(second, "v1")
	if c := meta.FindStatusCondition(got2.Status.BindingConditions, as.BindingConditionErrorOccurred); c != nil {
		assert.Equal(t, metav1.ConditionFalse, c.Status, "the second binding: %s", c.Message)
	}
	for i, d := range got2.Status.GitOpsDeployments {
		assert.NotEqual(t, got1.Status.GitOpsDeployments[i].GitOpsDeployment, d.GitOpsDeployment)
		assert.True(t, strings.HasPrefix(d.GitOpsDeployment, "appa-dev-appa-dev-"+d.ComponentName+"-"), d.GitOpsDeployment)
	}
	before := appsOf(second)
	require.Len(t, before, 2)

	// The first goes; a new Snapshot of the second is deployed by the same
	// Applications (Argo CD regenerated them under the names they have).
	require.NoError(t, k8s.Delete(ctx, first))
	waitDeleted(t, first)
	require.NoError(t, k8s.Create(ctx, snapshotOf(second.Namespace, "snap-2", "v2")))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(second), second))
	patch := client.MergeFrom(second.DeepCopy())
	second.Spec.Snapshot = "snap-2"
	require.NoError(t, k8s.Patch(ctx, second, patch))
	deployed(second, "v2")
	assert.Equal(t, before, appsOf(second), "the second tenant's Applications were renamed or recreated")
}

func waitBinding(t *testing.T, seb *as.SnapshotEnvironmentBinding, what string, ok func(*as.SnapshotEnvironmentBinding) bool) *as.SnapshotEnvironmentBinding {
	t.Helper()
	return stack.WaitFor(t, k8s, seb, deployWait, "had "+what, ok)
}

func TestBindingErrorsWriteNothing(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa"}, Spec: as.ApplicationSpec{DisplayName: "A"}}))
	// One Environment per case: two bindings of one application and environment
	// are themselves an error (checked last).
	for _, env := range []string{"env-1", "env-2", "env-3", "env-4"} {
		require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: env}}))
	}
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "of-b"},
		Spec: as.SnapshotSpec{Application: "appb", Components: []as.SnapshotComponent{{Name: "x", ContainerImage: "quay.io/x:1"}}}}))
	cases := map[string]struct {
		spec as.SnapshotEnvironmentBindingSpec
		msg  string
	}{
		"missing snapshot":    {as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "env-1", Snapshot: "nope"}, `Snapshot "nope" not found`},
		"missing environment": {as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "nope", Snapshot: "of-b"}, `Environment "nope" not found`},
		"missing application": {as.SnapshotEnvironmentBindingSpec{Application: "nope", Environment: "env-3", Snapshot: "of-b"}, `Application "nope" not found`},
		"snapshot of another application": {as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "env-4", Snapshot: "of-b"},
			`is of Application "appb"`},
		"second binding of one application and environment": {as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "env-4", Snapshot: "of-b"},
			"duplicate combination of Application (appa) and Environment (env-4). Duplicated by: "},
	}
	for _, name := range []string{"missing snapshot", "missing environment", "missing application", "snapshot of another application",
		"second binding of one application and environment"} {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-"}, Spec: tc.spec}
			if name == "second binding of one application and environment" {
				// Created in the same second as the first, the older one is the
				// one whose name sorts first: make that the first.
				seb.GenerateName = "zz-second-"
			}
			require.NoError(t, k8s.Create(ctx, seb))
			got := waitBinding(t, seb, "an error condition", func(b *as.SnapshotEnvironmentBinding) bool {
				c := meta.FindStatusCondition(b.Status.BindingConditions, as.BindingConditionErrorOccurred)
				return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, tc.msg)
			})
			assertNothingWrittenFor(t, got, ns)
			assertWarningEvent(t, got)
		})
	}
}

// TestGeneratorRefusesWithoutToken: the sidecar's plugin generator, as Argo CD
// reaches it, answers only with the token of the generator Secret.
func TestGeneratorRefusesWithoutToken(t *testing.T) {
	body := `{"applicationSetName":"x","input":{"parameters":{"namespace":"nobody","binding":"none"}}}`
	for name, tc := range map[string]struct {
		auth string
		want int
	}{
		"no token":    {"", http.StatusUnauthorized},
		"wrong token": {"Bearer not-" + side.GeneratorToken, http.StatusUnauthorized},
		// With the token the request is read: this binding does not exist.
		"Argo CD's token": {"Bearer " + side.GeneratorToken, http.StatusBadRequest},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, side.GeneratorURL+generator.Path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tc.want, resp.StatusCode, "%s", out)
			if tc.want == http.StatusBadRequest {
				assert.Contains(t, string(out), "SnapshotEnvironmentBinding nobody/none not found")
			} else {
				assert.NotContains(t, string(out), "nobody", "an unauthenticated request is not read")
			}
		})
	}
}
