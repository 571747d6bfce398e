// Package argocd is the pure translation of our API types into Argo CD objects
// (Application, AppProject, ApplicationSet, cluster and repository Secrets) and
// of Argo CD's Application status back into ours, plus the contract of our
// ApplicationSet plugin generator (GeneratorParams).
// But for the reader of Argo CD's resource trees in its Redis (resourcetree.go)
// it has no client: every function maps values to values, so it is tested
// with golden files. The reconcilers read and write these objects themselves; how
// an object is marked as ours is reconcilers/ownership's.
package argocd
