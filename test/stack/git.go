package stack

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// GitRepo is a bare Git repository (what Argo CD reads, via its file:// URL)
// plus a work clone that Commit writes through. Branch is "main".
type GitRepo struct {
	Dir    string // the bare repo
	URL    string // file:// URL of the bare repo
	Work   string // the work clone
	Branch string // "main"

	mu sync.Mutex
}

// NewGitRepo creates dir/name.git (bare, default branch main) and a work
// clone dir/name.work, with an initial empty commit so the branch exists.
func NewGitRepo(dir, name string) (*GitRepo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r := &GitRepo{
		Dir:    filepath.Join(abs, name+".git"),
		Work:   filepath.Join(abs, name+".work"),
		Branch: "main",
	}
	r.URL = "file://" + filepath.ToSlash(r.Dir)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	if _, err := gitCmd(abs, "init", "--quiet", "--bare", "--initial-branch=main", r.Dir); err != nil {
		return nil, err
	}
	if _, err := gitCmd(abs, "init", "--quiet", "--initial-branch=main", r.Work); err != nil {
		return nil, err
	}
	if _, err := gitCmd(r.Work, "remote", "add", "origin", r.Dir); err != nil {
		return nil, err
	}
	if _, err := gitCmd(r.Work, "commit", "--quiet", "--allow-empty", "-m", "initial commit"); err != nil {
		return nil, err
	}
	if _, err := gitCmd(r.Work, "push", "--quiet", "origin", "HEAD:refs/heads/main"); err != nil {
		return nil, err
	}
	return r, nil
}

// Commit writes files (paths relative to the repo root, parent dirs created;
// "" as content deletes the file), commits everything with msg, pushes to the
// bare repo and returns the new HEAD sha. Safe for concurrent use.
func (r *GitRepo) Commit(files map[string]string, msg string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		clean := filepath.Clean(filepath.FromSlash(n))
		if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) || clean == ".." ||
			clean == ".git" || strings.HasPrefix(clean, ".git"+string(filepath.Separator)) {
			return "", fmt.Errorf("invalid path %q", n)
		}
		p := filepath.Join(r.Work, clean)
		if files[n] == "" {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			return "", err
		}
	}
	if msg == "" {
		msg = "update"
	}
	if _, err := gitCmd(r.Work, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := gitCmd(r.Work, "commit", "--quiet", "--allow-empty", "-m", msg); err != nil {
		return "", err
	}
	if _, err := gitCmd(r.Work, "push", "--quiet", "origin", "HEAD:refs/heads/"+r.Branch); err != nil {
		return "", err
	}
	return r.Head()
}

// Head returns the sha of the branch head in the bare repo.
func (r *GitRepo) Head() (string, error) {
	out, err := gitCmd(r.Dir, "rev-parse", "refs/heads/"+r.Branch)
	return strings.TrimSpace(out), err
}

// gitCmd runs git in dir with an environment independent of the user's
// configuration.
func gitCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=gitops-service tests",
		"GIT_AUTHOR_EMAIL=tests@gitops-service.invalid",
		"GIT_COMMITTER_NAME=gitops-service tests",
		"GIT_COMMITTER_EMAIL=tests@gitops-service.invalid",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s (in %s): %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
