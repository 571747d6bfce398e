package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// installBlock is the shell block of a Markdown file (relative to the
// repository root) that follows the marker `<!-- install-block: name -->`:
// the README's and docs' install commands, which these tests run verbatim.
func installBlock(t *testing.T, file, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), file))
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)<!-- install-block: " + regexp.QuoteMeta(name) + " -->\n```sh\n(.*?)```")
	m := re.FindSubmatch(data)
	require.NotNil(t, m, "%s has no block %q", file, name)
	return string(m[1])
}

// runBlock runs a block with bash -e from the repository root, with the
// stack's kubectl (and helm, when given) first on PATH and KUBECONFIG set;
// replace maps text of the block to what this test uses instead (only the
// chart reference, which names a chart repository not reachable here).
func runBlock(t *testing.T, ctx context.Context, kubeconfig, helm, block string, replace map[string]string, extraEnv ...string) string {
	t.Helper()
	bins := needStack(t)
	for from, to := range replace {
		require.Contains(t, block, from, "the block names %q", from)
		block = strings.ReplaceAll(block, from, to)
	}
	path := filepath.Dir(bins.Kubectl)
	if helm != "" {
		path += string(os.PathListSeparator) + filepath.Dir(helm)
	}
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig, "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "block:\n%s\noutput:\n%s", block, out)
	return string(out)
}
