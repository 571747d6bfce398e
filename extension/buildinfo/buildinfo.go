// Package buildinfo is the version the binaries were built as. The Makefile
// (hack/ldflags.sh) stamps Version and Revision with -ldflags -X; a plain
// `go build` leaves them "dev" and "unknown". A leaf: only the binaries'
// packages under extension/ import it; ui-proxy is handed the version
// (Server.Version) by the sidecar.
package buildinfo

import (
	"fmt"
	"runtime"
)

// Version is `git describe --tags --always --dirty` at build time, or "dev".
var Version = "dev"

// Revision is the git commit the binary was built from, or "unknown".
var Revision = "unknown"

// GoVersion is the Go toolchain that built the binary.
func GoVersion() string { return runtime.Version() }

// String is the line `--version` prints for program prog.
func String(prog string) string {
	return fmt.Sprintf("%s %s (revision %s, %s)", prog, Version, Revision, GoVersion())
}
