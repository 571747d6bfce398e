// Package generator is the Argo CD ApplicationSet plugin generator the sidecar
// serves: Argo CD's applicationset-controller POSTs to
// /api/v1/getparams.execute and gets one parameter set per component of a
// SnapshotEnvironmentBinding.
package generator

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Path is where Argo CD's plugin generator sends its requests.
const Path = "/api/v1/getparams.execute"

// Request is the body Argo CD sends.
type Request struct {
	ApplicationSetName string `json:"applicationSetName"`
	Input              struct {
		Parameters map[string]any `json:"parameters"`
	} `json:"input"`
}

// Response is the body Argo CD expects.
type Response struct {
	Output struct {
		Parameters []argocd.GeneratorParams `json:"parameters"`
	} `json:"output"`
}

// ParamsFunc computes the parameter sets of one request.
type ParamsFunc func(ctx context.Context, req Request) ([]argocd.GeneratorParams, error)

// ErrBadRequest marks errors caused by the request itself (400, not 500).
var ErrBadRequest = errors.New("bad request")

// Server serves the plugin protocol.
type Server struct {
	// Token returns the bearer token Argo CD must present (from a Secret).
	Token func() []byte
	// Params computes the answer.
	Params ParamsFunc
	// MaxBodyBytes bounds the request body; default 64 KiB.
	MaxBodyBytes int64
	// Timeout bounds one request; default 10 s (Argo CD's own default is 30 s).
	Timeout time.Duration
}

// Handler returns the HTTP handler of the plugin.
func (s *Server) Handler() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc(Path, s.getParams).Methods(http.MethodPost)
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "use POST "+Path)
	})
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not found: the plugin generator serves POST "+Path)
	})
	return r
}

func (s *Server) getParams(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	limit := s.MaxBodyBytes
	if limit <= 0 {
		limit = 64 << 10
	}
	var req Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", limit))
			return
		}
		writeError(w, http.StatusBadRequest, "request body is not a plugin generator request: "+err.Error())
		return
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	params, err := s.Params(ctx, req)
	var refusal *kernel.Refusal
	switch {
	case errors.As(err, &refusal):
		writeError(w, http.StatusBadRequest, refusal.Message)
		return
	case errors.Is(err, ErrBadRequest):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, "timed out computing parameters")
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	var resp Response
	resp.Output.Parameters = params
	if resp.Output.Parameters == nil {
		resp.Output.Parameters = []argocd.GeneratorParams{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// authorized compares the bearer token in constant time.
func (s *Server) authorized(r *http.Request) bool {
	want := s.Token()
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && len(want) > 0 && subtle.ConstantTimeCompare([]byte(got), want) == 1
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
