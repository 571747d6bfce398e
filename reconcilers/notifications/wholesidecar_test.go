//go:build !unit

package notifications_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/notifications"
	"github.com/gitops-service/gitops-service/test/stack"
)

// The whole sidecar, as registry.go wires it, with the real PromotionRun
// reconciler writing the run's status: a run held by a frozen Environment is
// told as frozen; unfrozen, it fails (its Snapshot does not exist), told as
// failed. So the events are read from the status the PromotionRun
// reconciler really writes.
func TestWithTheWholeSidecarTheRunsOwnStatusIsTold(t *testing.T) {
	hook := newReceiver(t, false)
	tenant := stack.Tenant(t, k8s)
	argoNS := platform(t, map[string]string{
		"service.webhook.gitops-service": fmt.Sprintf("url: %s/hook\n", hook.URL),
		notifications.GrantsKey:          fmt.Sprintf("%s:\n  gitops-service: ['*']\n", tenant.Name),
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := sidecar.New(ctx, kube.Config, sidecar.Options{
		ArgoNamespace: argoNS, MetricsAddr: "0", ProbeAddr: "0", QPS: 200, Burst: 400, Concurrency: 2, SyncPeriod: time.Hour,
		Egress:         egress.Policy{AllowRanges: []netip.Prefix{netip.MustParsePrefix(stack.StackLoopback)}},
		ServiceAccount: argoNS + "/gitops-service",
	})
	require.NoError(t, err)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = mgr.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-stopped })

	env := environment(t, tenant.Name, "prod", &as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true, Reason: "incident 7"}},
		map[string]string{"notifications.argoproj.io/subscribe..gitops-service": ""})
	run := promotionRun(t, tenant.Name, "prod")
	eventuallyExactly(t, "frozen, told once", func() bool {
		return strings.Join(hook.webhookEvents(t), ",") == notifications.EventFrozen
	})
	require.Contains(t, string(hook.got()[0].body), "incident 7")

	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(env), env))
	env.Spec.Gates.Freeze.Frozen = false
	require.NoError(t, k8s.Update(context.Background(), env))
	stack.WaitFor(t, k8s, run, within, "fails", func(r *as.PromotionRun) bool {
		return r.Status.CompletionResult == as.PromotionRunCompleteResultFailure
	})
	eventuallyExactly(t, "then failed, told once", func() bool {
		return strings.Join(hook.webhookEvents(t), ",") == notifications.EventFrozen+","+notifications.EventFailed
	})
}
