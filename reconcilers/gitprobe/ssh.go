package gitprobe

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
)

// UnknownHostKey is the Detail of a server whose host key Argo CD does not
// know: Argo CD refuses to fetch from it too.
const UnknownHostKey = "the server's host key is not in Argo CD's known hosts (argocd-ssh-known-hosts-cm): add it with argocd cert add-ssh"

// SSHRefs asks an ssh repository (ssh://[user@]host[:port]/path or
// user@host:path) for its refs as git fetch does, running git-upload-pack
// for its path with privateKey, and trusting only the host keys of
// knownHosts (Argo CD's ssh_known_hosts). It connects only to addresses
// egress allows.
func SSHRefs(ctx context.Context, egress *egress.Policy, repoURL, privateKey, knownHosts string) Result {
	user, addr, path, err := sshTarget(repoURL)
	if errors.Is(err, errOptionLike) {
		return Result{Answer: Failed, Detail: err.Error()}
	}
	if err != nil {
		return Result{Answer: Failed, Detail: "not an ssh repository URL"}
	}
	signer, err := ssh.ParsePrivateKey([]byte(privateKey))
	if err != nil {
		return Result{Answer: Failed, Detail: "the private key cannot be used"}
	}
	hostKeys, err := hostKeyCallback(knownHosts)
	if err != nil {
		return Result{Answer: Failed, Detail: UnknownHostKey}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	conn, err := egress.DialContext(&net.Dialer{})(ctx, "tcp", addr)
	if err != nil {
		return Result{Answer: Failed, Detail: describe(err)}
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hostKeys, Timeout: Timeout,
	})
	var keyErr *knownhosts.KeyError
	switch {
	case errors.As(err, &keyErr):
		return Result{Answer: Failed, Detail: UnknownHostKey}
	case err != nil && strings.Contains(err.Error(), "unable to authenticate"):
		return Result{Answer: Refused}
	case err != nil:
		return Result{Answer: Failed, Detail: describe(err)}
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return Result{Answer: Failed, Detail: netfailure.Classify(err).String()}
	}
	defer session.Close()
	out, err := session.StdoutPipe()
	if err != nil {
		return Result{Answer: Failed, Detail: netfailure.Classify(err).String()}
	}
	// The path is the tenant's: quoted as git quotes it, so the remote
	// shell sees one argument whatever it holds.
	if err := session.Start("git-upload-pack " + shellQuote(path)); err != nil {
		return Result{Answer: NotFound}
	}
	// The first pkt-line of the refs advertisement: four hex digits.
	var head [4]byte
	if _, err := io.ReadFull(out, head[:]); err != nil || !isHex(head[:]) {
		// Servers say "repository not found" and "access denied" alike, on stderr.
		return Result{Answer: NotFound}
	}
	return Result{Answer: Readable}
}

// errOptionLike refuses a path git-upload-pack would read as an option
// (quoting does not help: the remote command gets it as its first argument).
var errOptionLike = errors.New("the repository path begins with '-', which git-upload-pack would read as an option")

// sshTarget splits an ssh repository URL into user (git by default),
// host:port and the path git-upload-pack is given; a path beginning with '-'
// is refused before anything is dialled.
func sshTarget(repoURL string) (user, addr, path string, err error) {
	user, addr, path, err = splitSSH(repoURL)
	if err == nil && strings.HasPrefix(strings.TrimPrefix(path, "/"), "-") {
		return "", "", "", errOptionLike
	}
	return user, addr, path, err
}

func splitSSH(repoURL string) (user, addr, path string, err error) {
	if strings.Contains(repoURL, "://") {
		u, err := url.Parse(repoURL)
		if err != nil || !strings.EqualFold(u.Scheme, "ssh") || u.Hostname() == "" || u.Path == "" {
			return "", "", "", errors.New("not an ssh URL")
		}
		port := u.Port()
		if port == "" {
			port = "22"
		}
		return cmp.Or(u.User.Username(), "git"), net.JoinHostPort(u.Hostname(), port), u.Path, nil
	}
	at, colon := strings.Index(repoURL, "@"), strings.Index(repoURL, ":")
	if at <= 0 || colon < at+2 || colon == len(repoURL)-1 {
		return "", "", "", errors.New("not an ssh URL")
	}
	return repoURL[:at], net.JoinHostPort(repoURL[at+1:colon], "22"), repoURL[colon+1:], nil
}

// hostKeyCallback trusts exactly the keys of knownHosts (known_hosts format).
func hostKeyCallback(knownHosts string) (ssh.HostKeyCallback, error) {
	if strings.TrimSpace(knownHosts) == "" {
		return nil, errors.New("no known hosts")
	}
	f, err := os.CreateTemp("", "known-hosts-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(knownHosts + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	// knownhosts reads the file now; the callback keeps what it read.
	return knownhosts.New(f.Name())
}

// shellQuote quotes s for a POSIX shell as git does ('...', with ' as '\”).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}
