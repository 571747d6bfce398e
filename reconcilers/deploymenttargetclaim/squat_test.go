//go:build !unit

package deploymenttargetclaim_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/namespace"
	"github.com/gitops-service/gitops-service/test/stack"
)

// provisionedFor lists the namespaces our provisioner made for the claims of
// tenant ns (and of class cls, when set) on this cluster.
func provisionedFor(t *testing.T, ns, cls string) []corev1.Namespace {
	t.Helper()
	sel := client.MatchingLabels{ownership.LabelTenantNS: ns, ownership.LabelOwnerKind: namespace.OwnerKindClaim}
	if cls != "" {
		sel[namespace.LabelClass] = cls
	}
	var list corev1.NamespaceList
	require.NoError(t, k8s.List(context.Background(), &list, sel))
	return list.Items
}

// Issue 21 defect 5: with the old default {namespace}-{claim}, tenant "cert"
// claiming "manager" got cert-manager before the platform installed it. The
// default now names the namespace dt-<namespace>-<claim>-<hash>.
func TestNamespaceProvisionerDefaultNeverSquats(t *testing.T) {
	ns := tenant(t)
	cls := class(t, as.ProvisionerNamespace, as.ReclaimPolicyDelete, "")
	c := claim(t, ns, "manager", cls, "")
	var made []corev1.Namespace
	require.Eventually(t, func() bool { made = provisionedFor(t, ns, ""); return len(made) == 1 }, wait, tick, "no namespace was provisioned")
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(c), c))
	assert.Equal(t, string(c.UID), made[0].Labels[ownership.LabelOwnerUID])
	assert.Equal(t, namespace.DefaultNamespaceName(ns, "manager"), made[0].Name)
	assert.Regexp(t, `^dt-`+ns+`-manager-[0-9a-f]{8}$`, made[0].Name)
	assert.True(t, apierrors.IsNotFound(k8s.Get(context.Background(), types.NamespacedName{Name: ns + "-manager"}, &corev1.Namespace{})),
		"the claim took the namespace %s-manager", ns)
}

// The admin limits a class to selected tenant namespaces: another tenant's
// claim is refused with a condition and an Event, and nothing is made for it.
func TestNamespaceProvisionerTenantSelector(t *testing.T) {
	ns := tenant(t)
	key := "self-service-" + rand.String(5)
	cls := class(t, as.ProvisionerNamespace, as.ReclaimPolicyDelete, fmt.Sprintf(`{"tenantNamespaceSelector": {"matchLabels": {"example.com/%s": "true"}}}`, key))
	c := waitFor(t, claim(t, ns, "qa", cls, ""), func(c *as.DeploymentTargetClaim) bool {
		return hasReason(c, as.DeploymentTargetClaimPhasePending, metav1.ConditionTrue, as.DeploymentTargetReasonClassNotPermitted)
	}, "was refused")
	assert.Contains(t, claimCondition(c).Message, "tenantNamespaceSelector")
	stack.WaitForEvent(t, k8s, c, corev1.EventTypeWarning, as.DeploymentTargetReasonClassNotPermitted, cls, wait)
	assert.Empty(t, provisionedFor(t, ns, ""))

	// Selected by the admin: the claim proceeds.
	tenantNS := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, tenantNS))
	tenantNS.Labels["example.com/"+key] = "true"
	require.NoError(t, k8s.Update(context.Background(), tenantNS))
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(c), c))
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, "nudge", rand.String(5))
	require.NoError(t, k8s.Update(context.Background(), c))
	require.Eventually(t, func() bool { return len(provisionedFor(t, ns, "")) == 1 }, wait, tick, "the selected tenant's claim was not provisioned")
}

// The admin bounds the namespaces a class makes per tenant: of claims made
// at once, exactly maxClaimsPerNamespace get one; the others are refused
// with a condition and an Event. Another tenant has its own count.
func TestNamespaceProvisionerClaimLimit(t *testing.T) {
	ns := tenant(t)
	cls := class(t, as.ProvisionerNamespace, as.ReclaimPolicyDelete, `{"maxClaimsPerNamespace": 2}`)
	claims := make([]*as.DeploymentTargetClaim, 5)
	parallel(len(claims), func(i int) { claims[i] = claim(t, ns, fmt.Sprintf("c%d", i), cls, "") })
	refused := 0
	for _, c := range claims {
		c = waitFor(t, c, func(c *as.DeploymentTargetClaim) bool {
			cond := claimCondition(c)
			return cond != nil && (cond.Reason == as.DeploymentTargetReasonClaimLimitReached || cond.Reason == as.DeploymentTargetReasonWaitingForProvisioner)
		}, "was provisioned or refused")
		if claimCondition(c).Reason == as.DeploymentTargetReasonClaimLimitReached {
			refused++
			assert.Contains(t, claimCondition(c).Message, "maxClaimsPerNamespace 2")
			stack.WaitForEvent(t, k8s, c, corev1.EventTypeWarning, as.DeploymentTargetReasonClaimLimitReached, "maxClaimsPerNamespace", wait)
		}
	}
	assert.Len(t, provisionedFor(t, ns, cls), 2)
	assert.Equal(t, 3, refused)

	other := tenant(t)
	claim(t, other, "c0", cls, "")
	require.Eventually(t, func() bool { return len(provisionedFor(t, other, cls)) == 1 }, wait, tick, "another tenant's claim was counted against this one's")
}
