package sidecar

import ctrl "sigs.k8s.io/controller-runtime"

// LateKinds are the kinds whose informers mgr's cache started after it had
// started (lateInformers).
func LateKinds(mgr ctrl.Manager) []string { return mgr.GetCache().(*lateInformers).lateKinds() }
