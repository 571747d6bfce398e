package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found in any parent of the working directory")
		}
		dir = parent
	}
}

var (
	portsMu sync.Mutex
	handed  = map[int]bool{}
)

// FreePort returns a TCP port that was free on all interfaces a moment ago.
// It prefers ports below the kernel's ephemeral range, so that outgoing
// connections cannot grab the port between this check and the component's
// bind. Ports handed out before by this process are never returned again.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	if lo := ephemeralLow(); lo > 12000 {
		const base = 10000
		for i := 0; i < 200; i++ {
			port := base + mathrand.IntN(lo-base)
			if handed[port] {
				continue
			}
			if l, err := net.Listen("tcp", fmt.Sprintf(":%d", port)); err == nil {
				l.Close()
				handed[port] = true
				return port, nil
			}
		}
	}
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handed[port] {
			handed[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free port found")
}

// ephemeralLow returns the first port of the kernel's ephemeral range
// (32768 when unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	ps := make([]int, n)
	for i := range ps {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// waitReady polls check every 100ms until it succeeds, p exits, ctx ends or
// timeout passes. Errors carry the last check error and the tail of p's log.
func waitReady(ctx context.Context, p *Process, timeout time.Duration, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		err := check(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err // keep the previous error when this one is only the overall deadline
		}
		select {
		case <-p.Done():
			_, err := p.Exited()
			return fmt.Errorf("%s exited (%v) before it was ready; last lines of %s:\n%s", p.Name, err, p.LogPath, p.Tail(40))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %v; last lines of %s:\n%s", p.Name, timeout, last, p.LogPath, p.Tail(40))
		case <-tick.C:
		}
	}
}

// portInUse reports whether a start failure looks like a lost free-port race.
func portInUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

// keepDirs reports whether GITOPS_SERVICE_STACK_KEEP=1.
func keepDirs() bool { return os.Getenv(envKeep) == "1" }

const ownerFile = "owner.pid"

var sweepOnce sync.Once

// makeStateDir creates a temp dir under parent ("" = os.TempDir()) named
// gitops-stack-<name>-*, recording the owning pid so that dirs left behind by
// a killed test binary are removed by the next run.
func makeStateDir(parent, name string) (string, error) {
	sweepOnce.Do(sweepStale)
	d, err := os.MkdirTemp(parent, "gitops-stack-"+nameSanitizer.ReplaceAllString(name, "_")+"-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// sweepStale removes state dirs whose owning process no longer exists.
func sweepStale() {
	for _, parent := range []string{os.TempDir(), "/dev/shm"} {
		matches, _ := filepath.Glob(filepath.Join(parent, "gitops-stack-*"))
		for _, d := range matches {
			b, err := os.ReadFile(filepath.Join(d, ownerFile))
			if err != nil {
				continue // not ours, or kept on purpose
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 {
				continue
			}
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				os.RemoveAll(d)
			}
		}
	}
}

// keepStateDir marks d as kept on purpose (GITOPS_SERVICE_STACK_KEEP=1), so
// sweepStale leaves it alone.
func keepStateDir(d string) {
	os.Remove(filepath.Join(d, ownerFile))
	fmt.Fprintf(os.Stderr, "stack: keeping %s (%s=1)\n", d, envKeep)
}
