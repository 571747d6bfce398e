// Command healthlua writes the Argo CD health checks of our CRDs: Argo CD
// takes one self-contained Lua script per kind, so each health/<kind>.lua is
// its src/<kind>.lua with the functions all of them share (src/common.lua)
// put in after the leading comment. Run by `make manifests`; `make verify`
// fails when a written file is stale.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: healthlua <health directory>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "healthlua:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	common, err := os.ReadFile(filepath.Join(dir, "src", "common.lua"))
	if err != nil {
		return err
	}
	sources, err := filepath.Glob(filepath.Join(dir, "src", "*.lua"))
	if err != nil {
		return err
	}
	sort.Strings(sources)
	for _, src := range sources {
		name := filepath.Base(src)
		if name == "common.lua" {
			continue
		}
		body, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		out := Build(name, string(body), string(common))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Build is the script of one kind: src's leading comment, a line saying where
// it comes from, the shared functions, then the rest of src.
func Build(name, src, common string) string {
	lines := strings.SplitAfter(src, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "--") {
		i++
	}
	var b strings.Builder
	b.WriteString(strings.Join(lines[:i], ""))
	fmt.Fprintf(&b, "-- Written by `make manifests` from src/%s and src/common.lua: edit those.\n", name)
	b.WriteString(common)
	b.WriteString(strings.Join(lines[i:], ""))
	return b.String()
}
