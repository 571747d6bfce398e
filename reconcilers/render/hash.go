package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"sync"

	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// HashPrefix starts every render hash.
const HashPrefix = "sha256:"

// Hash is the render hash of manifests: the SHA-256 of each object's
// canonical JSON (keys sorted, as encoding/json writes maps) in
// group/kind/namespace/name order, so the order the repo-server lists them
// in does not count, only what they are.
func Hash(manifests []*unstructured.Unstructured) (string, error) {
	type entry struct {
		group, kind, ns, name string
		raw                   []byte
	}
	entries := make([]entry, 0, len(manifests))
	for _, u := range manifests {
		raw, err := json.Marshal(u.Object)
		if err != nil {
			return "", err
		}
		gvk := u.GroupVersionKind()
		entries = append(entries, entry{gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName(), raw})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.kind, b.kind), cmp.Compare(a.ns, b.ns), cmp.Compare(a.name, b.name),
			cmp.Compare(string(a.raw), string(b.raw)))
	})
	h := sha256.New()
	for _, e := range entries {
		h.Write(e.raw)
		h.Write([]byte{'\n'})
	}
	return HashPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// commitSHA: a revision that names one commit (git's SHA-1 or SHA-256).
var commitSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// cacheKey is what decides the render of req once its revision is resolved
// to commit: the source at that commit and everything else the repo-server
// is asked with (the Environment's parameters are in the source), but not
// the repository's credentials. "" when commit is not a commit: a branch or
// tag moves, so its render is never kept.
func cacheKey(req *apiclient.ManifestRequest, commit string) (string, error) {
	if !commitSHA.MatchString(commit) {
		return "", nil
	}
	k := *req
	k.Repo = nil
	k.Revision = commit
	if req.ApplicationSource != nil {
		src := *req.ApplicationSource
		src.TargetRevision = commit
		k.ApplicationSource = &src
	}
	// The source (in the request) names the repository.
	raw, err := json.Marshal(&k)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// Cache keeps render hashes by cacheKey, at most Max (4096 when 0); past it
// any other entry goes.
type Cache struct {
	Max int
	mu  sync.Mutex
	m   map[string]string
	// Hits and Misses count lookups (bench and tests).
	Hits, Misses int
}

func (c *Cache) get(key string) (string, bool) {
	if c == nil || key == "" {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[key]
	if ok {
		c.Hits++
	} else {
		c.Misses++
	}
	return h, ok
}

func (c *Cache) put(key, hash string) {
	if c == nil || key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= cmp.Or(c.Max, 4096) {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = hash
}
