// Package kernel is what every reconciler stands on, so that each one's
// Reconcile reads the same way (as in cluster-api and Flux controllers):
//
//	obj, err := get (NotFound: clean up what we made for it)
//	patcher := kernel.NewStatusPatcher(r.Client, obj)
//	defer patcher.Patch(ctx, obj, &err)   // one status write, only when it changed
//	                                      // (.Remembering(StatusWrites) where statuses change often)
//	deleting? -> finalize, kernel.RemoveFinalizer
//	kernel.AddFinalizer before writing anything that must be cleaned up
//	apply -> conditions (kernel.SetCondition / kernel.SetError) -> kernel.Outcome
//
// and one error model: a *Refusal is a problem the user must fix (a condition
// and a Warning Event, looked at again later, no backoff storm), ErrStaleCache
// is our own write not yet in the cache (requeue soon), Waiting is another
// object we wait for (RequeueAfter), and any other error is transient
// (returned: backoff).
package kernel
