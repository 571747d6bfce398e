// Package argocd is the pure translation of our API types into Argo CD objects
// (Application, AppProject, ApplicationSet, cluster and repository Secrets) and
// of Argo CD's Application status back into ours.
// It has no client: every function maps values to values, so it is tested with
// golden files. Everything Argo-CD-typed lives here.
package argocd
