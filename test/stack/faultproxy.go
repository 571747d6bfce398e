package stack

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FaultProxy sits between a client (the sidecar) and a Kube's API server and
// injects faults: a share of requests fails with 503, and watches are cut after
// a random time. Its Kubeconfig points at the proxy (plain http on loopback,
// no credentials: the proxy authenticates upstream as the admin).
type FaultProxy struct {
	URL        string
	Kubeconfig string

	failRate atomic.Uint64 // math.Float64bits
	watchMax atomic.Int64  // longest a watch lives, 0 = never cut
	Failed   atomic.Int64  // requests failed so far
	Cut      atomic.Int64  // watches cut so far

	srv *http.Server
}

// StartFaultProxy starts a proxy in front of k that injects no fault yet; its
// kubeconfig is written into dir.
func StartFaultProxy(k *Kube, dir string) (*FaultProxy, error) {
	upstream, err := url.Parse(k.URL)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(k.Config)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{URL: "http://" + l.Addr().String()}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	// Every cut watch is a "read error during body copy": expected here, and
	// thousands of lines in the test output otherwise.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rand.Float64() < math.Float64frombits(p.failRate.Load()) {
			p.Failed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected fault","reason":"ServiceUnavailable","code":503}`)
			return
		}
		if max := p.watchMax.Load(); max > 0 && r.URL.Query().Get("watch") == "true" {
			ctx, cancel := context.WithTimeout(r.Context(), time.Duration(rand.Int64N(max)+1))
			defer cancel()
			defer func() {
				if ctx.Err() == context.DeadlineExceeded {
					p.Cut.Add(1)
				}
			}()
			r = r.WithContext(ctx)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(l) }()

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.URL}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	p.Kubeconfig = filepath.Join(dir, "fault-proxy.kubeconfig")
	return p, os.WriteFile(p.Kubeconfig, b, 0o600)
}

// SetFailRate makes a share (0..1) of requests fail with 503.
func (p *FaultProxy) SetFailRate(share float64) { p.failRate.Store(math.Float64bits(share)) }

// CutWatchesWithin ends every watch after a random time up to max (0: never).
func (p *FaultProxy) CutWatchesWithin(max time.Duration) { p.watchMax.Store(int64(max)) }

// Close stops the proxy.
func (p *FaultProxy) Close() { _ = p.srv.Close() }
