package stack

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitHTTPServer serves the bare repositories under a directory (the GitRepo
// dirs NewGitRepo creates there) read-only over HTTPS with HTTP basic auth,
// through `git http-backend` (smart HTTP, fetch and clone only). Its serving
// certificate is for 127.0.0.1 and signed by a CA of its own (CAPEM), which a
// client must trust: Argo CD through ArgoCD.TrustGitServerCA, the git CLI
// through GIT_SSL_CAINFO.
type GitHTTPServer struct {
	Root  string // the directory the repositories are served from
	Addr  string // 127.0.0.1:PORT
	Host  string // "127.0.0.1": the name Argo CD keys the CA by
	CAPEM []byte // PEM of the CA that signed the serving certificate

	user, password string
	srv            *http.Server
	closeOnce      sync.Once
	closeErr       error
}

// ServeGitHTTPS starts serving the repositories under root on a free loopback
// port. Every request needs basic auth with user and password: without them,
// or with wrong ones, the answer is 401 with a WWW-Authenticate challenge.
// Stop it with Close.
func ServeGitHTTPS(root string, user, password string) (*GitHTTPServer, error) {
	if user == "" || password == "" {
		return nil, errors.New("ServeGitHTTPS: user and password must not be empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("ServeGitHTTPS: %s is not a directory (%v)", abs, err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("ServeGitHTTPS: %w", err)
	}
	keys, err := newPKI("git-https")
	if err != nil {
		return nil, fmt.Errorf("generate certificates: %w", err)
	}
	cert, err := tls.X509KeyPair(keys.ServingCert, keys.ServingKey)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &GitHTTPServer{
		Root:     abs,
		Addr:     ln.Addr().String(),
		Host:     "127.0.0.1",
		CAPEM:    keys.CACert,
		user:     user,
		password: password,
	}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Dir:  abs,
		Env: []string{
			"GIT_PROJECT_ROOT=" + abs,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"HOME=" + abs,
		},
		InheritEnv: []string{"PATH", "TMPDIR"},
		Logger:     log.New(io.Discard, "", 0),
		Stderr:     io.Discard,
	}
	s.srv = &http.Server{
		Handler:           s.authenticate(backend),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	return s, nil
}

// authenticate answers 401 unless the request carries the server's basic-auth
// credentials, and refuses pushes (the server is read-only).
func (s *GitHTTPServer) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		// Compare both, always, in constant time.
		userOK := subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) == 1
		passOK := subtle.ConstantTimeCompare([]byte(p), []byte(s.password)) == 1
		if !ok || !userOK || !passOK {
			w.Header().Set("WWW-Authenticate", `Basic realm="gitops-service test git", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("service") == "git-receive-pack" || strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			http.Error(w, "this server is read-only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// URL returns the https URL of the repository repoName under Root: the name
// given to NewGitRepo ("apps" serves Root/apps.git), or a path relative to
// Root, with or without ".git".
func (s *GitHTTPServer) URL(repoName string) string {
	name := strings.Trim(filepath.ToSlash(repoName), "/")
	if !strings.HasSuffix(name, ".git") {
		name += ".git"
	}
	return "https://" + s.Addr + "/" + name
}

// RepoURL returns the https URL of r, which must live under Root.
func (s *GitHTTPServer) RepoURL(r *GitRepo) (string, error) {
	rel, err := filepath.Rel(s.Root, r.Dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("repository %s is not under %s", r.Dir, s.Root)
	}
	return s.URL(rel), nil
}

// Close stops the server. Idempotent.
func (s *GitHTTPServer) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.closeErr = s.srv.Close()
		}
	})
	return s.closeErr
}

// TrustGitServerCA makes Argo CD trust caPEM for https repositories on host
// (a host name or IP, a port is ignored), the way `argocd cert add-tls` does
// in a cluster: Argo CD's repo-server reads the PEM file named after the
// repository's host in $ARGOCD_TLS_DATA_PATH (the mounted argocd-tls-certs-cm)
// on every connection, for go-git (ls-remote) and as GIT_SSL_CAINFO for the git
// CLI (fetch). Every component of a runs with that variable set to a.Dir/tls,
// so no restart is needed. The ConfigMap is not updated: plain processes do
// not read it.
func (a *ArgoCD) TrustGitServerCA(host string, caPEM []byte) error {
	host = strings.TrimSpace(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "" || strings.ContainsAny(host, `/\`) || host == "." || host == ".." {
		return fmt.Errorf("TrustGitServerCA: invalid host %q", host)
	}
	if !strings.Contains(string(caPEM), "-----BEGIN CERTIFICATE-----") {
		return errors.New("TrustGitServerCA: no PEM certificate given")
	}
	dir := filepath.Join(a.Dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Write and rename, so a concurrent reader never sees half a file.
	tmp, err := os.CreateTemp(dir, ".tmp-"+host+"-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(caPEM); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, host)); err != nil {
		return err
	}
	// The ConfigMap too, as in a cluster: the GitOps Service verifies
	// repository credentials with the CAs Argo CD trusts, read from it.
	if a.Kube == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := a.Kube.Clientset()
	if err != nil {
		return err
	}
	return retryConflict(ctx, func() error {
		cm, err := cs.CoreV1().ConfigMaps(a.Namespace).Get(ctx, "argocd-tls-certs-cm", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[host] = string(caPEM)
		_, err = cs.CoreV1().ConfigMaps(a.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}
