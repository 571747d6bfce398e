package e2e

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-service/gitops-service/test/stack"
)

// The suite's sidecar runs as installed: as the ServiceAccount of
// manifests/install (never the admin), with the build stamped as `make image`
// stamps it.
func TestSidecarRunsAsInstalled(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", side.Kubeconfig())
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:argocd:gitops-service", review.Status.UserInfo.Username)
	assert.NotContains(t, review.Status.UserInfo.Groups, "system:masters")

	root, err := stack.RepoRoot()
	require.NoError(t, err)
	stamp := func(what string) string {
		out, err := exec.Command(filepath.Join(root, "hack", "ldflags.sh"), what).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	resp, err := side.ScrapeMetrics(context.Background())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), `gitops_service_build_info{goversion="`+runtime.Version()+`",revision="`+stamp("revision")+`",version="`+stamp("version")+`"} 1`)
}
