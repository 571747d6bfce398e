package install

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/test/stack"
)

// harness loads the panel's JavaScript in node with just enough of the
// browser and of Argo CD's UI (a <base href>, extensionsAPI, React hooks that
// run effects at once) to render the status item, and prints the URL of the
// panel's first API call.
const harness = `
const base = process.argv[2];
global.window = global;
global.document = {querySelector: (sel) => (sel === 'head > base' && base !== 'none' ? {getAttribute: () => base} : null)};
global.setInterval = () => 0;
global.clearInterval = () => {};
global.fetch = (url) => { console.log(url); process.exit(0); };
const registered = {};
window.extensionsAPI = {
  registerResourceExtension: (c) => { registered.tab = c; },
  registerStatusPanelExtension: (c) => { registered.status = c; },
};
window.React = {
  createElement: (type, props) => ({type, props: props || {}}),
  useState: (init) => [init, () => {}],
  useEffect: (f) => { f(); },
};
require(process.argv[1]);
const app = {metadata: {name: 'gitopsdepl-1', namespace: 'argocd', labels: {'app.kubernetes.io/managed-by': 'gitops-service'}}, spec: {project: 'p'}};
const el = registered.status({application: app});
el.type(el.props);
console.log('no request');
`

// The panel calls its API under the UI's base path, so it works behind
// argocd-server's --rootpath / --basehref (which set <base href>).
func TestPanelCallsUnderTheUIBasePath(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if stack.Required() {
			t.Fatal("node (apt nodejs, `make deps`) is needed:", err)
		}
		t.Skip("needs node:", err)
	}
	js := filepath.Join(repoRoot(t), "extension", "ui", "extension-gitops-service.js")
	for base, want := range map[string]string{
		"/":       "/extensions/gitops-service/api/v1/deployment",
		"/argo/":  "/argo/extensions/gitops-service/api/v1/deployment",
		"/argo":   "/argo/extensions/gitops-service/api/v1/deployment",
		"/a/b/cd": "/a/b/cd/extensions/gitops-service/api/v1/deployment",
		"none":    "/extensions/gitops-service/api/v1/deployment",
	} {
		out, err := exec.Command(node, "-e", harness, js, base).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, want, strings.TrimSpace(string(out)), "base %q", base)
	}
}
