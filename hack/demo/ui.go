package main

import (
	"fmt"
	"os"
	"path/filepath"

	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// The demo's web UI login: a local account of the tenant, who sees only the
// tenant's Applications.
const uiUser = tenant

// startUI wires the panel into Argo CD as the README's install steps do (proxy
// extension to the sidecar's ui-proxy, the panel's JavaScript under
// /tmp/extensions) and starts an argocd-server with authentication on, where
// uiUser may get the tenant's Applications (its AppProject, named after the
// namespace's UID) and invoke the extension. It returns the UI's address and
// the user's password.
func (d *demo) startUI() (string, string, error) {
	ctx := d.ctx
	if err := d.argo.RegisterProxyExtension(ctx, uiproxy.ExtensionName, "http://"+d.proxyAddr, uiproxy.HeaderToken, d.token); err != nil {
		return "", "", err
	}
	src, err := os.ReadFile(filepath.Join(d.root, "extension", "ui", "extension-gitops-service.js"))
	if err != nil {
		return "", "", err
	}
	// One folder per demo: every argocd-server on the machine reads /tmp/extensions.
	d.extDir = filepath.Join("/tmp/extensions", fmt.Sprintf("gitops-service-demo-%d", os.Getpid()))
	if err := os.MkdirAll(d.extDir, 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(d.extDir, "extension-gitops-service.js"), src, 0o644); err != nil {
		return "", "", err
	}
	project, err := d.tenantProject()
	if err != nil {
		return "", "", err
	}
	password := randomHex(8)
	if err := d.argo.AddLocalAccount(ctx, uiUser, password); err != nil {
		return "", "", err
	}
	policy := fmt.Sprintf("p, role:%[1]s, applications, get, %[2]s/*, allow\np, role:%[1]s, applications, sync, %[2]s/*, allow\n"+
		"p, role:%[1]s, extensions, invoke, %[3]s, allow\ng, %[1]s, role:%[1]s\n", uiUser, project, uiproxy.ExtensionName)
	if err := d.argo.SetRBAC(ctx, "", policy); err != nil {
		return "", "", err
	}
	addr, err := d.argo.StartServerWithAuth(ctx)
	return addr, password, err
}

// tenantProject is the AppProject of the tenant's Applications.
func (d *demo) tenantProject() (string, error) {
	out, err := d.kubectl("", "-n", "argocd", "get", "applications.argoproj.io", "-l", "app.kubernetes.io/managed-by=gitops-service",
		"-o", "jsonpath={.items[0].spec.project}")
	if err != nil || out == "" {
		return "", fmt.Errorf("no Application of the tenant to find its AppProject: %v", err)
	}
	return out, nil
}
