package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/test/stack"
)

// The machine is shared: every figure is written with the load it was taken
// under, and the CPU each process of the stack used, so a run on a busy
// machine says so and where the time went.

// loadAvg is the 1/5/15-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machineLine describes where and under which load a result was taken.
func machineLine(loadBefore string) string {
	return fmt.Sprintf("%s UTC, %d cores; kube-apiserver %s + etcd on the same machine; Argo CD %s CRDs; load average (1/5/15 min) %s before, %s after.",
		time.Now().UTC().Format("2006-01-02 15:04"), runtime.NumCPU(), stack.KubeVersion, stack.ArgoCDVersion, loadBefore, loadAvg())
}

// resultsPath is a results file of this Argo CD version.
func resultsPath(name string) string {
	return fmt.Sprintf("RESULTS-%s-argocd%s.md", name, stack.ArgoCDVersion)
}

// cpuTime is the user+system CPU a process has used.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// cpuMeter measures the CPU used by named processes over a phase.
type cpuMeter struct {
	names []string
	pids  []int
	start []time.Duration
	t0    time.Time
}

func newCPUMeter(procs map[string]int) *cpuMeter {
	m := &cpuMeter{t0: time.Now()}
	for _, name := range []string{"etcd", "kube-apiserver", "sidecar", "bench clients", "argo cd", "argo cd controller", "argo cd applicationset controller", "argo cd repo-server", "argo cd redis"} {
		if pid, ok := procs[name]; ok {
			m.names, m.pids = append(m.names, name), append(m.pids, pid)
			m.start = append(m.start, cpuTime(pid))
		}
	}
	return m
}

// String is each process's CPU seconds and share of the wall time.
func (m *cpuMeter) String() string {
	wall := time.Since(m.t0)
	var parts []string
	var total time.Duration
	for i, pid := range m.pids {
		used := cpuTime(pid) - m.start[i]
		total += used
		parts = append(parts, fmt.Sprintf("%s %.1fs", m.names[i], used.Seconds()))
	}
	return fmt.Sprintf("%s (total %.1f CPU-s in %.1fs wall = %.2f of %d cores)", strings.Join(parts, ", "),
		total.Seconds(), wall.Seconds(), total.Seconds()/wall.Seconds(), runtime.NumCPU())
}

// stackPids names the processes of a Kube plus the sidecar and this process.
func stackPids(kube *stack.Kube, sidecarPid int) map[string]int {
	procs := map[string]int{"sidecar": sidecarPid, "bench clients": os.Getpid()}
	ps := kube.Processes()
	if len(ps) > 0 {
		procs["etcd"] = ps[0].Pid()
	}
	if len(ps) > 1 {
		procs["kube-apiserver"] = ps[1].Pid()
	}
	return procs
}

// profileDir is BENCH_PPROF: where CPU profiles of the sidecar and the API
// server are written during the throughput phase, and the sidecar's heap
// profiles after it and through the restarted sidecar's resync ("" = none).
func profileDir() string { return os.Getenv("BENCH_PPROF") }

// profiling sets up BENCH_PPROF for one benchmark: the API server serves
// /debug/pprof (--profiling; its limits stay as they are) and the sidecar's
// flags (-sidecar-args) gain a pprof address, returned as pprofURL ("" when
// BENCH_PPROF is unset).
func profiling(b *testing.B, kopts *stack.KubeOptions) (args []string, pprofURL string) {
	args = strings.Fields(*sidecarArgs)
	if profileDir() == "" {
		return args, ""
	}
	kopts.ExtraAPIServerArgs = append(kopts.ExtraAPIServerArgs, "--profiling=true")
	port, err := stack.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	pprofURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	return append(args, "--pprof-bind-address="+strings.TrimPrefix(pprofURL, "http://")), pprofURL
}

// profile fetches a CPU profile of d from url into dir/name.
func profile(ctx context.Context, hc *http.Client, url, dir, name string, d time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s?seconds=%d", url, int(d.Seconds())), nil)
	if err != nil {
		return err
	}
	return saveProfile(hc, req, dir, name)
}

// saveProfile writes the profile req answers into dir/name.
func saveProfile(hc *http.Client, req *http.Request, dir, name string) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// profiler captures CPU profiles of the sidecar and kube-apiserver over d
// in the background; wait returns when both are written.
type profiler struct{ done chan error }

func startProfiles(ctx context.Context, kube *stack.Kube, sidecarPprof, dir string, d time.Duration) *profiler {
	p := &profiler{done: make(chan error, 2)}
	go func() {
		p.done <- profile(ctx, &http.Client{Timeout: d + time.Minute}, sidecarPprof+"/debug/pprof/profile", dir, "sidecar.cpu.pprof", d)
	}()
	go func() {
		hc, err := rest.HTTPClientFor(kube.Config)
		if err != nil {
			p.done <- err
			return
		}
		hc.Timeout = d + time.Minute
		p.done <- profile(ctx, hc, kube.URL+"/debug/pprof/profile", dir, "kube-apiserver.cpu.pprof", d)
	}()
	return p
}

func (p *profiler) wait() error {
	var first error
	for i := 0; i < 2; i++ {
		if err := <-p.done; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// heapSampler fetches the sidecar's heap profile every interval into
// dir/<prefix>-NNN.heap.pprof while it runs (connection errors, e.g. while
// the process restarts, are skipped): the in-use figures of each are as of
// the last collection, so the largest shows what a peak held.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
}

func sampleHeap(sidecarPprof, dir, prefix string, interval time.Duration) *heapSampler {
	s := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		hc := &http.Client{Timeout: 30 * time.Second}
		for i := 0; ; {
			if err := heapProfile(hc, sidecarPprof+"/debug/pprof/heap", dir, fmt.Sprintf("%s-%03d.heap.pprof", prefix, i)); err == nil {
				i++
			}
			select {
			case <-s.stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	return s
}

func (s *heapSampler) Stop() { close(s.stop); <-s.done }

// heapProfile writes one heap profile from url into dir/name.
func heapProfile(hc *http.Client, url, dir, name string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	return saveProfile(hc, req, dir, name)
}
