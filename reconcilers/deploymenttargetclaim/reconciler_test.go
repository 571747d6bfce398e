//go:build !unit

package deploymenttargetclaim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/deploymenttargetclaim"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/devsandbox"
	"github.com/gitops-service/gitops-service/test/stack"
)

// external is a provisioner this sidecar does not run.
const external = "example.test/external"

func isBound(c *as.DeploymentTargetClaim) bool {
	return hasReason(c, as.DeploymentTargetClaimPhaseBound, metav1.ConditionFalse, as.DeploymentTargetReasonSuccess) &&
		c.Annotations[as.AnnBindCompleted] == as.AnnBinderValueTrue
}

func TestStaticBindingByClass(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	other := class(t, external, as.ReclaimPolicyRetain, "")
	target(t, ns, "other-class", other, nil)
	target(t, ns, "no-credentials", cls, func(dt *as.DeploymentTarget) { dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "" })
	target(t, ns, "taken", cls, func(dt *as.DeploymentTarget) { dt.Spec.ClaimRef = "someone-else" })
	dt := target(t, ns, "free", cls, nil)

	c := waitFor(t, claim(t, ns, "dev", cls, ""), isBound, "was bound")
	assert.Equal(t, "free", c.Spec.TargetName)
	assert.Equal(t, as.AnnBinderValueTrue, c.Annotations[as.AnnBoundByController])
	assert.True(t, controllerutil.ContainsFinalizer(c, as.FinalizerBinder))
	dt = waitFor(t, dt, func(dt *as.DeploymentTarget) bool { return dt.Status.Phase == as.DeploymentTargetPhaseBound }, "was Bound")
	assert.Equal(t, "dev", dt.Spec.ClaimRef)

	// The others were left alone.
	taken := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(taken), taken))
	assert.Equal(t, "someone-else", taken.Spec.ClaimRef)
	for _, name := range []string{"other-class", "no-credentials"} {
		o := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o))
		assert.Empty(t, o.Spec.ClaimRef, name)
	}

	// A second claim finds nothing: Pending, marked for the class's
	// provisioner, which this sidecar does not run.
	second := waitFor(t, claim(t, ns, "second", cls, ""), func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionFalse, as.DeploymentTargetReasonWaitingForProvisioner)
	}, "waited for a target")
	// The first claim, bound at its first pass, says so in its phase and
	// Ready, with no Event (four writes per claim, issue 27); the second
	// waits, and gets one when it is bound (below).
	var events corev1.EventList
	require.NoError(t, k8s.List(context.Background(), &events, client.InNamespace(ns)))
	for _, e := range events.Items {
		assert.False(t, e.InvolvedObject.UID == c.UID && e.Reason == "Bound", "a claim bound at once got a Bound Event: %s", e.Message)
	}
	assert.Equal(t, external, second.Annotations[as.AnnTargetProvisioner])
	// Marked for provisioning, it takes only a target made for it: a free one
	// is left alone, the (external) provisioner's is bound at once.
	free := target(t, ns, "late-free", cls, nil)
	target(t, ns, "late", cls, func(dt *as.DeploymentTarget) { dt.Spec.ClaimRef = "second" })
	second = waitFor(t, second, isBound, "was bound to the provisioned target")
	assert.Equal(t, "late", second.Spec.TargetName)
	stack.WaitForEvent(t, k8s, second, corev1.EventTypeNormal, "Bound", "late", wait)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(free), free))
	assert.Empty(t, free.Spec.ClaimRef)
}

// staleClaim serves one claim as a cache that is behind would: an older version.
type staleClaim struct {
	client.Client
	old *as.DeploymentTargetClaim
}

func (s staleClaim) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c, ok := obj.(*as.DeploymentTargetClaim); ok && key == client.ObjectKeyFromObject(s.old) {
		s.old.DeepCopyInto(c)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// A pass that reads a claim from a cache behind the API server (not yet
// showing its provisioner mark, or its binding) reserves no target for it:
// the target would stay pre-bound to a claim that never takes it.
func TestStaleClaimReservesNothing(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	marked := claim(t, ns, "marked", cls, "")
	unmarked := marked.DeepCopy()
	waitFor(t, marked, func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionFalse, as.DeploymentTargetReasonWaitingForProvisioner)
	}, "waited for a target")
	target(t, ns, "mine", cls, nil)
	bound := claim(t, ns, "bound", cls, "")
	unbound := bound.DeepCopy()
	bound = waitFor(t, bound, isBound, "was bound")
	// Created after both decisions, so the sidecar itself never binds it.
	free := target(t, ns, "free", cls, nil)

	for _, old := range []*as.DeploymentTargetClaim{unmarked, unbound} {
		r := &deploymenttargetclaim.Reconciler{Client: staleClaim{Client: k8s, old: old}, APIReader: k8s,
			Recorder: record.NewFakeRecorder(100), Now: time.Now}
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(old)})
		require.NoError(t, err, old.Name)
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(free), free))
		assert.Empty(t, free.Spec.ClaimRef, "reserved for the stale claim %s", old.Name)
	}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(bound), bound))
	assert.Equal(t, "mine", bound.Spec.TargetName)
}

// racingWriter writes a target's status, as the target's own reconciler does
// with its first phase, between the binder's read of the target and its
// claimRef write (once).
type racingWriter struct {
	client.Client
	raced bool
}

func (w *racingWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*as.DeploymentTarget); ok && !w.raced {
		w.raced = true
		cur := &as.DeploymentTarget{}
		if err := w.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return err
		}
		cur.Status.Phase = as.DeploymentTargetPhaseAvailable
		if err := w.Client.Status().Update(ctx, cur); err != nil {
			return err
		}
	}
	return w.Client.Update(ctx, obj, opts...)
}

// A free target whose status was written between the binder's read and its
// write is still bound, not given up for a provisioner (CI saw claims made
// right after their target marked for provisioning). Run by hand in a
// namespace the sidecar never acts in, so no other pass binds it first.
func TestTargetWrittenMeanwhileIsStillBound(t *testing.T) {
	ctx := context.Background()
	ns := "kube-public"
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	dt := target(t, ns, "raced-"+cls, cls, nil)
	c := claim(t, ns, "raced-"+cls, cls, "")
	w := &racingWriter{Client: k8s}
	r := &deploymenttargetclaim.Reconciler{Client: w, APIReader: k8s, Recorder: record.NewFakeRecorder(100), Now: time.Now}
	require.Eventually(t, func() bool {
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		require.NoError(t, err)
		return !res.Requeue
	}, wait, tick, "the pass kept meeting conflicts")
	require.True(t, w.raced, "the target was never written meanwhile")
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(c), c))
	assert.Equal(t, dt.Name, c.Spec.TargetName)
	assert.Empty(t, c.Annotations[as.AnnTargetProvisioner], "marked for a provisioner though a target was free")
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(dt), dt))
	assert.Equal(t, c.Name, dt.Spec.ClaimRef)
}

func TestBindingByTargetName(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	target(t, ns, "first", cls, nil)
	target(t, ns, "wanted", cls, nil)
	c := waitFor(t, claim(t, ns, "prod", cls, "wanted"), isBound, "was bound")
	assert.Equal(t, "wanted", c.Spec.TargetName)
	assert.Empty(t, c.Annotations[as.AnnBoundByController], "the user bound it, not the controller")
	waitFor(t, c, func(c *as.DeploymentTargetClaim) bool { return isReady(c, metav1.ConditionTrue, "Bound") }, "is Ready")

	// A name that does not exist yet: Pending until it does.
	later := waitFor(t, claim(t, ns, "later", cls, "not-yet"), func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionFalse, as.DeploymentTargetReasonWaitingForTarget)
	}, "waited for its target")
	target(t, ns, "not-yet", cls, nil)
	waitFor(t, later, isBound, "was bound once its target existed")
}

func TestTargetNameRefusals(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	other := class(t, external, as.ReclaimPolicyRetain, "")
	target(t, ns, "theirs", cls, func(dt *as.DeploymentTarget) { dt.Spec.ClaimRef = "owner" })
	target(t, ns, "wrong-class", other, nil)
	for _, tc := range []struct{ claim, target, reason, msg string }{
		{"wants-theirs", "theirs", as.DeploymentTargetReasonClaimedByAnother, "bound to another claim (owner)"},
		{"wants-wrong-class", "wrong-class", as.DeploymentTargetReasonMismatch, "its class is"},
	} {
		c := waitFor(t, claim(t, ns, tc.claim, cls, tc.target), func(c *as.DeploymentTargetClaim) bool {
			return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionTrue, tc.reason)
		}, "was refused")
		assert.Contains(t, claimCondition(c).Message, tc.msg)
		waitFor(t, c, func(c *as.DeploymentTargetClaim) bool { return isReady(c, metav1.ConditionFalse, tc.reason) }, "is not Ready")
		stack.WaitForEvent(t, k8s, c, corev1.EventTypeWarning, tc.reason, tc.msg, wait)
	}
	theirs := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(theirs), theirs))
	assert.Equal(t, "owner", theirs.Spec.ClaimRef, "never two claims on one target")

	// A class that does not exist: refused, and the claim can still be deleted.
	c := waitFor(t, claim(t, ns, "no-class", "no-such-class", ""), func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionTrue, as.DeploymentTargetReasonClassNotFound)
	}, "was refused")
	require.NoError(t, k8s.Delete(context.Background(), c))
	waitGone(t, c)
}

// A tenant never reaches another namespace's targets: a targetName is looked
// up in the claim's own namespace only.
func TestOtherTenantsTargetsAreInvisible(t *testing.T) {
	a, b := tenant(t), tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	dt := target(t, a, "shared-name", cls, nil)
	c := waitFor(t, claim(t, b, "thief", cls, "shared-name"), func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionFalse, as.DeploymentTargetReasonWaitingForTarget)
	}, "waited")
	byClass := waitFor(t, claim(t, b, "by-class", cls, ""), func(c *as.DeploymentTargetClaim) bool {
		return c.Status.Phase == as.DeploymentTargetClaimPhasePending
	}, "was pending")
	time.Sleep(time.Second)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt))
	assert.Empty(t, dt.Spec.ClaimRef)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(c), c))
	assert.Equal(t, as.DeploymentTargetClaimPhasePending, c.Status.Phase)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(byClass), byClass))
	assert.Empty(t, byClass.Spec.TargetName)
}

func TestLost(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	dt := target(t, ns, "doomed", cls, nil)
	c := waitFor(t, claim(t, ns, "dev", cls, ""), isBound, "was bound")
	require.NoError(t, k8s.Delete(context.Background(), dt))
	c = waitFor(t, c, func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhaseLost, metav1.ConditionTrue, as.DeploymentTargetReasonLost)
	}, "was Lost")
	stack.WaitForEvent(t, k8s, c, corev1.EventTypeWarning, as.DeploymentTargetReasonLost, "doomed", wait)
}

func TestReclaimRetainReleases(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	dt := target(t, ns, "kept", cls, nil)
	c := waitFor(t, claim(t, ns, "dev", cls, ""), isBound, "was bound")
	require.NoError(t, k8s.Delete(context.Background(), c))
	waitGone(t, c)
	dt = waitFor(t, dt, func(dt *as.DeploymentTarget) bool { return dt.Status.Phase == as.DeploymentTargetPhaseReleased }, "was Released")
	assert.Empty(t, dt.Spec.ClaimRef)
	// A Released target is not bound again by class (as PersistentVolumes).
	next := waitFor(t, claim(t, ns, "next", cls, ""), func(c *as.DeploymentTargetClaim) bool {
		return c.Status.Phase == as.DeploymentTargetClaimPhasePending
	}, "was pending")
	assert.Empty(t, next.Spec.TargetName)
}

func TestReclaimDeleteDeletesTheTarget(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyDelete, "")
	dt := target(t, ns, "disposable", cls, nil)
	c := waitFor(t, claim(t, ns, "dev", cls, ""), isBound, "was bound")
	require.NoError(t, k8s.Delete(context.Background(), c))
	waitGone(t, c)
	waitGone(t, dt)
}

// 100 claims race for 50 matching targets: exactly 50 are bound, each to its
// own target, and the others wait.
func TestConcurrentClaims(t *testing.T) {
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	parallel(50, func(i int) { target(t, ns, fmt.Sprintf("dt-%02d", i), cls, nil) })
	parallel(100, func(i int) { claim(t, ns, fmt.Sprintf("claim-%03d", i), cls, "") })
	checkOneToOne(t, ns, 50, 50)
}

// checkOneToOne waits until bound claims are bound and pending are pending,
// then checks no target has two claims and every claim and target agree.
func checkOneToOne(t *testing.T, ns string, bound, pending int) {
	t.Helper()
	checkOneToOneWith(t, k8s, ns, bound, pending)
}

func checkOneToOneWith(t *testing.T, k8s client.Client, ns string, bound, pending int) {
	t.Helper()
	var claims as.DeploymentTargetClaimList
	require.Eventually(t, func() bool {
		require.NoError(t, k8s.List(context.Background(), &claims, client.InNamespace(ns)))
		b, p := 0, 0
		for _, c := range claims.Items {
			switch {
			case isBound(&c):
				b++
			case c.Status.Phase == as.DeploymentTargetClaimPhasePending:
				p++
			}
		}
		return b == bound && p == pending
	}, 2*wait, tick, "never %d bound and %d pending", bound, pending)
	var dts as.DeploymentTargetList
	require.NoError(t, k8s.List(context.Background(), &dts, client.InNamespace(ns)))
	byTarget := map[string]string{}
	for _, dt := range dts.Items {
		if dt.Spec.ClaimRef != "" {
			byTarget[dt.Name] = dt.Spec.ClaimRef
		}
	}
	seen := map[string]string{}
	for _, c := range claims.Items {
		if c.Spec.TargetName == "" {
			continue
		}
		if prev, ok := seen[c.Spec.TargetName]; ok {
			t.Errorf("target %s is named by claims %s and %s", c.Spec.TargetName, prev, c.Name)
		}
		seen[c.Spec.TargetName] = c.Name
		assert.Equal(t, c.Name, byTarget[c.Spec.TargetName], "target %s's claimRef", c.Spec.TargetName)
	}
	assert.Len(t, byTarget, bound)
}

// spaceRequests lists the SpaceRequests of a claim.
func spaceRequests(t *testing.T, ns, claim string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(devsandbox.SpaceRequestGVK.GroupVersion().WithKind("SpaceRequestList"))
	require.NoError(t, k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{as.LabelDTC: claim}))
	return list.Items
}

// fulfil plays the toolchain: the SpaceRequest is Ready with one namespace.
func fulfil(t *testing.T, sr *unstructured.Unstructured, namespace, secret string) {
	t.Helper()
	sr.Object["status"] = map[string]any{
		"targetClusterURL": "https://api.sandbox.example.test:6443",
		"namespaceAccess":  []any{map[string]any{"name": namespace, "secretRef": secret}},
		"conditions":       []any{map[string]any{"type": "Ready", "status": "True", "reason": "Provisioned"}},
	}
	require.NoError(t, k8s.Status().Update(context.Background(), sr))
}

func TestDevSandboxProvisioning(t *testing.T) {
	ns := tenant(t)
	cls := class(t, as.ProvisionerDevSandbox, as.ReclaimPolicyDelete, "")
	c := claim(t, ns, "staging", cls, "")
	var reqs []unstructured.Unstructured
	require.Eventually(t, func() bool { reqs = spaceRequests(t, ns, "staging"); return len(reqs) == 1 }, wait, tick, "no SpaceRequest")
	sr := &reqs[0]
	assert.Contains(t, sr.GetName(), "staging-")
	tier, _, _ := unstructured.NestedString(sr.Object, "spec", "tierName")
	assert.Equal(t, devsandbox.TierName, tier)
	c = waitFor(t, c, func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionFalse, as.DeploymentTargetReasonWaitingForProvisioner)
	}, "waited for the provisioner")
	assert.Equal(t, string(as.ProvisionerDevSandbox), c.Annotations[as.AnnTargetProvisioner])

	fulfil(t, sr, "staging-env-ns", "staging-env-secret")
	c = waitFor(t, c, isBound, "was bound to the provisioned target")
	assert.Equal(t, "staging-dt", c.Spec.TargetName)
	dt := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staging-dt"}}
	dt = waitFor(t, dt, func(dt *as.DeploymentTarget) bool { return dt.Status.Phase == as.DeploymentTargetPhaseBound }, "was Bound")
	assert.Equal(t, as.DeploymentTargetKubernetesClusterCredentials{
		DefaultNamespace: "staging-env-ns", APIURL: "https://api.sandbox.example.test:6443", ClusterCredentialsSecret: "staging-env-secret",
	}, dt.Spec.KubernetesClusterCredentials)
	assert.Equal(t, "staging", dt.Spec.ClaimRef)
	assert.Equal(t, string(as.ProvisionerDevSandbox), dt.Annotations[as.AnnDynamicallyProvisioned])
	assert.True(t, controllerutil.ContainsFinalizer(dt, as.FinalizerProvisioner))
	require.Eventually(t, func() bool {
		reqs = spaceRequests(t, ns, "staging")
		return len(reqs) == 1 && reqs[0].GetLabels()[as.LabelDT] == "staging-dt"
	}, wait, tick, "SpaceRequest not labelled with its target")

	// Reclaim Delete: the target goes, and its SpaceRequest before it.
	require.NoError(t, k8s.Delete(context.Background(), c))
	waitGone(t, c)
	waitGone(t, dt)
	assert.Empty(t, spaceRequests(t, ns, "staging"))
}

// The toolchain does not let a SpaceRequest go: the target is Failed with a
// condition and an Event, and goes once the release works again.
func TestDevSandboxReleaseFailed(t *testing.T) {
	ns := tenant(t)
	cls := class(t, as.ProvisionerDevSandbox, as.ReclaimPolicyDelete, "")
	c := claim(t, ns, "stuck", cls, "")
	var reqs []unstructured.Unstructured
	require.Eventually(t, func() bool { reqs = spaceRequests(t, ns, "stuck"); return len(reqs) == 1 }, wait, tick, "no SpaceRequest")
	sr := &reqs[0]
	sr.SetFinalizers([]string{"toolchain.dev.openshift.com/test-hold"})
	require.NoError(t, k8s.Update(context.Background(), sr))
	fulfil(t, sr, "stuck-ns", "stuck-secret")
	waitFor(t, c, isBound, "was bound")
	dt := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stuck-dt"}}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt))

	require.NoError(t, k8s.Delete(context.Background(), c))
	waitGone(t, c)
	dt = waitFor(t, dt, func(dt *as.DeploymentTarget) bool { return dt.Status.Phase == as.DeploymentTargetPhaseFailed }, "was Failed")
	cond := claimConditionOfTarget(dt)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, as.DeploymentTargetReasonReleaseFailed, cond.Reason)
	stack.WaitForEvent(t, k8s, dt, corev1.EventTypeWarning, as.DeploymentTargetReasonReleaseFailed, "not freed", wait)
	waitFor(t, dt, func(dt *as.DeploymentTarget) bool {
		c := meta.FindStatusCondition(dt.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == as.DeploymentTargetReasonReleaseFailed
	}, "is not Ready")

	// The toolchain lets go: the target goes too.
	require.Eventually(t, func() bool {
		reqs = spaceRequests(t, ns, "stuck")
		if len(reqs) != 1 {
			return false
		}
		reqs[0].SetFinalizers(nil)
		return k8s.Update(context.Background(), &reqs[0]) == nil
	}, wait, tick)
	waitGone(t, dt)
}

func claimConditionOfTarget(dt *as.DeploymentTarget) *metav1.Condition {
	for i := range dt.Status.Conditions {
		if dt.Status.Conditions[i].Type == as.DeploymentTargetConditionErrorOccurred {
			return &dt.Status.Conditions[i]
		}
	}
	return nil
}

// A claim deleted while its SpaceRequest is still unfulfilled takes the
// request with it.
func TestDevSandboxAbandoned(t *testing.T) {
	ns := tenant(t)
	cls := class(t, as.ProvisionerDevSandbox, as.ReclaimPolicyDelete, "")
	c := claim(t, ns, "brief", cls, "")
	require.Eventually(t, func() bool { return len(spaceRequests(t, ns, "brief")) == 1 }, wait, tick, "no SpaceRequest")
	require.NoError(t, k8s.Delete(context.Background(), c))
	waitGone(t, c)
	assert.Empty(t, spaceRequests(t, ns, "brief"))
}

// Bad parameters of our namespace provisioner are the class's to fix.
func TestNamespaceProvisionerRefusesBadParameters(t *testing.T) {
	ns := tenant(t)
	for _, tc := range []struct{ params, msg string }{
		{`{"namespacePattern": "{namespace}_{claim}"}`, "is not valid"},
		{`{"clusterRoel": "admin"}`, "unknown field"},
		{`{"clusterSecret": "no-such-secret"}`, "does not exist in the GitOps Service's namespace"},
	} {
		cls := class(t, as.ProvisionerNamespace, as.ReclaimPolicyDelete, tc.params)
		c := waitFor(t, claim(t, ns, "c-"+cls, cls, ""), func(c *as.DeploymentTargetClaim) bool {
			return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionTrue, as.DeploymentTargetReasonProvisioningFailed)
		}, "was refused")
		assert.Contains(t, claimCondition(c).Message, tc.msg)
		waitFor(t, c, func(c *as.DeploymentTargetClaim) bool {
			return isReady(c, metav1.ConditionFalse, as.DeploymentTargetReasonProvisioningFailed)
		}, "is not Ready")
	}
}

// deletingWriter deletes the claim right after the binder reserved a target
// for it, before the binding is written on the claim (which carries the
// finalizer): the claim is gone at once.
type deletingWriter struct {
	client.Client
	claim   *as.DeploymentTargetClaim
	deleted bool
}

func (w *deletingWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := w.Client.Update(ctx, obj, opts...); err != nil || w.deleted {
		return err
	}
	if dt, ok := obj.(*as.DeploymentTarget); ok && dt.Spec.ClaimRef == w.claim.Name {
		w.deleted = true
		return w.Client.Delete(ctx, w.claim)
	}
	return nil
}

// The finalizer goes on with the binding, after the target's claimRef: a
// claim deleted in between is gone without one, and the target reserved for
// it is given back, not kept for a claim that will never take it. Run by
// hand in a namespace the sidecar never acts in.
func TestClaimDeletedWhileBindingGivesTheTargetBack(t *testing.T) {
	ctx := context.Background()
	ns := "kube-public"
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	dt := target(t, ns, "given-back-"+cls, cls, nil)
	c := claim(t, ns, "deleted-"+cls, cls, "")
	w := &deletingWriter{Client: k8s, claim: c}
	r := &deploymenttargetclaim.Reconciler{Client: w, APIReader: k8s, Recorder: record.NewFakeRecorder(100), Now: time.Now}
	_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)})
	require.NoError(t, err)
	require.True(t, w.deleted, "the claim was never deleted mid-binding")
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(dt), dt))
	assert.Empty(t, dt.Spec.ClaimRef, "the target stayed reserved for a claim that is gone")
	assert.Empty(t, dt.Annotations[as.AnnBoundByController])
	assert.True(t, apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)), "the claim is gone")
}
