// Command push pushes the image of an OCI layout written by hack/image (`make
// image`) to a registry and prints its digest: `make release` pushes exactly
// the image it built and pins its manifests to that digest.
//
//	go -C hack/image run ./push -layout bin/release/v1.2.3/image/oci -image registry.example.com/gitops-service:v1.2.3 [-insecure]
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	dir := flag.String("layout", "", "the OCI layout (one image)")
	ref := flag.String("image", "", "registry/name:tag to push to")
	insecure := flag.Bool("insecure", false, "plain HTTP (a local registry)")
	digestOnly := flag.Bool("digest-only", false, "print the layout's image digest, push nothing")
	flag.Parse()
	log.SetFlags(0)
	if *dir == "" {
		log.Fatal("push: -layout is required")
	}
	idx, err := layout.ImageIndexFromPath(*dir)
	if err != nil {
		log.Fatalf("push: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		log.Fatalf("push: %v", err)
	}
	if len(m.Manifests) != 1 {
		log.Fatalf("push: %s holds %d images, want 1", *dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		log.Fatalf("push: %v", err)
	}
	digest, err := img.Digest()
	if err != nil {
		log.Fatalf("push: %v", err)
	}
	if *digestOnly {
		fmt.Println(digest)
		return
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(*ref, opts...)
	if err != nil {
		log.Fatalf("push: image %q: %v", *ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		log.Fatalf("push: %s: %v", r.Name(), err)
	}
	fmt.Println(digest)
}
