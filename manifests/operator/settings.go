// Package operator holds the GitOps Service's fields of the Argo CD operator's
// ArgoCD resource as shipped (argocd-gitops-service.yaml), so that
// `gitops-service argocd-operator-settings` merges exactly these and no
// second copy of them exists.
package operator

import _ "embed"

// ArgoCDSettings is argocd-gitops-service.yaml: an ArgoCD resource with only
// our fields.
//
//go:embed argocd-gitops-service.yaml
var ArgoCDSettings []byte
