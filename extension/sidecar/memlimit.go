package sidecar

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultGCPercent is the sidecar's garbage collection target (GOGC) unless
// GOGC is set. Its live heap is mostly its caches (~70-100 MiB at 10,000
// GitOpsDeployments), and Go's default of 100 lets the heap grow to twice
// that before collecting: a restarted sidecar's resync, which lists and
// reconciles everything at once, peaked at 303-315 MiB RSS with a live heap
// of ~100 MiB (make bench, issue 27). At 50 the heap grows by half instead,
// for more frequent collections of that small live heap.
const DefaultGCPercent = 50

// SetGCPercent sets the garbage collection target to percent, unless GOGC
// is set (the runtime applied it) or percent is not positive. It returns
// the target set (0: none).
func SetGCPercent(log logr.Logger, percent int) int {
	p, ok := gcPercent(os.Getenv("GOGC"), percent)
	if !ok {
		if v := os.Getenv("GOGC"); v != "" {
			log.Info("GOGC is set: the Go runtime's garbage collection target is left as it is", "GOGC", v)
		}
		return 0
	}
	debug.SetGCPercent(p)
	log.Info("Go runtime garbage collection target set", "percent", p)
	return p
}

// gcPercent is the target to set: none when GOGC is set or percent is not positive.
func gcPercent(env string, percent int) (int, bool) {
	if env != "" || percent <= 0 {
		return 0, false
	}
	return percent, true
}

// EnvMemoryLimit is the container's memory limit in bytes, which the install's
// Deployment passes from limits.memory (a resourceFieldRef).
const EnvMemoryLimit = "GITOPS_SERVICE_MEMORY_LIMIT"

// cgroupMemoryFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// SetMemoryLimit gives the Go runtime a soft memory limit of percent of the
// container's limit, so the garbage collector works harder before the limit
// rather than the container being OOM-killed (a restarted sidecar's resync
// peaks above its steady state). The limit is explicit (a quantity, e.g.
// "768Mi"), else EnvMemoryLimit, else the cgroup's. A GOMEMLIMIT set by the
// user is left as the runtime applied it. It returns the soft limit set (0:
// none).
func SetMemoryLimit(log logr.Logger, explicit string, percent int) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		log.Info("GOMEMLIMIT is set: the Go runtime's memory limit is left as it is", "GOMEMLIMIT", v)
		return 0
	}
	limit, from := containerLimit(explicit, os.Getenv(EnvMemoryLimit), readFirst(cgroupMemoryFiles))
	soft := softLimit(limit, percent)
	if soft == 0 {
		log.Info("no memory limit known: the Go runtime's memory limit is not set", "percent", percent)
		return 0
	}
	debug.SetMemoryLimit(soft)
	log.Info("Go runtime memory limit set", "limitBytes", limit, "from", from, "percent", percent, "softLimitBytes", soft)
	return soft
}

// containerLimit is the first limit known of the flag's quantity, the
// environment's bytes and the cgroup file's content ("max" is none), in bytes,
// and where it came from.
func containerLimit(explicit, env, cgroup string) (int64, string) {
	if q, err := resource.ParseQuantity(strings.TrimSpace(explicit)); explicit != "" && err == nil && q.Value() > 0 {
		return q.Value(), "flag"
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(env), 10, 64); err == nil && n > 0 {
		return n, EnvMemoryLimit
	}
	// cgroup v1 reports "no limit" as a huge number (close to MaxInt64).
	if n, err := strconv.ParseInt(strings.TrimSpace(cgroup), 10, 64); err == nil && n > 0 && n < 1<<50 {
		return n, "cgroup"
	}
	return 0, ""
}

// softLimit is percent of limit; 0 when either is not positive or percent is over 100.
func softLimit(limit int64, percent int) int64 {
	if limit <= 0 || percent <= 0 || percent > 100 {
		return 0
	}
	return int64(math.Floor(float64(limit) * float64(percent) / 100))
}

func readFirst(paths []string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	return ""
}
