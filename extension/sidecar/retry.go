package sidecar

import (
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// retryReads wraps cfg's transport so that a GET (discovery, list, get, the
// start of a watch) that fails with a connection error or a 429/5xx is tried
// again a few times at once. Creating the manager makes one discovery call
// per type; with a share of requests failing, a whole-manager retry alone
// almost never gets through them all. GETs carry no body, so a retry is safe.
func retryReads(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	wrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return readRetrier{rt}
	}
	return cfg
}

type readRetrier struct{ next http.RoundTripper }

func (r readRetrier) RoundTrip(req *http.Request) (*http.Response, error) {
	const tries = 5
	for i := 1; ; i++ {
		resp, err := r.next.RoundTrip(req)
		if req.Method != http.MethodGet || i == tries || req.Context().Err() != nil ||
			(err == nil && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500) {
			return resp, err
		}
		if resp != nil {
			resp.Body.Close()
		}
		time.Sleep(time.Duration(i*50) * time.Millisecond)
	}
}
