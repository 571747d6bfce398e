// Package hostile is a server a tenant points a URL at, for the tests of what
// the sidecar reveals and sends when it connects there.
package hostile

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server is a server a tenant points a URL at, for the tests of what the
// sidecar reveals and sends: one port answers both TLS and plain http (as
// https://h and http://h share a host name), and a second port plain http.
// Over TLS it answers by the first path segment:
//
//	/5xx/...     500, a text body with the Canary (client-go quotes up to 2 KiB of it)
//	/status/...  500, a Kubernetes Status whose message is the Canary
//	/to-http/... 302 to the same host and port over plain http
//	/to-port/... 302 to the other port (plain http)
//	/to-tls/...  302 to the other port over https (another service on the same host)
//
// Anything received over plain http, or on the other port, is recorded with
// its Authorization header (Leaks): credentials must never get there.
type Server struct {
	// URL is https://127.0.0.1:<port>, HTTPURL the same over http, OtherURL
	// the second port.
	URL, HTTPURL, OtherURL string
	// CAData (PEM) and Roots trust the server's certificate (127.0.0.1).
	CAData []byte
	Roots  *x509.CertPool
	// Canary is in every answer body; it must never show in a status, an Event or a log.
	Canary string

	mu    sync.Mutex
	leaks []string
}

// Leaks returns "<where> <Authorization>" of every request with credentials
// that reached plain http or the other port.
func (h *Server) Leaks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.leaks...)
}

func (h *Server) record(where string, r *http.Request) {
	if auth := r.Header.Get("Authorization"); auth != "" {
		h.mu.Lock()
		h.leaks = append(h.leaks, where+" "+auth)
		h.mu.Unlock()
	}
}

// Start starts a Server, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	// httptest's certificate (for 127.0.0.1), served by our own listeners.
	donor := httptest.NewTLSServer(http.NotFoundHandler())
	cert := donor.Certificate()
	tlsConfig := donor.TLS.Clone()
	donor.Close()
	h := &Server{
		Canary: "CANARY-" + strings.ReplaceAll(t.Name(), "/", "-") + "-internal-secret-body",
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		Roots:  x509.NewCertPool(),
	}
	h.Roots.AddCert(cert)

	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.OtherURL = "http://" + other.Addr().String()
	otherSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		where := "other-port"
		if r.TLS != nil {
			where = "other-port-tls"
		}
		h.record(where, r)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, "internal service on another port: %s", h.Canary)
	})}
	go func() { _ = otherSrv.Serve(sniffing{Listener: other, config: tlsConfig}) }()

	main, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.URL, h.HTTPURL = "https://"+main.Addr().String(), "http://"+main.Addr().String()
	otherTLS := "https://" + other.Addr().String()
	mainSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			h.record("plain-http", r)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = fmt.Fprintf(w, "plain http: %s", h.Canary)
			return
		}
		first, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		rest = "/" + rest
		if r.URL.RawQuery != "" {
			rest += "?" + r.URL.RawQuery
		}
		switch first {
		case "to-http":
			http.Redirect(w, r, h.HTTPURL+"/"+first+rest, http.StatusFound)
		case "to-port":
			http.Redirect(w, r, h.OtherURL+rest, http.StatusFound)
		case "to-tls":
			http.Redirect(w, r, otherTLS+rest, http.StatusFound)
		case "status":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":"InternalError","code":500}`,
				"upstream 10.0.0.7:5432 said: "+h.Canary)
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = fmt.Fprintf(w, "internal error at 10.0.0.7:5432: %s", h.Canary)
		}
	})}
	go func() { _ = mainSrv.Serve(sniffing{Listener: main, config: tlsConfig}) }()
	t.Cleanup(func() {
		_ = mainSrv.Close()
		_ = otherSrv.Close()
	})
	return h
}

// sniffing serves TLS and plain http on one port: a connection whose first
// byte starts a TLS handshake (0x16) gets TLS.
type sniffing struct {
	net.Listener
	config *tls.Config
}

func (l sniffing) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &peeked{Conn: c, r: bufio.NewReader(c)}
	if b, err := pc.r.Peek(1); err == nil && b[0] == 0x16 {
		return tls.Server(pc, l.config), nil
	}
	return pc, nil
}

type peeked struct {
	net.Conn
	r *bufio.Reader
}

func (p *peeked) Read(b []byte) (int, error) { return p.r.Read(b) }
