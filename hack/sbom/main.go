// Command sbom writes an SPDX 2.3 JSON software bill of materials of a Go
// binary from the build information the Go toolchain embeds in it (what `go
// version -m` prints): the main module, every module linked in with its
// version and go.sum hash, the Go version and the build settings. It needs no
// network and nothing but the binary, so `make release` describes exactly
// what it shipped.
//
//	go run ./hack/sbom -binary bin/release/v1.2.3/gitops-service -name gitops-service -version v1.2.3 [-created 2026-01-02T03:04:05Z]
package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

func main() {
	bin := flag.String("binary", "", "the Go binary to describe")
	name := flag.String("name", "gitops-service", "the document's and the package's name")
	version := flag.String("version", "dev", "the release version")
	created := flag.String("created", "", "RFC 3339 creation time (default: $SOURCE_DATE_EPOCH, else now): a release passes its commit's time so the SBOM is reproducible")
	out := flag.String("out", "", "output file (default stdout)")
	flag.Parse()
	if err := run(*bin, *name, *version, *created, *out); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

func run(bin, name, version, created, out string) error {
	if bin == "" {
		return fmt.Errorf("-binary is required")
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("%s: %w", bin, err)
	}
	sum, err := fileSHA256(bin)
	if err != nil {
		return err
	}
	ts, err := creationTime(created)
	if err != nil {
		return err
	}
	doc := Build(info, name, version, sum, ts)
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if out == "" {
		_, err = os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

func creationTime(created string) (time.Time, error) {
	if created != "" {
		return time.Parse(time.RFC3339, created)
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		var s int64
		if _, err := fmt.Sscan(epoch, &s); err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", epoch, err)
		}
		return time.Unix(s, 0).UTC(), nil
	}
	return time.Now().UTC(), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Document is the subset of SPDX 2.3 JSON this tool writes.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	DocumentDescribes []string       `json:"documentDescribes"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

// CreationInfo says who made the document, when.
type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
	Comment  string   `json:"comment,omitempty"`
}

// Package is one SPDX package: the binary, or a Go module linked into it.
type Package struct {
	SPDXID           string        `json:"SPDXID"`
	Name             string        `json:"name"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	Checksums        []Checksum    `json:"checksums,omitempty"`
	ExternalRefs     []ExternalRef `json:"externalRefs,omitempty"`
	Comment          string        `json:"comment,omitempty"`
}

// Checksum of a package.
type Checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

// ExternalRef is a package URL (purl).
type ExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

// Relationship between two SPDX elements.
type Relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// Build is the SBOM of a binary with build information info and SHA-256 sum.
func Build(info *buildinfo.BuildInfo, name, version, sum string, created time.Time) Document {
	var settings []string
	for _, s := range info.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	root := Package{
		SPDXID:           "SPDXRef-Package-" + spdxID(name),
		Name:             name,
		VersionInfo:      version,
		DownloadLocation: "NOASSERTION",
		Checksums:        []Checksum{{Algorithm: "SHA256", ChecksumValue: sum}},
		ExternalRefs:     []ExternalRef{purl(info.Main.Path, version)},
		Comment:          "main module " + info.Main.Path + ", built with " + info.GoVersion + " (" + strings.Join(settings, " ") + ")",
	}
	doc := Document{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              name + "-" + version,
		DocumentNamespace: "https://spdx.org/spdxdocs/" + name + "-" + version + "-" + sum[:16],
		CreationInfo: CreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: gitops-service-hack-sbom"},
			Comment:  "From the Go build information embedded in the binary (go version -m).",
		},
		DocumentDescribes: []string{root.SPDXID},
		Packages:          []Package{root},
	}
	doc.Relationships = append(doc.Relationships, Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", root.SPDXID})
	stdlib := Package{
		SPDXID:           "SPDXRef-Package-golang-stdlib",
		Name:             "stdlib",
		VersionInfo:      info.GoVersion,
		DownloadLocation: "https://go.dev/dl/",
		ExternalRefs:     []ExternalRef{purl("stdlib", info.GoVersion)},
	}
	doc.Packages = append(doc.Packages, stdlib)
	doc.Relationships = append(doc.Relationships, Relationship{root.SPDXID, "DEPENDS_ON", stdlib.SPDXID})
	for _, m := range info.Deps {
		p := modulePackage(m)
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, Relationship{root.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	return doc
}

// modulePackage is a linked module; a replaced module is described as what
// was really linked (the replacement), its original path in the comment.
func modulePackage(m *debug.Module) Package {
	used, comment := m, ""
	if m.Replace != nil {
		used, comment = m.Replace, "replaces "+m.Path+"@"+m.Version
	}
	p := Package{
		SPDXID:           "SPDXRef-Package-go-" + spdxID(used.Path+"-"+used.Version),
		Name:             used.Path,
		VersionInfo:      used.Version,
		DownloadLocation: "NOASSERTION",
		ExternalRefs:     []ExternalRef{purl(used.Path, used.Version)},
		Comment:          comment,
	}
	if used.Version != "" && used.Version != "(devel)" {
		p.DownloadLocation = "https://proxy.golang.org/" + used.Path + "/@v/" + used.Version + ".zip"
	}
	if used.Sum != "" {
		// go.sum's h1: is a base64 SHA-256 over the module's file list; SPDX
		// has no algorithm for it, so it stays in the comment.
		p.Comment = strings.TrimSpace(p.Comment + " go.sum " + used.Sum)
	}
	return p
}

func purl(path, version string) ExternalRef {
	loc := "pkg:golang/" + path
	if version != "" {
		loc += "@" + version
	}
	return ExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: loc}
}

// spdxID keeps the characters SPDX identifiers allow (letters, digits, . and -).
func spdxID(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}
