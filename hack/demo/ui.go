package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// uiUser is the demo's tenant user: an Argo CD local account that the tenant
// mapping (the namespace annotation) gives the tenant's Applications.
const uiUser = "developer"

// startUI wires the panel into Argo CD as the README's install steps do: the
// proxy extension to the sidecar's ui-proxy, and the panel's JavaScript under
// /tmp/extensions, where argocd-server loads UI extensions from.
func (d *demo) startUI() error {
	if err := d.argo.RegisterProxyExtension(d.ctx, uiproxy.ExtensionName, "http://"+d.proxyAddr, uiproxy.HeaderToken, d.token); err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join(d.root, "extension", "ui", "extension-gitops-service.js"))
	if err != nil {
		return err
	}
	// One folder per demo: every argocd-server on the machine reads /tmp/extensions.
	d.extDir = filepath.Join("/tmp/extensions", fmt.Sprintf("gitops-service-demo-%d", os.Getpid()))
	if err := os.MkdirAll(d.extDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.extDir, "extension-gitops-service.js"), src, 0o644); err != nil {
		return err
	}
	return d.tenantUser()
}

// tenantUser makes the account uiUser and maps it to the tenant's namespace, as
// a platform admin does (the sidecar then makes its Argo CD project role).
func (d *demo) tenantUser() error {
	pw := make([]byte, 8)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	d.uiPassword = hex.EncodeToString(pw)
	if err := d.argo.CreateAccount(d.ctx, uiUser, d.uiPassword); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(d.kube.Config)
	if err != nil {
		return err
	}
	// The demo's one user also keeps the gates (Unfreeze, release in the panel).
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`, argocd.AnnotationArgoCDSubjects, uiUser, argocd.AnnotationArgoCDReleaseManagers, uiUser)
	_, err = cs.CoreV1().Namespaces().Patch(d.ctx, tenant, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
