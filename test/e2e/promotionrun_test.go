package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/test/stack"
)

func waitPromotion(t *testing.T, run *as.PromotionRun, what string, ok func(*as.PromotionRun) bool) *as.PromotionRun {
	t.Helper()
	return stack.WaitFor(t, k8s, run, deployWait, "was "+what, ok)
}

func promotionSucceeded(r *as.PromotionRun) bool {
	return r.Status.State == as.PromotionRunStateCompleted && r.Status.CompletionResult == as.PromotionRunCompleteResultSuccess
}

// running says whether a Deployment runs image, rolled out and available.
func running(d *appsv1.Deployment, image string) bool {
	return d.Spec.Template.Spec.Containers[0].Image == image && d.Status.ObservedGeneration == d.Generation &&
		d.Status.UpdatedReplicas == *d.Spec.Replicas && d.Status.AvailableReplicas == *d.Spec.Replicas
}

// withoutTimes checks each step's times (entered, then verified when it
// succeeded, each step entered after the one before was verified: one
// Environment per level here) and
// returns the steps without them.
func withoutTimes(t *testing.T, steps []as.PromotionRunEnvironmentStatus) []as.PromotionRunEnvironmentStatus {
	t.Helper()
	var out []as.PromotionRunEnvironmentStatus
	for i, s := range steps {
		if assert.NotNil(t, s.StartTime, "step %d entered", s.Step) && s.Status == as.PromotionRunEnvironmentStatusSuccess &&
			assert.NotNil(t, s.VerifiedTime, "step %d verified", s.Step) {
			assert.False(t, s.VerifiedTime.Before(s.StartTime), "step %d verified before it was entered", s.Step)
			if i > 0 && steps[i-1].VerifiedTime != nil {
				assert.False(t, s.StartTime.Before(steps[i-1].VerifiedTime), "step %d entered before step %d was verified", s.Step, steps[i-1].Step)
			}
		}
		if s.Status == as.PromotionRunEnvironmentStatusSuccess && assert.NotEmpty(t, s.Digests, "step %d pinned the digests it verified", s.Step) {
			for _, d := range s.Digests {
				// What the Pods run (RunPods reports a kubelet's image ID), observed since the step started.
				assert.Equal(t, strings.SplitN(stack.ImageID(d.Image), "@", 2)[1], d.Digest, "step %d, component %s", s.Step, d.Component)
				assert.False(t, s.StartTime != nil && d.ObservedTime.Before(s.StartTime), "step %d observed %s before it was entered", s.Step, d.Component)
			}
		}
		s.StartTime, s.VerifiedTime, s.Digests = nil, nil, nil
		out = append(out, s)
	}
	return out
}

// TestPromotionRuns: two components promoted with the real Argo CD to dev (the
// tenant's namespace) and staging (the remote cluster through
// kubernetesCredentials); prod, after staging, is Manual.
func TestPromotionRuns(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	appWithComponents(t, ns, "base")

	kc, err := remote(t).KubeconfigFor(remoteAdminTokenFor(t))
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, credentialsSecret(ns, "staging-creds", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
	stagingNS := remoteNamespace(t, "staging")
	envVar := func(v string) as.EnvironmentConfiguration {
		return as.EnvironmentConfiguration{Env: []as.EnvVarPair{{Name: "ENVIRONMENT", Value: v}}}
	}
	for _, e := range []*as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: as.EnvironmentSpec{DisplayName: "Dev",
			DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated, Configuration: envVar("dev")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{DisplayName: "Staging", ParentEnvironment: "dev",
			DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated, Configuration: envVar("staging"),
			UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
				APIURL: remoteKube.URL, TargetNamespace: stagingNS, ClusterCredentialsSecret: "staging-creds"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: as.EnvironmentSpec{DisplayName: "Prod", ParentEnvironment: "staging",
			DeploymentStrategy: as.DeploymentStrategyManual, Configuration: envVar("prod")}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, e))
	}
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-2", "v2")))

	// A manual promotion of snap-1 to staging, and right after it an automated
	// one of snap-2 from dev, which waits for the first.
	toStaging := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-1-to-staging"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-1", Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "staging"}}}
	require.NoError(t, k8s.Create(ctx, toStaging))
	waitPromotion(t, toStaging, "Active", func(r *as.PromotionRun) bool { return r.Status.State == as.PromotionRunStateActive })
	auto := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-2-from-dev"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-2", Application: "appa", AutomatedPromotion: &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}}}
	require.NoError(t, k8s.Create(ctx, auto))
	waitPromotion(t, auto, "Waiting", func(r *as.PromotionRun) bool { return r.Status.State == as.PromotionRunStateWaiting })

	got := waitPromotion(t, toStaging, "Success", promotionSucceeded)
	staging := "appa-staging" + promotionrun.BindingSuffix
	assert.Equal(t, []string{staging}, got.Status.ActiveBindings)
	assert.Equal(t, []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "staging",
		Status: as.PromotionRunEnvironmentStatusSuccess, DisplayStatus: "All GitOpsDeployments are Synced/Healthy"}}, withoutTimes(t, got.Status.EnvironmentStatus))
	// Success means running: both Deployments are rolled out on the remote
	// cluster with snap-1's images and staging's configuration.
	for _, c := range []string{"frontend", "backend"} {
		d := &appsv1.Deployment{}
		require.NoError(t, remoteK8s.Get(ctx, types.NamespacedName{Namespace: stagingNS, Name: c}, d))
		assert.True(t, running(d, "quay.io/example/"+c+":v1"), "%s on staging: %+v", c, d.Status)
		assert.Equal(t, map[string]string{"ENVIRONMENT": "staging"}, envOf(d))
		_, err := deployment(ns, c)
		assert.True(t, apierrors.IsNotFound(err), "%s was deployed to dev by a promotion to staging", c)
	}

	// The automated one starts now, deploys dev, then staging, and stops
	// before prod (Manual).
	got = waitPromotion(t, auto, "Success", promotionSucceeded)
	assert.Equal(t, []as.PromotionRunEnvironmentStatus{
		{Step: 1, EnvironmentName: "dev", Status: as.PromotionRunEnvironmentStatusSuccess, DisplayStatus: "All GitOpsDeployments are Synced/Healthy"},
		{Step: 2, EnvironmentName: "staging", Status: as.PromotionRunEnvironmentStatusSuccess, DisplayStatus: "All GitOpsDeployments are Synced/Healthy"},
	}, withoutTimes(t, got.Status.EnvironmentStatus))
	assert.Equal(t, []string{staging}, got.Status.ActiveBindings, "the last step's binding")
	assert.False(t, got.Status.PromotionStartTime.Before(&toStaging.CreationTimestamp))
	for _, c := range []string{"frontend", "backend"} {
		d, err := deployment(ns, c)
		require.NoError(t, err)
		assert.True(t, running(d, "quay.io/example/"+c+":v2"), "%s on dev: %+v", c, d.Status)
		assert.Equal(t, map[string]string{"ENVIRONMENT": "dev"}, envOf(d))
		require.NoError(t, remoteK8s.Get(ctx, types.NamespacedName{Namespace: stagingNS, Name: c}, d))
		assert.True(t, running(d, "quay.io/example/"+c+":v2"), "%s on staging: %+v", c, d.Status)
	}
	var sebs as.SnapshotEnvironmentBindingList
	require.NoError(t, k8s.List(ctx, &sebs, client.InNamespace(ns)))
	envs := map[string]string{}
	for _, b := range sebs.Items {
		envs[b.Spec.Environment] = b.Spec.Snapshot
	}
	assert.Equal(t, map[string]string{"dev": "snap-2", "staging": "snap-2"}, envs, "one binding per promoted Environment, none for prod")
	assertEvent(t, got, corev1.EventTypeNormal, "ManualEnvironment")
	for _, run := range []string{toStaging.Name, auto.Name} {
		kubectlWaitReady(t, ns, resPromotionRun, run)
	}
	kubectlWaitReady(t, ns, resBinding, staging)
	kubectlWaitReady(t, ns, resEnvironment, "dev")
}
