package namespace

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Without the namespace-provisioner component the API server forbids the
// first write; the claim's condition must say what to install (local
// cluster) or whose rights are missing (an admin's cluster), and other
// errors stay errors (retried), not refusals.
func TestForbiddenSaysWhatToInstall(t *testing.T) {
	denied := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "dt-a-b-1234",
		errors.New(`User "system:serviceaccount:argocd:gitops-service" cannot create resource "namespaces"`))
	other := apierrors.NewInternalError(errors.New("etcd"))
	for _, tc := range []struct {
		name          string
		err           error
		clusterSecret string
		refused       bool
		says          []string
		saysNot       []string
	}{
		{name: "local cluster", err: denied, refused: true,
			says:    []string{Component, ClusterRoleName, "create namespace dt-a-b-1234", "cannot create resource"},
			saysNot: []string{"cluster Secret"}},
		{name: "admin's cluster", err: denied, clusterSecret: "east", refused: true,
			says:    []string{"cluster Secret east", ClusterRoleName},
			saysNot: []string{Component}},
		{name: "not forbidden", err: other},
		{name: "not found", err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := forbidden(tc.err, tc.clusterSecret, "create", "namespace dt-a-b-1234")
			var r *kernel.Refusal
			if !tc.refused {
				assert.Same(t, tc.err, got)
				assert.False(t, errors.As(got, &r))
				return
			}
			require.True(t, errors.As(got, &r), "%v", got)
			assert.Equal(t, ReasonRightsMissing, r.Reason)
			for _, s := range tc.says {
				assert.Contains(t, r.Message, s)
			}
			for _, s := range tc.saysNot {
				assert.NotContains(t, r.Message, s)
			}
		})
	}
}
