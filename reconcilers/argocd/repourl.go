package argocd

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// controlOrBreak: control characters (C0, DEL, C1: NEL, CSI, ...) and the
// Unicode line and paragraph separators. A tenant's repository, path or
// revision reaches git's configuration and command lines, Argo CD's objects
// and the terminals of those who list them: none is ever needed there.
func controlOrBreak(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp) }) >= 0
}

// scpLike is git's user@host:path form (git@github.com:org/repo.git).
var scpLike = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:[^:\s]+$`)

// networkSchemes reach a repository over the network, like any client of it
// would: https and ssh, and the unencrypted http and git (git daemon), which
// reach nothing more than https does and only put the tenant's own manifests
// at risk. file:// (the repo-server's own disk) and everything else (git's
// remote helpers such as ext::) are refused.
var networkSchemes = map[string]bool{"https": true, "ssh": true, "http": true, "git": true}

// CheckRepoURL says why a tenant may not use raw as a repository URL, or "" when
// it may. allowFile is the platform admin's switch for file:// URLs (demos and
// tests on one machine): never for a multi-tenant cluster, since the
// repo-server would read any repository on its own disk.
func CheckRepoURL(raw string, allowFile bool) string {
	const want = "it must be an https://, ssh://, http://, git:// or git@host:path URL"
	if raw == "" {
		return "the repository URL is empty: " + want
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, " \t\r\n\x00") || strings.HasPrefix(raw, "-") {
		return fmt.Sprintf("repository URL %q has blanks, control characters or a leading '-': %s", raw, want)
	}
	if controlOrBreak(raw) {
		return fmt.Sprintf("repository URL %q has control or line-break characters: %s", raw, want)
	}
	if scpLike.MatchString(raw) && !strings.Contains(raw, "://") {
		if _, path, _ := strings.Cut(raw, ":"); optionLike(path) {
			return fmt.Sprintf("repository URL %q is refused: its path begins with '-', which git-upload-pack would read as an option", raw)
		}
		return ""
	}
	u, err := url.Parse(raw)
	if err == nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			// A URL is shown in Argo CD, in status and in logs.
			return "the repository URL must not contain a password: use a GitOpsDeploymentRepositoryCredentials"
		}
	}
	if err != nil || u.Scheme == "" {
		return fmt.Sprintf("repository URL %q is not a URL: %s", raw, want)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "file" {
		if allowFile {
			return ""
		}
		return fmt.Sprintf("repository URL %q is refused: file:// URLs would read the Argo CD repo-server's own disk (the platform admin may allow them for demos with --allow-file-repositories); %s", raw, want)
	}
	if !networkSchemes[scheme] {
		return fmt.Sprintf("repository URL %q has the scheme %q: %s", raw, u.Scheme, want)
	}
	if u.Hostname() == "" {
		return fmt.Sprintf("repository URL %q has no host: %s", raw, want)
	}
	// ssh's and git-upload-pack's command lines: a host, user or path that
	// begins with '-' would be read as an option (CVE-2017-1000117).
	if scheme == "ssh" && (optionLike(u.Hostname()) || optionLike(u.User.Username()) || optionLike(u.Path)) {
		return fmt.Sprintf("repository URL %q is refused: its host, user or path begins with '-', which ssh or git-upload-pack would read as an option", raw)
	}
	return ""
}

// optionLike says whether an ssh URL's part would read as a command-line
// option: it begins with '-', also after the path's leading '/' (git strips
// it from ssh://host/~user paths).
func optionLike(part string) bool {
	return strings.HasPrefix(strings.TrimPrefix(part, "/"), "-")
}

// CheckRevision says why a tenant's revision (a branch, tag or commit, given to
// git by the repo-server) is refused, or "" when it is acceptable: no leading
// '-' (it would read as an option), no blanks or control characters, no "..".
func CheckRevision(rev string) string {
	if rev == "" {
		return ""
	}
	if strings.HasPrefix(rev, "-") || strings.Contains(rev, "..") || strings.IndexFunc(rev, func(r rune) bool { return r <= ' ' }) >= 0 || controlOrBreak(rev) {
		return fmt.Sprintf("revision %q is not a valid branch, tag or commit: no leading '-', blanks, control characters or '..'", rev)
	}
	return ""
}

// CheckPath says why a tenant's path inside a repository is refused, or ""
// when it is acceptable: it must be relative and have no ".." segment, so it
// stays inside the repository. Argo CD's repo-server refuses such paths too;
// we say so before anything is written.
func CheckPath(p string) string {
	if strings.HasPrefix(p, "/") {
		return fmt.Sprintf("path %q must stay inside the repository: it must be relative (no leading '/')", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Sprintf("path %q must stay inside the repository (no '..' segments)", p)
		}
	}
	if controlOrBreak(p) {
		return fmt.Sprintf("path %q has control or line-break characters", p)
	}
	return ""
}
