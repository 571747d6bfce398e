package argocd

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckRepoURL(t *testing.T) {
	for _, tc := range []struct {
		url       string
		allowFile bool
		ok        bool
	}{
		{url: "https://github.com/org/repo.git", ok: true},
		{url: "HTTPS://github.com/org/repo", ok: true},
		{url: "ssh://git@github.com/org/repo.git", ok: true},
		{url: "git@github.com:org/repo.git", ok: true},
		{url: "deploy@git.example.com:team/apps", ok: true},
		{url: "git://git.example.com/repo.git", ok: true},
		{url: "http://127.0.0.1:8080/repo.git", ok: true},
		{url: "file:///srv/git/repo.git", allowFile: true, ok: true},
		{url: "file:///srv/git/repo.git"},
		{url: "FILE:///etc"},
		{url: "file://localhost/etc"},
		{url: "/srv/git/repo.git"},
		{url: "../other-tenant/repo"},
		{url: "repo.git"},
		{url: "ext::sh -c touch% /tmp/pwned"},
		{url: "ext::sh"},
		{url: "fd::17"},
		{url: "-uhttps://x/y"},
		{url: "--upload-pack=touch /tmp/x"},
		{url: " https://github.com/org/repo"},
		{url: "https://github.com/org/repo\n"},
		{url: "https://user:secret@github.com/org/repo"},
		{url: "https:///org/repo"},
		{url: "ftp://example.com/repo"},
		{url: "s3://bucket/repo"},
		{url: ""},
		{url: "git@:repo"},
		{url: "git@host:"},
		// The scp-like form's path admitted control characters other than
		// \t\n\f\r: a terminal escape, VT, NEL, CSI, the separators.
		{url: "git@github.com:org/repo\x1b[2J\x1b]0;pwned\x07"},
		{url: "git@github.com:org/repo\v.git"},
		{url: "git@github.com:org/re\u0085po.git"},
		{url: "git@github.com:org/re\u009b31mpo.git"},
		{url: "git@github.com:org/re\u2028po.git"},
		{url: "https://github.com/org/re\u2029po.git"},
		{url: "https://github.com/org/re\u0085po.git"},
		{url: "https://github.com/org/r\u00e9po.git", ok: true},
		// ssh parts that would read as options of ssh or git-upload-pack.
		{url: "git@github.com:-oProxyCommand=x"},
		{url: "git@github.com:--upload-pack=touch"},
		{url: "ssh://git@github.com/-oProxyCommand=x"},
		{url: "ssh://-oProxyCommand=x/repo"},
		{url: "ssh://-l@github.com/repo"},
		{url: "git@github.com:org/-repo.git", ok: true},
		{url: "https://github.com/-org/repo.git", ok: true},
	} {
		msg := CheckRepoURL(tc.url, tc.allowFile)
		if tc.ok {
			assert.Empty(t, msg, "%q should be accepted", tc.url)
		} else {
			assert.NotEmpty(t, msg, "%q should be refused", tc.url)
			assert.NotContains(t, msg, "secret", "the message repeats a password")
		}
	}
}

func TestCheckRepoURLNeverRepeatsAPassword(t *testing.T) {
	for _, u := range []string{"ftp://u:secret@h/r", "file://u:secret@h/r", "https://u:secret@/r", "git://u:secret@h/r"} {
		msg := CheckRepoURL(u, false)
		assert.NotEmpty(t, msg, u)
		assert.NotContains(t, msg, "secret", u)
	}
}

func TestCheckRevision(t *testing.T) {
	for _, ok := range []string{"", "main", "HEAD", "v1.2.3", "release/2026-11", "0123456789abcdef0123456789abcdef01234567", "HEAD~1"} {
		assert.Empty(t, CheckRevision(ok), ok)
	}
	for _, bad := range []string{"-x", "--upload-pack=touch /tmp/p", "main..evil", "a b", "main\n", "x\x00", "tab\there", "del\x7f", "main\u0085x", "main\u009b31m", "main\u2028"} {
		assert.NotEmpty(t, CheckRevision(bad), bad)
	}
}

func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"", ".", "apps", "apps/web/base", "a..b", "..hidden/x", "x/"} {
		assert.Empty(t, CheckPath(ok), ok)
	}
	for _, bad := range []string{"/", "/etc", "//x", "..", "../x", "a/../../b", "x/..", "/var/lib/argocd/../x", "apps\n", "apps\x1b[2J", "ap\u0085ps", "ap\u2029ps"} {
		assert.NotEmpty(t, CheckPath(bad), bad)
	}
}
