package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The build information `go version -m` prints (a replaced module among
// them) gives one package per module linked in, with versions, purls and the
// go.sum hash, and a fixed -created makes the document reproducible.
func TestSBOMOfAGoBinary(t *testing.T) {
	info, err := debug.ParseBuildInfo(strings.Join([]string{
		"path\tgithub.com/gitops-service/gitops-service/extension",
		"mod\tgithub.com/gitops-service/gitops-service\t(devel)\t",
		"dep\tgithub.com/go-logr/logr\tv1.4.3\th1:abc=",
		"dep\tgithub.com/golang/protobuf\tv1.5.3\t",
		"=>\tgithub.com/golang/protobuf\tv1.5.4\th1:def=",
		"build\tCGO_ENABLED=0",
		"build\tGOOS=linux",
	}, "\n") + "\n")
	require.NoError(t, err)
	info.GoVersion = "go1.26.8" // the binary's header, not part of the text
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sum := strings.Repeat("ab", 32)
	doc := Build(info, "gitops-service", "v1.2.3", sum, created)
	assert.Equal(t, "SPDX-2.3", doc.SPDXVersion)
	assert.Equal(t, "2026-01-02T03:04:05Z", doc.CreationInfo.Created)
	require.NotEmpty(t, doc.Packages)
	root := doc.Packages[0]
	assert.Equal(t, []string{root.SPDXID}, doc.DocumentDescribes)
	assert.Equal(t, "v1.2.3", root.VersionInfo)
	assert.Equal(t, []Checksum{{"SHA256", sum}}, root.Checksums)
	assert.Contains(t, root.Comment, "go1.26.8")
	assert.Contains(t, root.Comment, "CGO_ENABLED=0")
	byName := map[string]Package{}
	for _, p := range doc.Packages {
		byName[p.Name] = p
	}
	assert.Len(t, byName, 4, "the binary, stdlib and two modules")
	logr := byName["github.com/go-logr/logr"]
	assert.Equal(t, "v1.4.3", logr.VersionInfo)
	assert.Equal(t, "pkg:golang/github.com/go-logr/logr@v1.4.3", logr.ExternalRefs[0].ReferenceLocator)
	assert.Contains(t, logr.Comment, "go.sum h1:abc=")
	proto := byName["github.com/golang/protobuf"]
	assert.Equal(t, "v1.5.4", proto.VersionInfo, "what was linked: the replacement")
	assert.Contains(t, proto.Comment, "replaces github.com/golang/protobuf@v1.5.3")
	assert.Equal(t, "go1.26.8", byName["stdlib"].VersionInfo)
	depends := 0
	for _, r := range doc.Relationships {
		if r.RelationshipType == "DEPENDS_ON" {
			assert.Equal(t, root.SPDXID, r.SPDXElementID)
			depends++
		}
	}
	assert.Equal(t, len(doc.Packages)-1, depends, "every module is a dependency of the binary")
	assert.Equal(t, doc, Build(info, "gitops-service", "v1.2.3", sum, created), "reproducible")
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"spdxVersion":"SPDX-2.3"`)
}

// run reads a real binary: this test's own (built with the module's build
// information; whether a test binary lists its dependencies varies, so only
// what every Go binary has is checked here; the release test checks the
// sidecar's).
func TestRunOnABinary(t *testing.T) {
	bin, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sbom.json")
	require.NoError(t, run(bin, "x", "v0.0.1", "2026-01-02T03:04:05Z", path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc Document
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, "x-v0.0.1", doc.Name)
	assert.Len(t, doc.Packages[0].Checksums[0].ChecksumValue, 64)
	assert.Equal(t, runtime.Version(), doc.Packages[1].VersionInfo)
	assert.Error(t, run(filepath.Join(t.TempDir(), "missing"), "x", "v", "", ""))
}

func TestSpdxID(t *testing.T) {
	assert.Equal(t, "github.com-a-b-v1.0.0", spdxID("github.com/a/b@v1.0.0"))
}
