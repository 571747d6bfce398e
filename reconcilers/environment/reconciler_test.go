//go:build !unit

package environment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	mg "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/environment"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	wait = 30 * time.Second
	tick = stack.Tick
	// watched bounds the wait for a change of a watched Secret to be acted
	// on: well below the 30 s retry, so only the watch can meet it.
	watched = 10 * time.Second
	apiURL  = "https://api.cluster.example.test:6443"
)

func tenant(t *testing.T) string { return stack.Tenant(t, k8s).Name }

// fakeKubeconfig is a kubeconfig for server with a token nobody accepts; the
// token is unique, so a test can look for it where it must never appear.
func fakeKubeconfig(server string) (kubeconfig []byte, token string) {
	token = "sha256~secret-token-" + rand.String(20)
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: %q}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`, server, token)), token
}

func credentialsSecret(t *testing.T, ns, name string, secretType corev1.SecretType, data map[string][]byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: secretType, Data: data}
	require.NoError(t, k8s.Create(context.Background(), s))
	return s
}

func creds(url, secret string) *as.UnstableEnvironmentConfiguration {
	return &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
		APIURL: url, ClusterCredentialsSecret: secret}}
}

func newEnv(t *testing.T, ns, name string, u *as.UnstableEnvironmentConfiguration, mutate func(*as.Environment)) *as.Environment {
	t.Helper()
	env := &as.Environment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       as.EnvironmentSpec{DisplayName: name, UnstableConfigurationFields: u},
	}
	if mutate != nil {
		mutate(env)
	}
	require.NoError(t, k8s.Create(context.Background(), env))
	return env
}

// update re-reads env, changes it and writes it, retrying on conflicts.
func update(t *testing.T, obj client.Object, mutate func()) {
	t.Helper()
	require.Eventually(t, func() bool {
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
		mutate()
		err := k8s.Update(context.Background(), obj)
		if apierrors.IsConflict(err) {
			return false
		}
		require.NoError(t, err)
		return true
	}, wait, tick)
}

func meKey(env *as.Environment) types.NamespacedName {
	return types.NamespacedName{Namespace: env.Namespace, Name: ownership.ManagedEnvironmentName(env.Name)}
}

func secretKey(env *as.Environment) types.NamespacedName {
	return types.NamespacedName{Namespace: env.Namespace, Name: environment.SecretName(env.Name)}
}

func waitManagedEnvironment(t *testing.T, env *as.Environment, cond func(*mg.GitOpsDeploymentManagedEnvironment) bool) *mg.GitOpsDeploymentManagedEnvironment {
	t.Helper()
	me := &mg.GitOpsDeploymentManagedEnvironment{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), meKey(env), me) == nil && cond(me)
	}, wait, tick, "ManagedEnvironment of %s/%s never reached the expected state; last: %+v", env.Namespace, env.Name, me)
	return me
}

func waitSecret(t *testing.T, env *as.Environment, cond func(*corev1.Secret) bool) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), secretKey(env), s) == nil && cond(s)
	}, wait, tick, "Secret of %s/%s never reached the expected state", env.Namespace, env.Name)
	return s
}

func exists[T any](T) bool { return true }

func waitGone(t *testing.T, obj client.Object) { stack.WaitGone(t, k8s, obj, wait) }

// assertNothingWritten checks, for a moment, that env has neither a
// ManagedEnvironment nor a Secret of ours.
func assertNothingWritten(t *testing.T, env *as.Environment) {
	t.Helper()
	require.Never(t, func() bool {
		me := &mg.GitOpsDeploymentManagedEnvironment{}
		s := &corev1.Secret{}
		return k8s.Get(context.Background(), meKey(env), me) == nil || k8s.Get(context.Background(), secretKey(env), s) == nil
	}, time.Second, tick, "something was written for %s/%s", env.Namespace, env.Name)
}

func waitCondition(t *testing.T, env *as.Environment, status metav1.ConditionStatus, reason, msgPart string) *as.Environment {
	t.Helper()
	return waitConditionWithin(t, wait, env, status, reason, msgPart)
}

// waitConditionWithin is waitCondition with its own bound.
func waitConditionWithin(t *testing.T, within time.Duration, env *as.Environment, status metav1.ConditionStatus, reason, msgPart string) *as.Environment {
	t.Helper()
	got := &as.Environment{}
	if !assert.Eventually(t, func() bool {
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(env), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.Conditions, as.EnvironmentConditionErrorOccurred)
		return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, msgPart) && c.ObservedGeneration == got.Generation
	}, within, tick) {
		t.Fatalf("Environment %s/%s never got ErrorOccurred %s/%s %q within %s; last status: %+v", env.Namespace, env.Name, status, reason, msgPart, within, got.Status)
	}
	return got
}

// waitReady waits for env's Ready condition with status and reason, at its
// current generation.
func waitReady(t *testing.T, env *as.Environment, status metav1.ConditionStatus, reason string) {
	t.Helper()
	got := &as.Environment{}
	if !assert.Eventually(t, func() bool {
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(env), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.Conditions, "Ready")
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == got.Generation && got.Status.ObservedGeneration == got.Generation
	}, wait, tick) {
		t.Fatalf("Environment %s/%s never got Ready %s/%s; last status: %+v", env.Namespace, env.Name, status, reason, got.Status)
	}
}

func waitEvent(t *testing.T, env *as.Environment, eventType, reason, msgPart string) {
	t.Helper()
	stack.WaitForEvent(t, k8s, env, eventType, reason, msgPart, wait)
}

// assertNoLeak checks that token appears nowhere but in Secrets: not in the
// Environment, the ManagedEnvironment, or any Event of the namespace.
func assertNoLeak(t *testing.T, ns, token string) {
	t.Helper()
	var envs as.EnvironmentList
	var mes mg.GitOpsDeploymentManagedEnvironmentList
	var events corev1.EventList
	for _, l := range []client.ObjectList{&envs, &mes, &events} {
		require.NoError(t, k8s.List(context.Background(), l, client.InNamespace(ns)))
	}
	assert.NotContains(t, fmt.Sprintf("%+v %+v %+v", envs.Items, mes.Items, events.Items), token, "a credential leaked")
}

func assertOwnedBy(t *testing.T, obj client.Object, env *as.Environment) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	require.NotNil(t, ref, "no controller reference on %s", obj.GetName())
	assert.Equal(t, env.UID, ref.UID)
	assert.Equal(t, "Environment", ref.Kind)
	assert.Equal(t, as.GroupVersion.String(), ref.APIVersion)
	assert.True(t, *ref.BlockOwnerDeletion)
	l := obj.GetLabels()
	assert.True(t, ownership.IsOwnedBy(l, ownership.KindEnvironment, string(env.UID)))
	assert.Equal(t, env.Namespace, l[ownership.LabelTenantNS])
	assert.Equal(t, env.Name, l[as.LabelEnvironment])
}

func TestCreatesManagedEnvironmentAndSecret(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, token := fakeKubeconfig(apiURL)
	credentialsSecret(t, ns, "prod-creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc, "unrelated": []byte("not copied")})
	env := newEnv(t, ns, "prod", &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
		APIURL: apiURL, ClusterCredentialsSecret: "prod-creds", TargetNamespace: "web", AllowInsecureSkipTLSVerify: true,
		Namespaces: []string{"web", "db"}, ClusterResources: true}}, nil)

	me := waitManagedEnvironment(t, env, exists)
	assert.Equal(t, "managed-environment-prod", me.Name)
	assert.Equal(t, mg.GitOpsDeploymentManagedEnvironmentSpec{APIURL: apiURL, ClusterCredentialsSecret: "managed-environment-secret-prod",
		AllowInsecureSkipTLSVerify: true, Namespaces: []string{"web", "db"}, ClusterResources: true}, me.Spec)
	assertOwnedBy(t, me, env)

	s := waitSecret(t, env, exists)
	assert.Equal(t, corev1.SecretType(mg.ManagedEnvironmentSecretType), s.Type)
	assert.Equal(t, map[string][]byte{"kubeconfig": kc}, s.Data, "only the kubeconfig is copied")
	assertOwnedBy(t, s, env)
	assert.Equal(t, s.ResourceVersion, me.Annotations[environment.AnnotationCredentialsVersion])

	waitEvent(t, env, corev1.EventTypeNormal, "ManagedEnvironmentCreated", "managed-environment-prod")
	waitReady(t, env, metav1.ConditionTrue, "Succeeded")
	got := &as.Environment{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), got))
	assert.Nil(t, meta.FindStatusCondition(got.Status.Conditions, as.EnvironmentConditionErrorOccurred), "an Environment that never failed has no condition")
	assertNoLeak(t, ns, token)
}

func TestEnvironmentWithoutCredentialsGetsNothing(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	env := newEnv(t, ns, "dev", nil, nil)
	typeOnly := newEnv(t, ns, "dev2", &as.UnstableEnvironmentConfiguration{ClusterType: as.ConfigurationClusterTypeKubernetes}, nil)
	assertNothingWritten(t, env)
	assertNothingWritten(t, typeOnly)
}

func TestSpecChangesPropagate(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, _ := fakeKubeconfig(apiURL)
	credentialsSecret(t, ns, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	env := newEnv(t, ns, "staging", creds(apiURL, "creds"), nil)
	first := waitManagedEnvironment(t, env, exists)

	const newURL = "https://api.other.example.test:6443"
	update(t, env, func() {
		env.Spec.UnstableConfigurationFields.APIURL = newURL
		env.Spec.UnstableConfigurationFields.TargetNamespace = "elsewhere"
		env.Spec.UnstableConfigurationFields.AllowInsecureSkipTLSVerify = true
		env.Spec.UnstableConfigurationFields.Namespaces = []string{"elsewhere"}
	})
	me := waitManagedEnvironment(t, env, func(me *mg.GitOpsDeploymentManagedEnvironment) bool {
		return me.Spec.APIURL == newURL && me.Spec.AllowInsecureSkipTLSVerify && len(me.Spec.Namespaces) == 1
	})
	assert.Equal(t, first.UID, me.UID, "the ManagedEnvironment is updated, not recreated")
	assert.Equal(t, []string{"elsewhere"}, me.Spec.Namespaces)
}

func TestSecretContentChangePropagates(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, _ := fakeKubeconfig(apiURL)
	user := credentialsSecret(t, ns, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	env := newEnv(t, ns, "staging", creds(apiURL, "creds"), nil)
	copied := waitSecret(t, env, exists)
	before := waitManagedEnvironment(t, env, func(me *mg.GitOpsDeploymentManagedEnvironment) bool {
		return me.Annotations[environment.AnnotationCredentialsVersion] == copied.ResourceVersion
	})

	rotated, token := fakeKubeconfig(apiURL)
	update(t, user, func() { user.Data["kubeconfig"] = rotated })
	// The user's Secret is watched: the copy follows at once, not at the recheck.
	start := time.Now()
	after := waitSecret(t, env, func(s *corev1.Secret) bool { return string(s.Data["kubeconfig"]) == string(rotated) })
	assert.Less(t, time.Since(start), watched, "the rotated Secret was copied only by a recheck")
	assert.Equal(t, copied.UID, after.UID, "the copy is updated in place")
	// The ManagedEnvironment's annotation moves, so its reconciler reconnects at once.
	me := waitManagedEnvironment(t, env, func(me *mg.GitOpsDeploymentManagedEnvironment) bool {
		return me.Annotations[environment.AnnotationCredentialsVersion] == after.ResourceVersion
	})
	assert.Equal(t, before.UID, me.UID)
	assert.Equal(t, before.Generation, me.Generation, "the spec did not change")
	assertNoLeak(t, ns, token)
}

// TestRechecksPeriodically runs a Reconciler by hand: a working Environment is
// looked at again after RecheckInterval (besides the Secret watch), a failing
// one after RetryInterval, one without credentials never.
func TestRechecksPeriodically(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, _ := fakeKubeconfig(apiURL)
	credentialsSecret(t, ns, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	working := newEnv(t, ns, "working", creds(apiURL, "creds"), nil)
	failing := newEnv(t, ns, "failing", creds(apiURL, "missing"), nil)
	local := newEnv(t, ns, "local", nil, nil)
	waitManagedEnvironment(t, working, exists)

	r := &environment.Reconciler{Client: k8s, APIReader: k8s, Recorder: record.NewFakeRecorder(100),
		RecheckInterval: 3 * time.Minute, RetryInterval: 45 * time.Second, Now: time.Now}
	for env, want := range map[*as.Environment]time.Duration{working: 3 * time.Minute, failing: 45 * time.Second, local: 0} {
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(env)})
		require.NoError(t, err)
		assert.Equal(t, want, res.RequeueAfter, env.Name)
	}
}

func TestCredentialsRemovedDeletesManagedEnvironment(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, _ := fakeKubeconfig(apiURL)
	credentialsSecret(t, ns, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	env := newEnv(t, ns, "prod", creds(apiURL, "creds"), nil)
	me := waitManagedEnvironment(t, env, exists)
	s := waitSecret(t, env, exists)

	update(t, env, func() { env.Spec.UnstableConfigurationFields = nil })
	waitGone(t, me)
	waitGone(t, s)
	waitEvent(t, env, corev1.EventTypeNormal, "ManagedEnvironmentDeleted", "no longer has usable cluster credentials")
	user := &corev1.Secret{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "creds"}, user), "the user's Secret stays")

	// Credentials again: a new ManagedEnvironment.
	update(t, env, func() { env.Spec.UnstableConfigurationFields = creds(apiURL, "creds") })
	again := waitManagedEnvironment(t, env, exists)
	assert.NotEqual(t, me.UID, again.UID)
}

func TestEnvironmentDeletedRemovesEverything(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, _ := fakeKubeconfig(apiURL)
	credentialsSecret(t, ns, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	env := newEnv(t, ns, "prod", creds(apiURL, "creds"), nil)
	me := waitManagedEnvironment(t, env, exists)
	s := waitSecret(t, env, exists)

	// This API server runs no garbage collector: the reconciler deletes them.
	require.NoError(t, k8s.Delete(context.Background(), env))
	waitGone(t, me)
	waitGone(t, s)
}

func TestErrorsBecomeConditions(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, token := fakeKubeconfig(apiURL)
	credentialsSecret(t, ns, "good", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	credentialsSecret(t, ns, "opaque", corev1.SecretTypeOpaque, map[string][]byte{"kubeconfig": kc})
	credentialsSecret(t, ns, "no-kubeconfig", mg.ManagedEnvironmentSecretType, map[string][]byte{"config": kc})
	withClaim := func(env *as.Environment) { env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "prod-dtc" }
	tests := []struct {
		name    string
		u       *as.UnstableEnvironmentConfiguration
		mutate  func(*as.Environment)
		reason  string
		msgPart string
	}{
		{name: "missing-secret", u: creds(apiURL, "nope"), reason: as.EnvironmentReasonSecretNotFound,
			msgPart: "the secret nope referenced by the Environment resource was not found"},
		{name: "invalid-secret-name", u: creds(apiURL, "Not_A_Name"), reason: as.EnvironmentReasonSecretNotFound, msgPart: "Not_A_Name"},
		{name: "wrong-type", u: creds(apiURL, "opaque"), reason: as.EnvironmentReasonInvalidSecretType,
			msgPart: "has type 'Opaque'; it must be of type 'managed-gitops.redhat.com/managed-environment'"},
		{name: "no-kubeconfig", u: creds(apiURL, "no-kubeconfig"), reason: as.EnvironmentReasonMissingKubeConfigField, msgPart: "has no 'kubeconfig' field"},
		{name: "http-url", u: creds("http://api.cluster.example.test", "good"), reason: as.EnvironmentReasonUnsupportedAPIURL, msgPart: "must be an https:// URL"},
		{name: "url-with-query", u: creds(apiURL+"?managedEnvironment=x", "good"), reason: as.EnvironmentReasonUnsupportedAPIURL, msgPart: "must not have ? or &"},
		{name: "claim", mutate: withClaim, reason: as.EnvironmentReasonDeploymentTargetClaimNotFound,
			msgPart: "DeploymentTargetClaim prod-dtc referenced by Environment 'claim' was not found in namespace"},
		{name: "claim-and-credentials", u: creds(apiURL, "good"), mutate: withClaim, reason: as.EnvironmentReasonInvalidEnvironment,
			msgPart: "cannot have both DeploymentTargetClaim and credentials configuration set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, ns, tc.name, tc.u, tc.mutate)
			waitCondition(t, env, metav1.ConditionTrue, tc.reason, tc.msgPart)
			waitReady(t, env, metav1.ConditionFalse, tc.reason)
			waitEvent(t, env, corev1.EventTypeWarning, tc.reason, tc.msgPart)
			assertNothingWritten(t, env)
		})
	}
	t.Run("fixed", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, ns, "fixed", creds(apiURL, "later"), nil)
		waitCondition(t, env, metav1.ConditionTrue, as.EnvironmentReasonSecretNotFound, "later")
		credentialsSecret(t, ns, "later", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
		waitConditionWithin(t, watched, env, metav1.ConditionFalse, environment.ReasonResolved, "")
		waitReady(t, env, metav1.ConditionTrue, "Succeeded")
		waitManagedEnvironment(t, env, exists)
	})
	t.Run("broken-after-working", func(t *testing.T) {
		t.Parallel()
		credentialsSecret(t, ns, "short-lived", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
		env := newEnv(t, ns, "broken", creds(apiURL, "short-lived"), nil)
		me := waitManagedEnvironment(t, env, exists)
		s := waitSecret(t, env, exists)
		require.NoError(t, k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "short-lived"}}))
		waitConditionWithin(t, watched, env, metav1.ConditionTrue, as.EnvironmentReasonSecretNotFound, "short-lived")
		// Fail closed: the copy of the credentials the user deleted goes, and
		// the ManagedEnvironment with it.
		waitGone(t, s)
		waitGone(t, me)
	})
	t.Cleanup(func() { assertNoLeak(t, ns, token) })
}

func TestForeignObjectsAreLeftAlone(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, _ := fakeKubeconfig(apiURL)
	credentialsSecret(t, ns, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})

	t.Run("managed-environment", func(t *testing.T) {
		t.Parallel()
		foreign := &mg.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownership.ManagedEnvironmentName("squatted")},
			Spec:       mg.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://mine.example.test", ClusterCredentialsSecret: "mine"},
		}
		require.NoError(t, k8s.Create(context.Background(), foreign))
		env := newEnv(t, ns, "squatted", creds(apiURL, "creds"), nil)
		waitCondition(t, env, metav1.ConditionTrue, as.EnvironmentReasonNameCollision,
			"GitOpsDeploymentManagedEnvironment managed-environment-squatted exists in namespace "+ns+" and was not created by the GitOps Service")
		waitEvent(t, env, corev1.EventTypeWarning, as.EnvironmentReasonNameCollision, "managed-environment-squatted")
		got := &mg.GitOpsDeploymentManagedEnvironment{}
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(foreign), got))
		assert.Equal(t, foreign.Spec, got.Spec)
		assert.Empty(t, got.OwnerReferences)
		assert.Empty(t, got.Labels)
		assert.Empty(t, got.Annotations)
		s := &corev1.Secret{}
		assert.True(t, apierrors.IsNotFound(k8s.Get(context.Background(), secretKey(env), s)), "no copy of the credentials for a refused Environment")

		// Deleting the Environment leaves the foreign object too.
		require.NoError(t, k8s.Delete(context.Background(), env))
		require.Never(t, func() bool {
			return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(foreign), got))
		}, time.Second, tick)
	})
	t.Run("secret", func(t *testing.T) {
		t.Parallel()
		foreign := credentialsSecret(t, ns, environment.SecretName("squatted-secret"), corev1.SecretTypeOpaque, map[string][]byte{"mine": []byte("x")})
		env := newEnv(t, ns, "squatted-secret", creds(apiURL, "creds"), nil)
		waitCondition(t, env, metav1.ConditionTrue, as.EnvironmentReasonNameCollision, "Secret managed-environment-secret-squatted-secret exists")
		assertNothingWrittenBut(t, env)
		got := &corev1.Secret{}
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(foreign), got))
		assert.Equal(t, foreign.ResourceVersion, got.ResourceVersion, "the foreign Secret was written")
	})
	t.Run("our-labels-without-owner-reference", func(t *testing.T) {
		t.Parallel()
		// Labels are easy to copy: without our controller reference it is not ours.
		foreign := &mg.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownership.ManagedEnvironmentName("labelled"), Labels: map[string]string{
				ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelOwnerKind: ownership.KindEnvironment}},
			Spec: mg.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://mine.example.test", ClusterCredentialsSecret: "mine"},
		}
		require.NoError(t, k8s.Create(context.Background(), foreign))
		env := newEnv(t, ns, "labelled", creds(apiURL, "creds"), nil)
		waitCondition(t, env, metav1.ConditionTrue, as.EnvironmentReasonNameCollision, "managed-environment-labelled")
		got := &mg.GitOpsDeploymentManagedEnvironment{}
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(foreign), got))
		// (The ManagedEnvironment reconciler writes its status and finalizer; we write nothing.)
		assert.Equal(t, foreign.Spec, got.Spec)
		assert.Equal(t, foreign.Labels, got.Labels)
		assert.Empty(t, got.OwnerReferences)
		assert.Empty(t, got.Annotations)
	})
}

// assertNothingWrittenBut checks, for a moment, that env has no
// ManagedEnvironment (its Secret name is taken by someone else).
func assertNothingWrittenBut(t *testing.T, env *as.Environment) {
	t.Helper()
	require.Never(t, func() bool {
		return k8s.Get(context.Background(), meKey(env), &mg.GitOpsDeploymentManagedEnvironment{}) == nil
	}, time.Second, tick, "a ManagedEnvironment was written for %s/%s", env.Namespace, env.Name)
}

func TestOtherNamespacesSecretIsNotUsed(t *testing.T) {
	t.Parallel()
	mine, neighbour := tenant(t), tenant(t)
	kc, token := fakeKubeconfig(apiURL)
	credentialsSecret(t, neighbour, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	env := newEnv(t, mine, "prod", creds(apiURL, "creds"), nil)
	waitCondition(t, env, metav1.ConditionTrue, as.EnvironmentReasonSecretNotFound, "was not found in namespace "+mine)
	assertNothingWritten(t, env)
	assertNoLeak(t, mine, token)
}

// TestBindingDestination: an Environment whose credentials work (they point
// at this very API server) gets a connected ManagedEnvironment, and a
// binding to it deploys to that ManagedEnvironment's Argo CD cluster and the
// Environment's targetNamespace.
func TestBindingDestination(t *testing.T) {
	t.Parallel()
	ns := tenant(t)
	kc, err := kube.KubeconfigFor(kube.AdminToken)
	require.NoError(t, err)
	credentialsSecret(t, ns, "creds", mg.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kc})
	u := creds(kube.URL, "creds")
	u.TargetNamespace = "web"
	env := newEnv(t, ns, "prod", u, nil)
	me := waitManagedEnvironment(t, env, func(me *mg.GitOpsDeploymentManagedEnvironment) bool {
		c := meta.FindStatusCondition(me.Status.Conditions, mg.ManagedEnvironmentConditionConnectionInitializationSucceeded)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == me.Generation
	})

	ctx := context.Background()
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: as.ApplicationSpec{DisplayName: "app"}}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"}, Spec: as.SnapshotSpec{Application: "app"}}))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-prod"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "prod", Snapshot: "snap"}}
	require.NoError(t, k8s.Create(ctx, seb))

	in, err := binding.Resolve(ctx, k8s, k8s, stack.SuiteArgoNamespace, seb)
	require.NoError(t, err)
	assert.Equal(t, argocd.ClusterServer(kube.URL, string(me.UID)), in.DestinationServer)
	assert.Equal(t, "web", in.DestinationNamespace)

	// Without credentials, the tenant's own namespace on the local cluster.
	update(t, env, func() { env.Spec.UnstableConfigurationFields = nil })
	waitGone(t, me)
	in, err = binding.Resolve(ctx, k8s, k8s, stack.SuiteArgoNamespace, seb)
	require.NoError(t, err)
	assert.Equal(t, argocd.LocalServer, in.DestinationServer)
	assert.Equal(t, ns, in.DestinationNamespace)
}
