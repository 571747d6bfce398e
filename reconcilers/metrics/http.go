package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// InstrumentHandler observes h's requests in
// gitops_service_http_request_duration_seconds{server, code}.
func InstrumentHandler(server string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerDuration(HTTPRequestDuration.MustCurryWith(prometheus.Labels{"server": server}), h)
}
