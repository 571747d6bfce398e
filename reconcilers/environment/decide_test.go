package environment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// An Environment deploying through a claim: what the claim and its target
// decide, and whether what was deployed stays.
func TestSourceFromClaim(t *testing.T) {
	env := envWith(func(env *as.Environment) { env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "prod-dtc" })
	claim := func(phase as.DeploymentTargetClaimPhase) *as.DeploymentTargetClaim {
		return &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "prod-dtc"},
			Spec: as.DeploymentTargetClaimSpec{TargetName: "prod-dt"}, Status: as.DeploymentTargetClaimStatus{Phase: phase}}
	}
	target := func(claimRef, apiURL string) *as.DeploymentTarget {
		dt := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "prod-dt"}}
		dt.Spec.ClaimRef = claimRef
		dt.Spec.KubernetesClusterCredentials = as.DeploymentTargetKubernetesClusterCredentials{
			APIURL: apiURL, ClusterCredentialsSecret: "dt-creds", DefaultNamespace: "team-a", AllowInsecureSkipTLSVerify: true}
		return dt
	}
	const apiURL = "https://api.example.test:6443"
	tests := []struct {
		name    string
		claim   *as.DeploymentTargetClaim
		dt      *as.DeploymentTarget
		want    *Source
		reason  string
		msg     string
		waiting bool
		keep    bool
	}{
		{name: "claim not found: removed", reason: as.EnvironmentReasonDeploymentTargetClaimNotFound, msg: "DeploymentTargetClaim prod-dtc referenced by Environment 'prod' was not found"},
		{name: "pending: waits, keeps", claim: claim(as.DeploymentTargetClaimPhasePending), waiting: true, keep: true,
			reason: as.EnvironmentReasonDeploymentTargetClaimNotBound, msg: `waiting for DeploymentTargetClaim prod-dtc to be Bound (phase "Pending")`},
		{name: "no phase yet: waits", claim: claim(""), waiting: true, keep: true, reason: as.EnvironmentReasonDeploymentTargetClaimNotBound, msg: "to be Bound"},
		{name: "lost: refused, keeps", claim: claim(as.DeploymentTargetClaimPhaseLost), keep: true,
			reason: as.EnvironmentReasonDeploymentTargetClaimLost, msg: "lost its DeploymentTarget prod-dt"},
		{name: "bound, target gone: refused, keeps", claim: claim(as.DeploymentTargetClaimPhaseBound), keep: true,
			reason: as.EnvironmentReasonDeploymentTargetNotFound, msg: "DeploymentTarget prod-dt bound to DeploymentTargetClaim prod-dtc was not found"},
		{name: "bound, target of another claim: refused, keeps", claim: claim(as.DeploymentTargetClaimPhaseBound), dt: target("other", apiURL), keep: true,
			reason: as.EnvironmentReasonDeploymentTargetNotFound},
		{name: "bound, plain http apiURL: refused", claim: claim(as.DeploymentTargetClaimPhaseBound), dt: target("prod-dtc", "http://api.example.test"),
			reason: as.EnvironmentReasonUnsupportedAPIURL, msg: "DeploymentTarget prod-dt has an unsupported apiURL"},
		{name: "bound: the target's cluster, its default namespace only", claim: claim(as.DeploymentTargetClaimPhaseBound), dt: target("prod-dtc", apiURL),
			want: &Source{APIURL: apiURL, CredentialsSecret: "dt-creds", AllowInsecureSkipTLSVerify: true, Namespaces: []string{"team-a"}, AnySecretType: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := credentialsSource(env, tc.claim, tc.dt)
			assert.Equal(t, tc.want, src)
			assert.Equal(t, tc.keep, keeps(err), "what was deployed stays")
			if tc.reason == "" {
				assert.NoError(t, err)
				return
			}
			if tc.waiting {
				w := kernel.AsWaiting(err)
				require.NotNil(t, w, "waiting, not an error: %v", err)
				assert.Equal(t, tc.reason, w.Reason)
				assert.Contains(t, w.Error(), tc.msg)
				assert.Equal(t, kernel.WaitingRetry, w.After)
				return
			}
			r := kernel.AsRefusal(err)
			require.NotNil(t, r, "a refusal: %v", err)
			assert.Equal(t, tc.reason, r.Reason)
			assert.Contains(t, r.Message, tc.msg)
		})
	}
}

// The condition each outcome gives: a refusal is True with a Warning Event,
// waiting is False without one, success resolves an earlier error and adds
// nothing to an Environment that never failed.
func TestSetCondition(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name       string
		before     []metav1.Condition
		err        error
		want       *metav1.Condition
		wantEvents int
	}{
		{name: "never failed, fine: no condition"},
		{name: "refused", err: kernel.Refuse("SecretNotFound", "gone"), wantEvents: 1,
			want: &metav1.Condition{Status: metav1.ConditionTrue, Reason: "SecretNotFound", Message: "gone"}},
		{name: "waiting", err: kernel.Wait("DeploymentTargetClaimNotBound", kernel.WaitingRetry, "claim c to be Bound"),
			want: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "DeploymentTargetClaimNotBound", Message: "waiting for claim c to be Bound"}},
		{name: "fixed", before: []metav1.Condition{{Type: as.EnvironmentConditionErrorOccurred, Status: metav1.ConditionTrue, Reason: "SecretNotFound", Message: "gone"}},
			want: &metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonResolved}},
		{name: "same refusal again: no new Event", err: kernel.Refuse("SecretNotFound", "gone"),
			before: []metav1.Condition{{Type: as.EnvironmentConditionErrorOccurred, Status: metav1.ConditionTrue, Reason: "SecretNotFound", Message: "gone"}},
			want:   &metav1.Condition{Status: metav1.ConditionTrue, Reason: "SecretNotFound", Message: "gone"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			env := envWith(func(env *as.Environment) { env.Generation = 3; env.Status.Conditions = tc.before })
			(&Reconciler{Recorder: rec, Now: func() time.Time { return now.Time }}).setCondition(env, tc.err)
			assert.Len(t, rec.Events, tc.wantEvents)
			if tc.want == nil {
				assert.Empty(t, env.Status.Conditions)
				return
			}
			require.Len(t, env.Status.Conditions, 1)
			got := env.Status.Conditions[0]
			assert.Equal(t, tc.want.Status, got.Status)
			assert.Equal(t, tc.want.Reason, got.Reason)
			assert.Equal(t, tc.want.Message, got.Message)
			assert.Equal(t, int64(3), got.ObservedGeneration)
		})
	}
}
