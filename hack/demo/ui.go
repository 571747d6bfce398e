package main

import (
	"fmt"
	"os"
	"path/filepath"

	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

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
	return os.WriteFile(filepath.Join(d.extDir, "extension-gitops-service.js"), src, 0o644)
}
