package policyrules

import (
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Image is an image reference as the rules see it: parsed by the
// registry's own grammar (go-containerregistry), never matched as a string,
// so that registry.example.com.evil.io is not registry.example.com.
type Image struct {
	Component string
	// Image as the Snapshot names it.
	Image string
	// Registry is the registry host (and port): index.docker.io for a
	// Docker Hub short name. Empty when the reference does not parse.
	Registry string
	// Repository is the path within the registry (library/nginx).
	Repository string
	// Tag is the tag named; "latest" when neither a tag nor a digest is.
	Tag string
	// Digest is the digest named (sha256:...), "" for a tag only.
	Digest string
	// Valid: the reference parsed.
	Valid bool
}

// ParseImage parses the image of component. A reference that does not
// parse is an Image with Valid false and no registry: a rule that asks for
// a registry or a digest denies it.
func ParseImage(component, image string) Image {
	img := Image{Component: component, Image: image}
	ref, err := name.ParseReference(image)
	if err != nil {
		return img
	}
	img.Valid = true
	img.Registry, img.Repository = ref.Context().RegistryStr(), ref.Context().RepositoryStr()
	switch r := ref.(type) {
	case name.Tag:
		img.Tag = r.TagStr()
	case name.Digest:
		img.Digest = r.DigestStr()
		// A tag beside the digest (repo:tag@sha256:...) is informational:
		// the digest is what is pulled.
		base, _, _ := strings.Cut(image, "@")
		if i := strings.LastIndex(base, ":"); i > strings.LastIndex(base, "/") {
			img.Tag = base[i+1:]
		}
	}
	return img
}
