package registry

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestKeychainAnswersPerRegistryHost(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{
		"https://index.docker.io/v1/":{"auth":"ZG9jazpodWI="},
		"Registry.Example.com:5000":{"username":"u","password":"p"}}}`)}}
	k, err := keychainOf(s)
	require.NoError(t, err)

	for ref, want := range map[string]authn.AuthConfig{
		"registry.example.com:5000/team/app:v1": {Username: "u", Password: "p"},
		"library/busybox:1":                     {Username: "dock", Password: "hub"},
		"other.example.com/app:v1":              {},
	} {
		r, err := name.ParseReference(ref)
		require.NoError(t, err)
		a, err := k.Resolve(r.Context())
		require.NoError(t, err)
		got, err := a.Authorization()
		require.NoError(t, err)
		assert.Equal(t, want, *got, ref)
	}
}

func TestKeychainRefusesWhatIsNotADockerConfig(t *testing.T) {
	for _, data := range []map[string][]byte{
		{},
		{corev1.DockerConfigJsonKey: []byte(`not json`)},
		{corev1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.com":{"auth":"bm8tY29sb24="}}}`)},
	} {
		_, err := keychainOf(&corev1.Secret{Data: data})
		assert.Error(t, err)
		for _, v := range data {
			if len(v) > 0 {
				assert.NotContains(t, err.Error(), string(v), "a credential is never in an error")
			}
		}
	}
}
