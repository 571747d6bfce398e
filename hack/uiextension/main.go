// Command uiextension packs the UI panel's JavaScript as the extension
// tarball argocd-extension-installer downloads (EXTENSION_URL): a gzipped tar
// whose top-level directory is resources/, the installer copying its content
// to argocd-server's /tmp/extensions/resources/, where argocd-server loads
// every extension*.js. It also writes checksums.txt (sha256, the installer's
// EXTENSION_CHECKSUM_URL format). The archive is reproducible: fixed times,
// owners and modes, so one version always has one checksum.
//
//	go run ./hack/uiextension -version v0.1.0 -out bin/ui-extension
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

const (
	// Name is the extension's directory under resources/.
	Name = "gitops-service"
	// JSFile is the panel's file, its name as argocd-server wants it (extension*.js).
	JSFile = "extension-gitops-service.js"
)

// TarballName is the archive's file name for a version; the component's
// EXTENSION_URL ends with it.
func TarballName(version string) string { return "extension-" + Name + "-" + version + ".tar.gz" }

// A version becomes part of a file name and a URL: nothing that could leave
// the directory or change the URL's structure.
var validVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// Tarball is the gzipped tar of js at resources/<Name>/<JSFile>.
func Tarball(js []byte) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.ModTime = time.Unix(0, 0)
	tw := tar.NewWriter(gz)
	mtime := time.Unix(0, 0).UTC()
	for _, dir := range []string{"resources/", "resources/" + Name + "/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "resources/" + Name + "/" + JSFile, Mode: 0o644,
		Size: int64(len(js)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(js); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Build writes the tarball of src for version and checksums.txt into out,
// and returns the tarball's path.
func Build(src, version, out string) (string, error) {
	if !validVersion.MatchString(version) {
		return "", fmt.Errorf("version %q: only letters, digits and . _ + - (a file name and a URL path segment)", version)
	}
	js, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	tgz, err := Tarball(js)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(out, TarballName(version))
	if err := os.WriteFile(path, tgz, 0o644); err != nil {
		return "", err
	}
	sum := sha256.Sum256(tgz)
	checksums := hex.EncodeToString(sum[:]) + "  " + TarballName(version) + "\n"
	return path, os.WriteFile(filepath.Join(out, "checksums.txt"), []byte(checksums), 0o644)
}

func main() {
	src := flag.String("src", filepath.Join("extension", "ui", JSFile), "the panel's JavaScript")
	version := flag.String("version", "dev", "the extension's version (EXTENSION_VERSION), part of the file name")
	out := flag.String("out", filepath.Join("bin", "ui-extension"), "output directory")
	flag.Parse()
	path, err := Build(*src, *version, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "uiextension:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
