package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

var approvalPolicyOnce sync.Once

// applyApprovalPolicy applies the approval admission policy as shipped
// (once), with its sibling: approvals count only while every shipped policy
// is live.
func applyApprovalPolicy(t *testing.T) {
	t.Helper()
	approvalPolicyOnce.Do(func() {
		root, err := stack.RepoRoot()
		require.NoError(t, err)
		files, err := stack.PolicyFiles()
		require.NoError(t, err)
		for _, f := range files {
			out, err := kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "install", f))
			require.NoError(t, err, out)
		}
	})
}

func waitingCondition(r *as.PromotionRun, reason string) *metav1.Condition {
	c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
		return nil
	}
	return c
}

// TestGatedPromotion: dev -> staging -> prod with the real Argo CD, short
// durations: the Snapshot soaks in dev, staging needs two approvals (one with
// the CLI, one with kubectl, each as the user the API server authenticated),
// and prod has a freeze window that the CLI's promotion waits out.
func TestGatedPromotion(t *testing.T) {
	ctx := context.Background()
	applyTenantRoles(t)
	applyApprovalPolicy(t)
	applyRequesterPolicy(t)
	ns := tenantNamespace(t)
	appWithComponents(t, ns, "base")
	alice, bob := "alice-"+rand.String(4), "bob-"+rand.String(4)
	bindClusterRole(t, ns, alice, "edit")
	bindClusterRole(t, ns, bob, "edit")

	kc, err := remote(t).KubeconfigFor(remoteAdminTokenFor(t))
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, credentialsSecret(ns, "remote-creds", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
	onRemote := func(target string) *as.UnstableEnvironmentConfiguration {
		return &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
			APIURL: remoteKube.URL, TargetNamespace: remoteNamespace(t, target), ClusterCredentialsSecret: "remote-creds"}}
	}
	const soak = 20 * time.Second
	for _, e := range []*as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: as.EnvironmentSpec{DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated,
			Gates: &as.PromotionGates{SoakTime: &metav1.Duration{Duration: soak}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated,
			UnstableConfigurationFields: onRemote("staging"),
			Gates:                       &as.PromotionGates{Approvals: &as.ApprovalGate{Required: 2, Users: []string{alice, bob}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: as.EnvironmentSpec{ParentEnvironment: "staging", DeploymentStrategy: as.DeploymentStrategyManual,
			UnstableConfigurationFields: onRemote("prod")}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, e))
	}
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))

	auto := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-1-from-dev"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-1", Application: "appa", AutomatedPromotion: &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}}}
	require.NoError(t, k8s.Create(ctx, auto))

	// dev is verified, then the Snapshot soaks there: the run does not enter staging.
	got := waitPromotion(t, auto, "soaking in dev", func(r *as.PromotionRun) bool { return waitingCondition(r, as.WaitingReasonSoakTime) != nil })
	require.NotEmpty(t, got.Status.EnvironmentStatus)
	dev := got.Status.EnvironmentStatus[0]
	require.NotNil(t, dev.VerifiedTime, "dev verified")
	soaked := dev.VerifiedTime.Add(soak)
	assert.Contains(t, waitingCondition(got, as.WaitingReasonSoakTime).Message, "until "+soaked.UTC().Format(time.RFC3339))
	assert.Len(t, got.Status.EnvironmentStatus, 1, "staging entered while soaking")
	// kubectl get shows what it waits for.
	out, err := kubectl(t, "get", "promotionruns", "-n", ns, auto.Name)
	require.NoError(t, err, out)
	assert.Contains(t, out, "WAITING")
	assert.Contains(t, out, "Snapshot snap-1 to soak in Environment dev")

	// The soak is not cut short: until it ends the run stays in SoakTime...
	for time.Now().Before(soaked.Add(-2 * time.Second)) {
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(auto), got))
		require.NotNil(t, waitingCondition(got, as.WaitingReasonSoakTime), "the soak ended before %s: %v", soaked, got.Status.Conditions)
		require.Len(t, got.Status.EnvironmentStatus, 1, "staging entered while soaking")
		time.Sleep(poll)
	}
	// ...then it waits for the approvals: 0 of 2.
	got = waitPromotion(t, auto, "awaiting approvals", func(r *as.PromotionRun) bool {
		c := waitingCondition(r, as.WaitingReasonAwaitingApproval)
		return c != nil && strings.Contains(c.Message, "0 of 2")
	})
	assert.Len(t, got.Status.EnvironmentStatus, 1, "staging entered without approvals")

	// Alice approves with the CLI, as herself...
	out, code := gitops(t, userKubeconfig(t, alice, ns), "approve", "staging", "--snapshot", "snap-1")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, alice+" approves Snapshot snap-1 into Environment staging")
	waitPromotion(t, auto, "1 of 2", func(r *as.PromotionRun) bool {
		c := waitingCondition(r, as.WaitingReasonAwaitingApproval)
		return c != nil && strings.Contains(c.Message, "1 of 2, approved by "+alice)
	})
	// ...bob cannot approve as alice with kubectl, then approves as himself.
	approvalFile := func(user string) string {
		path := filepath.Join(t.TempDir(), "approval.yaml")
		require.NoError(t, os.WriteFile(path, []byte(`apiVersion: appstudio.redhat.com/v1alpha1
kind: PromotionApproval
metadata:
  generateName: snap-1-into-staging-
spec:
  snapshot: snap-1
  environment: staging
  approver:
    user: `+user+"\n"), 0o600))
		return path
	}
	out, err = kubectl(t, "create", "-n", ns, "--as", bob, "-f", approvalFile(alice))
	require.Error(t, err, out)
	assert.Contains(t, out, "spec.approver.user must be "+bob)
	out, err = kubectl(t, "create", "-n", ns, "--as", bob, "-f", approvalFile(bob))
	require.NoError(t, err, out)

	// Staging is entered and verified; prod is Manual: the run ends there.
	got = waitPromotion(t, auto, "Success", promotionSucceeded)
	require.Len(t, got.Status.EnvironmentStatus, 2)
	assert.Equal(t, "staging", got.Status.EnvironmentStatus[1].EnvironmentName)
	assert.Nil(t, meta.FindStatusCondition(got.Status.Conditions, as.PromotionRunConditionWaiting), "a completed run waits for nothing")

	// prod: a freeze window open now, closing in 25 s; the CLI's promotion waits it out.
	now := time.Now().UTC()
	closes := now.Add(25 * time.Second).Truncate(time.Second)
	opened := now.Truncate(time.Minute)
	prod := &as.Environment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, prod))
	prod.Spec.Gates = &as.PromotionGates{FreezeWindows: []as.FreezeWindow{{Schedule: opened.Format("4 15 * * *"),
		Duration: metav1.Duration{Duration: closes.Sub(opened)}, TimeZone: "UTC", Reason: "release freeze"}}}
	require.NoError(t, k8s.Update(ctx, prod))
	out, code = gitops(t, userKubeconfig(t, alice, ns), "promote", "snap-1", "--to", "prod", "--timeout", "5m")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "waiting: a freeze window of Environment prod (release freeze) to close: until "+closes.Format(time.RFC3339))
	var runs as.PromotionRunList
	require.NoError(t, k8s.List(ctx, &runs))
	for _, r := range runs.Items {
		if r.Namespace == ns && r.Spec.ManualPromotion != nil && r.Spec.ManualPromotion.TargetEnvironment == "prod" {
			assert.False(t, r.Status.PromotionStartTime.Time.Before(closes), "prod entered at %s, inside the window (until %s)", r.Status.PromotionStartTime, closes)
		}
	}
	// The history names who promoted: alice, whom the CLI found with a
	// SelfSubjectReview and the requester policy checked; the automated run
	// (created without a requester) by no one.
	promotedBy := func(env string) map[string]string {
		h := &as.PromotionHistory{}
		by := map[string]string{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: as.PromotionHistoryName("appa", env)}, h) == nil {
			for _, e := range h.Status.Entries {
				by[e.PromotionRun] = e.PromotedBy
			}
		}
		return by
	}
	require.Eventually(t, func() bool { return len(promotedBy("prod")) == 1 }, 30*time.Second, poll, "no history of prod")
	for run, by := range promotedBy("prod") {
		assert.Equal(t, alice, by, "the requester of %s", run)
	}
	staging, ok := promotedBy("staging")[auto.Name]
	assert.True(t, ok, "no history entry of %s in staging", auto.Name)
	assert.Equal(t, "", staging, "the automated run's requester")
}
