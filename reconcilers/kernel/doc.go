// Package kernel is what every reconciler stands on, so that each one's
// Reconcile reads the same way (as in cluster-api and Flux controllers).
//
// # One Reconcile shape
//
// fetch -> finalizer -> deferred status patch -> reconcileNormal or
// reconcileDelete -> Outcome. Every reconciler follows it; an exception is
// named and justified where it is made.
//
//	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
//		obj := &v1.Thing{}
//		if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
//			// Gone without our finalizer: clean up what we made for it, if anything.
//			return ctrl.Result{}, client.IgnoreNotFound(err)
//		}
//		if !obj.DeletionTimestamp.IsZero() {
//			return kernel.Outcome(ctrl.Result{}, r.reconcileDelete(ctx, obj))
//		}
//		if err := kernel.AddFinalizer(ctx, r.Client, obj, v1.ThingFinalizer); err != nil {
//			return ctrl.Result{}, err
//		}
//		// One status write per pass, only when the status changed;
//		// observedGeneration is set whatever the outcome.
//		patcher := kernel.NewStatusPatcher(r.Client, obj)
//		defer patcher.Patch(ctx, obj, &err)
//		obj.Status.ObservedGeneration = obj.Generation
//		result, err := r.reconcileNormal(ctx, obj)
//		// Every condition goes through the kernel: a Refusal is a Warning
//		// Event when it is new, a Waiting is not, success resolves it.
//		kernel.SetCondition(r.Recorder, obj, &obj.Status.Conditions, conditionFor(err), r.Now.Now(), kernel.AsRefusal(err) != nil)
//		// Ready (kstatus) beside the kind's own conditions: from the outcome,
//		// and from what the kind calls done when the pass ended in nil.
//		kernel.SetReady(&obj.Status.Conditions, err, readiness(obj), obj.Generation, r.Now.Now())
//		return kernel.Outcome(result, err)
//	}
//
// reconcileNormal returns a *Refusal (the user must fix something), a *Waiting
// (another object or a time), ErrStaleCache (our write is not cached yet) or
// any other error (transient: backoff; Transient says which, and then the
// status stays as it was); see errors.go. A function that may refuse returns
// the *Refusal as its error, never beside one. An object that is in the way
// and not ours is a *NotOursError, which the caller turns into a Refusal of
// its own reason. No string comparison decides control flow, and requeue
// intervals are the kernel's named ones. Every Warning Event goes through
// Warning (counted); a test fails on one emitted past it.
//
// Decisions (what to write, which state comes next) are pure functions of what
// was read, table-tested in `make unit`; the Reconcile around them reads and
// writes, tested against a real API server.
package kernel
