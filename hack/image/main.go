// Command image packs the sidecar binary into an OCI image without Docker
// (`make image`): one layer with the static binary and the build host's CA
// bundle, no shell, user 65532:65532, the binary as entrypoint, OCI labels. It
// writes an OCI layout and a `docker load`-able tarball, optionally pushes with
// the user's registry credentials (~/.docker/config.json, as docker and crane
// do), and points manifests/install's kustomize `images:` entry at the image.
// A module of its own so that the product does not depend on
// go-containerregistry.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// User is the image's user: non-root, as the Deployment's runAsNonRoot needs
// (65532 is distroless' "nonroot").
const User = "65532:65532"

// Entrypoint is where the binary lies in the image.
const Entrypoint = "/gitops-service"

// KustomizeName is the image name manifests/install/deployment.yaml uses, which
// the kustomization's `images:` entry rewrites.
const KustomizeName = "gitops-service"

type options struct {
	binary, caBundle, out, ref, version, revision, source, kustomization, arch string
	push                                                                       bool
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "the static sidecar binary (CGO_ENABLED=0)")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA certificates for https git servers and clusters; \"\" leaves them out")
	flag.StringVar(&o.out, "out", "bin/image", "directory for the OCI layout (oci/) and the tarball (gitops-service.tar)")
	flag.StringVar(&o.ref, "image", "", "registry/name:tag; empty: gitops-service:<version>, not pushed, kustomization untouched")
	flag.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version")
	flag.StringVar(&o.revision, "revision", "unknown", "org.opencontainers.image.revision")
	flag.StringVar(&o.source, "source", "https://github.com/gitops-service/gitops-service", "org.opencontainers.image.source")
	flag.StringVar(&o.kustomization, "kustomization", "", "kustomization.yaml whose images: entry for "+KustomizeName+" is set to -image")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the binary's GOARCH")
	flag.BoolVar(&o.push, "push", false, "push -image with the credentials of ~/.docker/config.json")
	flag.Parse()
	if err := build(o); err != nil {
		log.Fatal(err)
	}
}

func build(o options) error {
	if o.binary == "" {
		return fmt.Errorf("-binary is required")
	}
	refName := o.ref
	if refName == "" {
		if o.push {
			return fmt.Errorf("PUSH=1 needs IMAGE=<registry/name:tag>")
		}
		refName = KustomizeName + ":" + o.version
	}
	ref, err := name.ParseReference(refName)
	if err != nil {
		return fmt.Errorf("image %q: %w", refName, err)
	}
	img, err := Image(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ociDir := filepath.Join(o.out, "oci")
	if err := os.RemoveAll(ociDir); err != nil {
		return err
	}
	p, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": refName})); err != nil {
		return err
	}
	tarPath := filepath.Join(o.out, "gitops-service.tar")
	if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image %s (%s)\n  OCI layout: %s\n  tarball:    %s (docker load -i / podman load -i)\n", refName, digest, ociDir, tarPath)
	if o.push {
		if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref.Name(), err)
		}
		fmt.Printf("  pushed:     %s@%s\n", ref.Context().Name(), digest)
	}
	if o.ref != "" && o.kustomization != "" {
		if err := SetKustomizeImage(o.kustomization, o.ref); err != nil {
			return err
		}
		fmt.Printf("  %s: image %s -> %s\n", o.kustomization, KustomizeName, ref.Name())
	}
	return nil
}

// Image is the sidecar's image: reproducible (every timestamp zero) for one
// binary and CA bundle.
func Image(o options) (v1.Image, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	files := []file{{path: Entrypoint, mode: 0o555, data: bin}}
	if o.caBundle != "" {
		ca, err := os.ReadFile(o.caBundle)
		if err != nil {
			return nil, fmt.Errorf("CA bundle (-ca-bundle \"\" leaves it out): %w", err)
		}
		files = append(files, file{path: "/etc/ssl/certs/ca-certificates.crt", mode: 0o444, data: ca})
	}
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":    "gitops-service",
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.User = User
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = labels
	cf.Config.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

type file struct {
	path string
	mode int64
	data []byte
}

// tarOf is a layer with files and their parent directories, owned by root.
func tarOf(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		rel := f.path[1:]
		var parents []string
		for d := filepath.Dir(rel); d != "." && !dirs[d]; d = filepath.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: f.mode, Size: int64(len(f.data)), Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SetKustomizeImage points the kustomization's images: entry of
// KustomizeName at ref (`kustomize edit set image`), keeping the file's
// comments and every other entry.
func SetKustomizeImage(path, image string) error {
	ref, err := name.ParseReference(image)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	nodes, err := kio.FromBytes(b)
	if err != nil || len(nodes) != 1 {
		return fmt.Errorf("%s: not one YAML document: %v", path, err)
	}
	k := nodes[0]
	images, err := k.Pipe(yaml.LookupCreate(yaml.SequenceNode, "images"))
	if err != nil {
		return err
	}
	entry, err := images.Pipe(yaml.MatchElement("name", KustomizeName))
	if err != nil {
		return err
	}
	if entry == nil {
		entry = yaml.NewMapRNode(&map[string]string{"name": KustomizeName})
		if err := images.PipeE(yaml.Append(entry.YNode())); err != nil {
			return err
		}
	}
	// The name as the user wrote it (name.Reference would add index.docker.io/).
	fields := map[string]string{}
	switch r := ref.(type) {
	case name.Tag:
		fields["newName"], fields["newTag"] = strings.TrimSuffix(image, ":"+r.TagStr()), r.TagStr()
	case name.Digest:
		fields["newName"], fields["digest"] = strings.TrimSuffix(image, "@"+r.DigestStr()), r.DigestStr()
	}
	for _, f := range []string{"newName", "newTag", "digest"} {
		if fields[f] == "" {
			if _, err := entry.Pipe(yaml.Clear(f)); err != nil {
				return err
			}
			continue
		}
		if err := entry.PipeE(yaml.SetField(f, yaml.NewStringRNode(fields[f]))); err != nil {
			return err
		}
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
