//go:build !unit

package deploymenttargetclaim_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/deploymenttargetclaim"
)

// conflictCounter counts the 409s the API server answers the binder's
// PUTs with, the whole-object writes that are locked by their
// resourceVersion alone.
type conflictCounter struct {
	client.Client
	conflicts *atomic.Int64
}

func (c conflictCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	if apierrors.IsConflict(err) {
		c.conflicts.Add(1)
	}
	return err
}

func (c conflictCounter) Status() client.SubResourceWriter {
	return conflictCountingStatus{SubResourceWriter: c.Client.Status(), conflicts: c.conflicts}
}

type conflictCountingStatus struct {
	client.SubResourceWriter
	conflicts *atomic.Int64
}

func (c conflictCountingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := c.SubResourceWriter.Update(ctx, obj, opts...)
	if apierrors.IsConflict(err) {
		c.conflicts.Add(1)
	}
	return err
}

// Four binders with nothing in common but the API server (as two processes
// during a leader handover, without the in-process reservations that keep
// one process's workers apart), each reading the API server directly, race
// for 20 targets with 40 claims, started together and going through the
// claims in the same order, beside the suite's sidecar: the binder's PUTs
// (the target's claimRef, the claim's binding, the claim's phase) are locked
// by the resourceVersion read, so exactly 20 claims are bound, each to its
// own target, no target twice, and the 20 a loser reserved are given back.
func TestRivalBindersNeverBindATargetTwice(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	cls := class(t, external, as.ReclaimPolicyRetain, "")
	parallel(20, func(i int) { target(t, ns, fmt.Sprintf("dt-%02d", i), cls, nil) })
	parallel(40, func(i int) { claim(t, ns, fmt.Sprintf("claim-%02d", i), cls, "") })

	var conflicts atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		r := &deploymenttargetclaim.Reconciler{Client: conflictCounter{Client: k8s, conflicts: &conflicts}, APIReader: k8s,
			Recorder: record.NewFakeRecorder(1000), Now: time.Now}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Until a pass over all claims asks for no retry at once.
			for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
				again := false
				for i := range 40 {
					res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("claim-%02d", i)}})
					if !assert.NoError(t, err) {
						return
					}
					again = again || res.Requeue
				}
				if !again {
					return
				}
			}
			t.Error("the rival binders kept meeting conflicts")
		}()
	}
	close(start)
	wg.Wait()
	checkOneToOne(t, ns, 20, 20)
	assert.NotZero(t, conflicts.Load(), "no binder's PUT ever lost a race: the test raced nothing")
}
