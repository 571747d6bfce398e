package render

import (
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(t *testing.T, raw string) *unstructured.Unstructured {
	t.Helper()
	u, err := argov1alpha1.UnmarshalToUnstructured(raw)
	require.NoError(t, err)
	return u
}

func TestHashIsCanonical(t *testing.T) {
	deploy := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"t"},"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"app","image":"web:1"}]}}}}`
	// The same Deployment, its keys in another order.
	reordered := `{"spec":{"template":{"spec":{"containers":[{"image":"web:1","name":"app"}]}},"replicas":1},"metadata":{"namespace":"t","name":"web"},"kind":"Deployment","apiVersion":"apps/v1"}`
	svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}}`
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"},"data":{"a":"1"}}`

	h := func(raws ...string) string {
		var objs []*unstructured.Unstructured
		for _, r := range raws {
			objs = append(objs, obj(t, r))
		}
		got, err := Hash(objs)
		require.NoError(t, err)
		return got
	}
	base := h(deploy, svc, cm)
	assert.True(t, strings.HasPrefix(base, HashPrefix) && len(base) == len(HashPrefix)+64, base)
	assert.Equal(t, base, h(cm, deploy, svc), "the repo-server's order does not count")
	assert.Equal(t, base, h(svc, cm, reordered), "key order does not count")

	for name, other := range map[string]string{
		"an image":        h(strings.Replace(deploy, "web:1", "web:2", 1), svc, cm),
		"a value":         h(deploy, svc, strings.Replace(cm, `"1"`, `"2"`, 1)),
		"an object fewer": h(deploy, svc),
		"an object more":  h(deploy, svc, cm, strings.Replace(cm, `"name":"web"`, `"name":"web2"`, 1)),
		"a namespace":     h(strings.Replace(deploy, `"namespace":"t"`, `"namespace":"u"`, 1), svc, cm),
	} {
		assert.NotEqual(t, base, other, "changing %s changes the hash", name)
	}
	empty, err := Hash(nil)
	require.NoError(t, err)
	assert.NotEqual(t, base, empty)
}

func TestCacheKey(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	req := func(mut func(*apiclient.ManifestRequest)) *apiclient.ManifestRequest {
		r := ManifestRequest(&argov1alpha1.Application{Spec: argov1alpha1.ApplicationSpec{
			Source: &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/r.git", Path: "components/web", TargetRevision: "main",
				Kustomize: &argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{"quay.io/x/web:v2"}}},
			Destination: argov1alpha1.ApplicationDestination{Namespace: "target"}}},
			&argov1alpha1.Repository{Repo: "https://git.example.com/r.git", Password: "secret-1"}, &argov1alpha1.AppProject{}, Settings{KubeVersion: "1.31"})
		if mut != nil {
			mut(r)
		}
		return r
	}
	key := func(r *apiclient.ManifestRequest, rev string) string {
		k, err := cacheKey(r, rev)
		require.NoError(t, err)
		return k
	}
	base := key(req(nil), commit)
	require.NotEmpty(t, base)
	assert.Empty(t, key(req(nil), "main"), "a branch moves: never cached")
	assert.Empty(t, key(req(nil), "v1.0"), "a tag may move: never cached")
	assert.Equal(t, base, key(req(func(r *apiclient.ManifestRequest) { r.Repo.Password = "secret-2" }), commit), "credentials are not what decides a render")
	assert.Equal(t, base, key(req(func(r *apiclient.ManifestRequest) { r.Revision = "other-branch" }), commit), "the resolved commit decides, not the name")
	for name, mut := range map[string]func(*apiclient.ManifestRequest){
		"an image": func(r *apiclient.ManifestRequest) {
			r.ApplicationSource.Kustomize.Images = argov1alpha1.KustomizeImages{"quay.io/x/web:v3"}
		},
		"a path":          func(r *apiclient.ManifestRequest) { r.ApplicationSource.Path = "components/api" },
		"a namespace":     func(r *apiclient.ManifestRequest) { r.Namespace = "other" },
		"the kubeVersion": func(r *apiclient.ManifestRequest) { r.KubeVersion = "1.32" },
		"the repository":  func(r *apiclient.ManifestRequest) { r.ApplicationSource.RepoURL = "https://git.example.com/s.git" },
	} {
		assert.NotEqual(t, base, key(req(mut), commit), "%s decides the render", name)
	}
	assert.NotEqual(t, base, key(req(nil), strings.Repeat("cd", 20)), "another commit")

	c := &Cache{Max: 2}
	_, ok := c.get(base)
	assert.False(t, ok)
	c.put(base, "sha256:1")
	got, ok := c.get(base)
	assert.True(t, ok)
	assert.Equal(t, "sha256:1", got)
	c.put("", "sha256:2")
	_, ok = c.get("")
	assert.False(t, ok, "an uncacheable render is never kept")
	c.put("k2", "h2")
	c.put("k3", "h3")
	assert.Len(t, c.m, 2, "bounded")
	var none *Cache
	none.put(base, "x")
	_, ok = none.get(base)
	assert.False(t, ok)
}
