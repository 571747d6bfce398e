//go:build !unit

package isolation

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// TestTenantsCannotPromoteAsSomeoneElse: with the shipped requester policy on
// the real API server, a tenant's PromotionRun names only the tenant's own
// user as its requester (not another tenant's, not an Argo CD user's), and
// RBAC keeps it out of another tenant's namespace whoever it names.
func TestTenantsCannotPromoteAsSomeoneElse(t *testing.T) {
	ctx := context.Background()
	installPolicy(t, "promotion-requesters.yaml")
	alice, bob := "alice-"+rand.String(4), "bob-"+rand.String(4)
	nsA, nsB := gateTenant(t, alice), gateTenant(t, bob)
	asAlice := impersonating(t, alice)
	promote := func(ns, by string) *as.PromotionRun {
		return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "promote-"},
			Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app", RequestedBy: &as.Requester{User: by},
				ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	}
	// Once her RBAC and the policy are in the API server's caches (a run
	// admitted before then, in her own namespace, is not what this is about).
	var err error
	require.Eventually(t, func() bool {
		err = asAlice.Create(ctx, promote(nsA, bob))
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
	}, wait, tick, "the admission policy never refused alice promoting as %s", bob)
	assert.Contains(t, err.Error(), "spec.requestedBy.user must be "+alice)
	err = asAlice.Create(ctx, promote(nsA, "argocd:"+alice))
	require.Error(t, err, "alice named an Argo CD user")
	assert.Contains(t, err.Error(), "spec.requestedBy.user must be "+alice)
	for _, by := range []string{alice, bob} {
		err := asAlice.Create(ctx, promote(nsB, by))
		assert.True(t, apierrors.IsForbidden(err), "alice promoting in %s as %s: %v", nsB, by, err)
	}
	var runs as.PromotionRunList
	require.NoError(t, k8s.List(ctx, &runs, client.InNamespace(nsB)))
	assert.Empty(t, runs.Items, "a refused run exists in bob's namespace")

	// As herself she may.
	own := promote(nsA, alice)
	require.NoError(t, asAlice.Create(ctx, own))
	got := &as.PromotionRun{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(own), got))
	assert.Equal(t, alice, got.Spec.RequestedBy.User)
}
