// Package gitprobe asks a git repository over smart HTTP for its refs (the
// first request of every git fetch), with or without credentials. It answers
// with a status code or a kind of failure in a few fixed words, never what
// the server sent: the URL is a tenant's choice and the request goes out from
// inside the platform's network.
package gitprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
)

// Timeout bounds one probe.
const Timeout = 10 * time.Second

// TLSCertsConfigMap is Argo CD's ConfigMap of repository server CAs, by host name.
const TLSCertsConfigMap = "argocd-tls-certs-cm"

// Answer is what the repository said.
type Answer int

const (
	// Readable: it sent its refs.
	Readable Answer = iota
	// Refused: HTTP 401 or 403 (credentials needed, or not these).
	Refused
	// NotFound: HTTP 404.
	NotFound
	// NotGit: any other answer (Status says which).
	NotGit
	// Failed: no answer (Detail says why, in fixed words).
	Failed
)

// Result is one probe's outcome.
type Result struct {
	Answer Answer
	// Status is the HTTP status of an answer.
	Status int
	// Detail names a failure to connect (Failed).
	Detail string
}

// Refs asks repoURL (https:// or http://) for its refs, with Basic
// credentials when user or password is set (only ever over https). It
// connects only to addresses egress allows (nil: the fixed ranges refused).
func Refs(ctx context.Context, egress *egress.Policy, repoURL, user, password string, roots *x509.CertPool) Result {
	r, _ := refs(ctx, egress, repoURL, user, password, roots, false)
	return r
}

// List is Refs that also answers the refs the repository advertised, by
// name (refs/heads/main, refs/tags/v1), with annotated tags peeled to their
// commit. A Readable answer whose refs cannot be read is NotGit.
func List(ctx context.Context, egress *egress.Policy, repoURL, user, password string, roots *x509.CertPool) (map[string]string, Result) {
	r, advertised := refs(ctx, egress, repoURL, user, password, roots, true)
	return advertised, r
}

func refs(ctx context.Context, egress *egress.Policy, repoURL, user, password string, roots *x509.CertPool, list bool) (Result, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	refs := strings.TrimSuffix(repoURL, "/") + "/info/refs?service=git-upload-pack"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, refs, nil)
	if err != nil {
		return Result{Answer: Failed, Detail: "not a URL"}, nil
	}
	if user != "" || password != "" {
		if req.URL.Scheme != "https" {
			return Result{Answer: Failed, Detail: "credentials are only sent over https"}, nil
		}
		req.SetBasicAuth(user, password)
	}
	req.Header.Set("User-Agent", "git/2.0 (gitops-service)")
	c := &http.Client{
		Transport: &http.Transport{
			// A proxy the admin sets is dialled instead, and is the admin's to restrict.
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         egress.DialContext(&net.Dialer{Timeout: Timeout}),
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: Timeout,
		},
		CheckRedirect: sameOrigin,
	}
	resp, err := c.Do(req)
	if err != nil {
		return Result{Answer: Failed, Detail: describe(err)}, nil
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-git-upload-pack-advertisement"):
		if !list {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			return Result{Answer: Readable, Status: resp.StatusCode}, nil
		}
		advertised, err := parseAdvertisement(io.LimitReader(resp.Body, maxAdvertisement))
		if err != nil {
			return Result{Answer: NotGit, Status: resp.StatusCode}, nil
		}
		return Result{Answer: Readable, Status: resp.StatusCode}, advertised
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Result{Answer: Refused, Status: resp.StatusCode}, nil
	case resp.StatusCode == http.StatusNotFound:
		return Result{Answer: NotFound, Status: resp.StatusCode}, nil
	default:
		return Result{Answer: NotGit, Status: resp.StatusCode}, nil
	}
}

// TrustedCAs are the system's roots plus the CA Argo CD trusts for the
// repository's host (argocd-tls-certs-cm), so a probe trusts what Argo CD does.
func TrustedCAs(ctx context.Context, reader client.Reader, argoNamespace, repoURL string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	u, err := url.Parse(strings.TrimSpace(repoURL))
	if err != nil || u.Scheme != "https" {
		return pool, nil
	}
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: argoNamespace, Name: TLSCertsConfigMap}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return pool, nil
		}
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", argoNamespace, TLSCertsConfigMap, err)
	}
	if pem, ok := cm.Data[u.Hostname()]; ok {
		pool.AppendCertsFromPEM([]byte(pem))
	}
	return pool, nil
}

// SSHKnownHostsConfigMap is Argo CD's ConfigMap of ssh host keys.
const SSHKnownHostsConfigMap = "argocd-ssh-known-hosts-cm"

// KnownHosts are the ssh host keys Argo CD trusts (known_hosts format), ""
// when it has none.
func KnownHosts(ctx context.Context, reader client.Reader, argoNamespace string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: argoNamespace, Name: SSHKnownHostsConfigMap}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", argoNamespace, SSHKnownHostsConfigMap, err)
	}
	return cm.Data["ssh_known_hosts"], nil
}

// sameOrigin follows a redirect only to the same scheme, host and port. Go
// sends the Basic-auth header again to a redirect on the same host name
// whatever its scheme and port, so https://h redirecting to http://h or to
// h:8080 would hand the credentials to plain http or to another service; a
// redirect to another host would go without them and say nothing about them.
// Not followed, the redirect's status is the answer (not a git repository).
func sameOrigin(r *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) >= 5 || r.URL.Scheme != first.Scheme || r.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// describe turns a connection error into a few fixed words (netfailure:
// nothing of the error is repeated).
func describe(err error) string {
	switch k := netfailure.Classify(err); k {
	case netfailure.UntrustedCertificate, netfailure.InvalidCertificate:
		return "TLS handshake failed: the server's certificate is not trusted: add its CA to Argo CD's argocd-tls-certs-cm (argocd cert add-tls)"
	case netfailure.Timeout:
		return fmt.Sprintf("timeout: no answer within %s", Timeout)
	default:
		return k.String()
	}
}
