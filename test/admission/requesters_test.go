//go:build !unit

package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// promoterNamespace makes a namespace where users (and the sidecar's
// ServiceAccount) may create and change PromotionRuns.
func promoterNamespace(t *testing.T, users ...string) string {
	return writerNamespace(t, "promoters", "promoter", "promotionruns", users...)
}

func requestedRun(ns, name string, by *as.Requester) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: as.PromotionRunSpec{Snapshot: "snap-1", Application: "shop", RequestedBy: by,
			ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
}

func by(user string, groups ...string) *as.Requester {
	return &as.Requester{User: user, Groups: groups}
}

// TestRequesterIsTheAuthenticatedIdentity runs the shipped admission policy
// gitops-service-promotion-requesters on the real API server: a PromotionRun
// names as its requester only who created it (or, for the sidecar's
// ServiceAccount, itself or an Argo CD user), and no one changes it after.
func TestRequesterIsTheAuthenticatedIdentity(t *testing.T) {
	ctx := context.Background()
	installPolicy(t, "promotion-requesters.yaml")
	ns := promoterNamespace(t, "alice", "mallory", "eve")
	alice, mallory, sidecar := clientAs(t, "alice", "release-managers"), clientAs(t, "mallory"), clientAs(t, sidecarUser, "system:serviceaccounts")
	// eve is in a Kubernetes group that looks like an Argo CD one.
	eve := clientAs(t, "eve", "argocd:ops")

	require.Eventually(t, func() bool {
		err := mallory.Create(ctx, requestedRun(ns, "probe-"+rand.String(4), by("alice")))
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
	}, 30*time.Second, 200*time.Millisecond, "the admission policy does not refuse a promotion as someone else")
	require.Eventually(t, func() bool {
		return alice.Create(ctx, requestedRun(ns, "alice-"+rand.String(4), by("alice"))) == nil
	}, 30*time.Second, 200*time.Millisecond, "alice cannot promote as herself")

	refused := map[string]struct {
		c   client.Client
		r   *as.PromotionRun
		msg string
	}{
		"promoting as someone else":                  {mallory, requestedRun(ns, "m1", by("alice")), "spec.requestedBy.user must be mallory"},
		"claiming a group one is not in":             {mallory, requestedRun(ns, "m2", by("mallory", "release-managers")), "groups the API server authenticated you in"},
		"claiming an Argo CD identity":               {alice, requestedRun(ns, "m3", by("argocd:alice")), "spec.requestedBy.user must be alice"},
		"an argocd: group one is in (not Argo CD's)": {eve, requestedRun(ns, "m4", by("eve", "argocd:ops")), "only the GitOps Service promotes on behalf of an Argo CD user"},
		"the sidecar as a Kubernetes user":           {sidecar, requestedRun(ns, "m5", by("alice")), "as itself or on behalf of Argo CD users"},
		"the sidecar with a Kubernetes group":        {sidecar, requestedRun(ns, "m6", by("argocd:carol", "release-managers")), "as itself or on behalf of Argo CD users"},
		"the sidecar with an empty argocd: name":     {sidecar, requestedRun(ns, "m7", by("argocd:")), "as itself or on behalf of Argo CD users"},
	}
	for name, c := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			err := c.c.Create(ctx, c.r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.msg)
			assert.True(t, apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c.r), &as.PromotionRun{})), "a refused run exists")
		})
	}

	// The sidecar's own runs: the automatic <run>-rollback is created without
	// a requester (the history says unknown), and the sidecar may name itself.
	rollback := requestedRun(ns, "ok5-rollback", nil)
	rollback.Spec.ManualPromotion.Rollback = true
	admitted := map[string]struct {
		c client.Client
		r *as.PromotionRun
	}{
		"oneself with one's group":           {alice, requestedRun(ns, "ok1", by("alice", "release-managers"))},
		"no requester (as the seeds)":        {mallory, requestedRun(ns, "ok2", nil)},
		"the sidecar for an Argo CD user":    {sidecar, requestedRun(ns, "ok3", by("argocd:carol", "argocd:ops"))},
		"the sidecar as itself":              {sidecar, requestedRun(ns, "ok4", by(sidecarUser, "system:serviceaccounts"))},
		"the sidecar's automatic rollback":   {sidecar, rollback},
		"an administrator without requester": {k8s, requestedRun(ns, "ok6", nil)},
	}
	for name, c := range admitted {
		t.Run("admitted: "+name, func(t *testing.T) {
			require.NoError(t, c.c.Create(ctx, c.r))
			got := &as.PromotionRun{}
			require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(c.r), got))
			assert.Equal(t, c.r.Spec.RequestedBy, got.Spec.RequestedBy)
		})
	}

	t.Run("the requester is immutable", func(t *testing.T) {
		r := requestedRun(ns, "frozen", by("alice"))
		require.NoError(t, alice.Create(ctx, r))
		unnamed := requestedRun(ns, "unnamed", nil)
		require.NoError(t, alice.Create(ctx, unnamed))
		for name, c := range map[string]struct {
			run *as.PromotionRun
			mut func(*as.PromotionRun)
		}{
			"another user":       {r, func(p *as.PromotionRun) { p.Spec.RequestedBy.User = "mallory" }},
			"a group added":      {r, func(p *as.PromotionRun) { p.Spec.RequestedBy.Groups = []string{"release-managers"} }},
			"removed":            {r, func(p *as.PromotionRun) { p.Spec.RequestedBy = nil }},
			"set after creation": {unnamed, func(p *as.PromotionRun) { p.Spec.RequestedBy = by("alice") }},
		} {
			// Alice, and not even an administrator (system:masters): the CRD
			// and the policy both refuse.
			for who, c2 := range map[string]client.Client{"alice": alice, "an administrator": k8s} {
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					got := &as.PromotionRun{}
					if err := c2.Get(ctx, client.ObjectKeyFromObject(c.run), got); err != nil {
						return err
					}
					c.mut(got)
					return c2.Update(ctx, got)
				})
				if assert.Error(t, err, "%s: %s", who, name) {
					assert.Contains(t, err.Error(), "immutable", "%s: %s", who, name)
				}
			}
		}
		got := &as.PromotionRun{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(r), got))
		assert.Equal(t, by("alice"), got.Spec.RequestedBy)
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(unnamed), got))
		assert.Nil(t, got.Spec.RequestedBy)

		// Others update the run's metadata (the sidecar its labels and
		// finalizers): the requester is checked when the run is created only.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := &as.PromotionRun{}
			if err := sidecar.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
				return err
			}
			got.Labels = map[string]string{as.LabelEnvironment: "prod"}
			return sidecar.Update(ctx, got)
		})
		require.NoError(t, err, "the sidecar cannot update a run alice requested")
	})
}
