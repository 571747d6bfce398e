package tenantsecret

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache of the tenants' Secrets keeps what maps a change to the CRs
// (name, namespace, type, labels) and none of their data.
func TestMetadataOnly(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "jane", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Type:       "managed-gitops.redhat.com/managed-environment",
		Data:       map[string][]byte{"kubeconfig": []byte("token: s3cret")},
		StringData: map[string]string{"password": "s3cret"},
	}
	out, err := metadataOnly(s)
	assert.NoError(t, err)
	got := out.(*corev1.Secret)
	assert.Nil(t, got.Data)
	assert.Nil(t, got.StringData)
	assert.Nil(t, got.ManagedFields)
	assert.Equal(t, "creds", got.Name)
	assert.Equal(t, "jane", got.Namespace)
	assert.Equal(t, map[string]string{"a": "b"}, got.Labels)
	assert.Equal(t, corev1.SecretType("managed-gitops.redhat.com/managed-environment"), got.Type)

	other := &corev1.ConfigMap{Data: map[string]string{"k": "v"}}
	out, err = metadataOnly(other)
	assert.NoError(t, err)
	assert.Equal(t, other, out, "anything else passes unchanged")
}
