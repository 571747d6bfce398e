package stack

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A test started beside hack/test-stack.sh waits for a binary being built; it
// fails at once when no build runs, or when the build that wrote .building is gone.
func TestRequireWaitsForTheStackBuild(t *testing.T) {
	buildPoll = 50 * time.Millisecond
	t.Cleanup(func() { buildPoll = 5 * time.Second })
	cache := t.TempDir()
	b := &BinaryPaths{CacheDir: cache}
	bin := filepath.Join(cache, "kube", "bin", "kube-apiserver")

	if err := b.require(bin); !errors.Is(err, ErrMissingBinaries) {
		t.Fatalf("no build running: %v, want ErrMissingBinaries at once", err)
	}

	// a build that is gone (its pid no longer runs) is not waited for
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	writeBuilding(t, cache, gone.Process.Pid)
	start := time.Now()
	if err := b.require(bin); !errors.Is(err, ErrMissingBinaries) || time.Since(start) > time.Second {
		t.Fatalf("stale .building: %v after %s, want ErrMissingBinaries at once", err, time.Since(start))
	}

	// a running build: waited for until the binary is moved into place
	writeBuilding(t, cache, os.Getpid())
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.MkdirAll(filepath.Dir(bin), 0o755)
		_ = os.WriteFile(bin+".tmp", []byte("#!/bin/sh\n"), 0o755)
		_ = os.Rename(bin+".tmp", bin)
	}()
	start = time.Now()
	if err := b.require(bin); err != nil {
		t.Fatalf("while the build runs: %v, want nil once the binary is there", err)
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Fatalf("returned after %s, before the binary was built", time.Since(start))
	}
}

func writeBuilding(t *testing.T, cache string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cache, ".building"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
