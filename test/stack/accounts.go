package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// AddLocalAccount adds an Argo CD local account that can log in with
// password (argocd-cm accounts.<name>, its bcrypt hash in argocd-secret), as
// `argocd account update-password` leaves it. It matters only to a server
// with authentication (StartServerWithAuth).
func (a *ArgoCD) AddLocalAccount(ctx context.Context, name, password string) error {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return err
	}
	secret := map[string]any{"stringData": map[string]string{
		"accounts." + name + ".password":      string(hash),
		"accounts." + name + ".passwordMtime": time.Now().UTC().Format(time.RFC3339),
	}}
	if err := a.patch(ctx, "Secret", "argocd-secret", secret); err != nil {
		return err
	}
	return a.patch(ctx, "ConfigMap", "argocd-cm", map[string]any{"data": map[string]string{"accounts." + name: "login"}})
}

// SetRBAC sets argocd-rbac-cm's policy.default and policy.csv (what users of a
// server with authentication may do).
func (a *ArgoCD) SetRBAC(ctx context.Context, policyDefault, policyCSV string) error {
	return a.patch(ctx, "ConfigMap", "argocd-rbac-cm", map[string]any{"data": map[string]string{
		"policy.default": policyDefault, "policy.csv": policyCSV}})
}

// patch merge-patches a ConfigMap or Secret of the Argo CD namespace.
func (a *ArgoCD) patch(ctx context.Context, kind, name string, patch map[string]any) error {
	cs, err := kubernetes.NewForConfig(a.Kube.Config)
	if err != nil {
		return err
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	switch kind {
	case "Secret":
		_, err = cs.CoreV1().Secrets(a.Namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	default:
		_, err = cs.CoreV1().ConfigMaps(a.Namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return nil
}
