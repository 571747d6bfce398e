package gitprobe

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// gitSSHServer is an ssh server that lets one key run the real
// git-upload-pack on one repository, as a git host does.
type gitSSHServer struct {
	addr       string
	knownHosts string
	commands   chan string
}

func newKey(t *testing.T) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return signer, string(pem.EncodeToMemory(block))
}

func startGitSSHServer(t *testing.T, authorized ssh.PublicKey, repoPath, repoDir string) *gitSSHServer {
	t.Helper()
	hostKey, _ := newKey(t)
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if string(key.Marshal()) == string(authorized.Marshal()) {
			return nil, nil
		}
		return nil, assert.AnError
	}}
	cfg.AddHostKey(hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	s := &gitSSHServer{addr: l.Addr().String(), commands: make(chan string, 10),
		knownHosts: knownhosts.Line([]string{knownhosts.Normalize(l.Addr().String())}, hostKey.PublicKey())}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(conn, cfg, "git-upload-pack '"+repoPath+"'", repoDir)
		}
	}()
	return s
}

func (s *gitSSHServer) serve(conn net.Conn, cfg *ssh.ServerConfig, want, repoDir string) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		for req := range requests {
			if req.Type != "exec" || len(req.Payload) < 4 {
				_ = req.Reply(false, nil)
				continue
			}
			command := string(req.Payload[4 : 4+binary.BigEndian.Uint32(req.Payload)])
			s.commands <- command
			_ = req.Reply(true, nil)
			status := uint32(1)
			if command == want {
				cmd := exec.Command("git-upload-pack", repoDir)
				cmd.Stdin, cmd.Stdout = ch, ch
				if cmd.Run() == nil {
					status = 0
				}
			} else {
				_, _ = ch.Stderr().Write([]byte("ERROR: Repository not found.\n"))
			}
			_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
			ch.Close()
			break
		}
	}
}

// loopback lets the probes reach the test servers on 127.0.0.1.
var loopback = &egress.Policy{AllowRanges: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

func TestSSHRefsWithTheKeyAndArgoCDsKnownHosts(t *testing.T) {
	if _, err := exec.LookPath("git-upload-pack"); err != nil {
		t.Skip("needs git:", err)
	}
	repo := filepath.Join(t.TempDir(), "app")
	require.NoError(t, exec.Command("git", "init", "-q", repo).Run())
	require.NoError(t, exec.Command("git", "-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first").Run())

	signer, key := newKey(t)
	_, otherKey := newKey(t)
	s := startGitSSHServer(t, signer.PublicKey(), "/org/app.git", repo)
	url := "ssh://git@" + s.addr + "/org/app.git"

	assert.Equal(t, Result{Answer: Readable}, SSHRefs(context.Background(), loopback, url, key, s.knownHosts))
	assert.Equal(t, "git-upload-pack '/org/app.git'", <-s.commands)

	assert.Equal(t, Refused, SSHRefs(context.Background(), loopback, url, otherKey, s.knownHosts).Answer, "a key the server does not accept")
	assert.Equal(t, NotFound, SSHRefs(context.Background(), loopback, "ssh://git@"+s.addr+"/org/other.git", key, s.knownHosts).Answer)
	<-s.commands

	unknown := SSHRefs(context.Background(), loopback, url, key, "")
	assert.Equal(t, Result{Answer: Failed, Detail: UnknownHostKey}, unknown, "no known hosts: nothing is trusted")
	otherSigner, _ := newKey(t)
	wrong := knownhosts.Line([]string{knownhosts.Normalize(s.addr)}, otherSigner.PublicKey())
	assert.Equal(t, Result{Answer: Failed, Detail: UnknownHostKey}, SSHRefs(context.Background(), loopback, url, key, wrong), "another host key")

	// A path that would end the quoting reaches the server as one argument.
	SSHRefs(context.Background(), loopback, "ssh://git@"+s.addr+"/org/x';touch /tmp/pwned;'", key, s.knownHosts)
	assert.Equal(t, `git-upload-pack '/org/x'\'';touch /tmp/pwned;'\'''`, <-s.commands)
	assert.False(t, strings.Contains(SSHRefs(context.Background(), loopback, "ssh://git@127.0.0.1:1/x", key, s.knownHosts).Detail, "127.0.0.1"))

	// By default the server on loopback is not dialled: no command reaches it.
	refused := SSHRefs(context.Background(), nil, url, key, s.knownHosts)
	assert.Equal(t, Result{Answer: Failed, Detail: netfailure.NotAllowed.String()}, refused)
	select {
	case cmd := <-s.commands:
		t.Fatalf("the refused probe ran %q", cmd)
	default:
	}
}

func TestSSHTarget(t *testing.T) {
	for _, tc := range []struct{ url, user, addr, path string }{
		{"ssh://git@github.com/org/repo.git", "git", "github.com:22", "/org/repo.git"},
		{"ssh://github.com:2222/org/repo", "git", "github.com:2222", "/org/repo"},
		{"ssh://deploy@[::1]:22/r", "deploy", "[::1]:22", "/r"},
		{"git@github.com:org/repo.git", "git", "github.com:22", "org/repo.git"},
	} {
		user, addr, path, err := sshTarget(tc.url)
		require.NoError(t, err, tc.url)
		assert.Equal(t, []string{tc.user, tc.addr, tc.path}, []string{user, addr, path}, tc.url)
	}
	for _, bad := range []string{"https://github.com/org/repo", "ssh://github.com", "github.com:org/repo", "git@github.com:"} {
		_, _, _, err := sshTarget(bad)
		assert.Error(t, err, bad)
	}
	for _, option := range []string{"git@github.com:--upload-pack=touch /tmp/x", "git@github.com:-x", "ssh://git@github.com/-oProxyCommand=x"} {
		_, _, _, err := sshTarget(option)
		assert.ErrorIs(t, err, errOptionLike, option)
	}
}

// A path beginning with '-' is refused before anything is dialled: the
// address does not exist, so any dial would fail differently.
func TestSSHRefsRefusesOptionLikePath(t *testing.T) {
	res := SSHRefs(context.Background(), nil, "git@192.0.2.1:--upload-pack=touch /tmp/pwned", "not a key", "")
	assert.Equal(t, Failed, res.Answer)
	assert.Equal(t, errOptionLike.Error(), res.Detail)
}
