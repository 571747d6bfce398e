package stack

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Process is a component started by the stack: its own process group, output
// to a log file, killed with SIGKILL if the test binary dies (Pdeathsig).
type Process struct {
	Name    string // e.g. "local/kube-apiserver"; prefix of mirrored and dumped log lines
	LogPath string

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	err     error
	stop    sync.Once

	savedMu   sync.Mutex
	savedTail string // log tail kept in memory before the log dir is removed
}

// StartProcess starts bin with args. env is appended to a minimal copy of the
// test's environment. stdout and stderr go to logPath; with
// GITOPS_SERVICE_STACK_LOGS=1 they are also mirrored to os.Stderr, each line
// prefixed with "[name] ".
func StartProcess(name, logPath, dir string, env []string, bin string, args ...string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "### %s %s: %s %s\n", time.Now().Format(time.RFC3339Nano), name, bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if os.Getenv(envLogs) == "1" {
		w := io.MultiWriter(f, &prefixWriter{prefix: "[" + name + "] ", w: os.Stderr})
		cmd.Stdout, cmd.Stderr = w, w
		cmd.WaitDelay = 2 * time.Second
	} else {
		cmd.Stdout, cmd.Stderr = f, f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // own process group: Stop kills children too
		Pdeathsig: syscall.SIGKILL, // die with the test binary
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, logFile: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and its wait error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, SIGKILL after 5s, and waits.
// Idempotent; safe on a nil Process.
func (p *Process) Stop() { p.stopWith(stopGrace) }

// Kill kills the process group at once and waits.
func (p *Process) Kill() { p.stopWith(0) }

func (p *Process) stopWith(grace time.Duration) {
	if p == nil {
		return
	}
	p.stop.Do(func() {
		pgid := p.cmd.Process.Pid
		if grace > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(grace):
			}
		}
		// Kill whatever is left of the group (children that outlived the leader too).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		fmt.Fprintf(p.logFile, "### %s %s stopped\n", time.Now().Format(time.RFC3339Nano), p.Name)
		p.logFile.Close()
	})
}

// Tail returns the last n lines of the log (or of the copy kept in memory
// when the log file has been removed since).
func (p *Process) Tail(n int) string {
	p.savedMu.Lock()
	saved := p.savedTail
	p.savedMu.Unlock()
	if saved != "" {
		if _, err := os.Stat(p.LogPath); err != nil {
			return lastLines(saved, n)
		}
	}
	return tailFile(p.LogPath, n)
}

// saveTail keeps the last n lines in memory, so logs can still be written
// after the state dir is removed.
func (p *Process) saveTail(n int) {
	if p == nil {
		return
	}
	t := tailFile(p.LogPath, n)
	p.savedMu.Lock()
	p.savedTail = t
	p.savedMu.Unlock()
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// WriteLog writes the last n lines of the log to w, each prefixed with "[name] ".
func (p *Process) WriteLog(w io.Writer, n int) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "----- %s (%s) -----\n", p.Name, p.LogPath)
	for _, l := range strings.SplitAfter(p.Tail(n), "\n") {
		if l == "" {
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		io.WriteString(w, "["+p.Name+"] "+l)
	}
}

// stopAll stops processes concurrently.
func stopAll(ps ...*Process) {
	var wg sync.WaitGroup
	for _, p := range ps {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func(p *Process) { defer wg.Done(); p.Stop() }(p)
	}
	wg.Wait()
}

// tailFile returns the last n lines of a file (reading at most its last 1 MiB).
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)\n", path, err)
	}
	defer f.Close()
	const max = 1 << 20
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := int64(0)
	if st.Size() > max {
		off = st.Size() - max
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return ""
	}
	if off > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	lines := bytes.SplitAfter(buf, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, nil))
}

// prefixWriter prefixes every line written through it.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	midLn  bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out bytes.Buffer
	for _, c := range b {
		if !p.midLn {
			out.WriteString(p.prefix)
			p.midLn = true
		}
		out.WriteByte(c)
		if c == '\n' {
			p.midLn = false
		}
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
