package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func newTestServer(params ParamsFunc) *httptest.Server {
	s := &Server{Token: func() []byte { return []byte("s3cret") }, Params: params, MaxBodyBytes: 1024, Timeout: 200 * time.Millisecond}
	return httptest.NewServer(s.Handler())
}

func post(t *testing.T, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+Path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "every answer is JSON: %s", raw)
	return resp.StatusCode, out
}

func TestServer(t *testing.T) {
	var seen Request
	srv := newTestServer(func(_ context.Context, req Request) ([]argocd.GeneratorParams, error) {
		seen = req
		switch req.Input.Parameters["binding"] {
		case "bad":
			return nil, fmt.Errorf("%w: no such binding", ErrBadRequest)
		case "slow":
			time.Sleep(time.Second)
			return nil, context.DeadlineExceeded
		case "broken":
			return nil, fmt.Errorf("cache not ready")
		case "empty":
			return nil, nil
		case "refused":
			return nil, kernel.Refuse("ErrorOccurred", "Snapshot %q not found", "s")
		}
		return []argocd.GeneratorParams{{Component: "a"}}, nil
	})
	defer srv.Close()
	body := `{"applicationSetName":"seb-1","input":{"parameters":{"namespace":"jane","binding":"%s"}}}`

	code, out := post(t, srv.URL, "s3cret", fmt.Sprintf(body, "ok"))
	assert.Equal(t, http.StatusOK, code)
	params := out["output"].(map[string]any)["parameters"].([]any)
	require.Len(t, params, 1)
	assert.Equal(t, "a", params[0].(map[string]any)["component"])
	assert.Len(t, params[0], reflect.TypeOf(argocd.GeneratorParams{}).NumField(), "every key of the contract, empty or not")
	assert.Equal(t, "seb-1", seen.ApplicationSetName)
	assert.Equal(t, "jane", seen.Input.Parameters["namespace"])

	code, out = post(t, srv.URL, "s3cret", fmt.Sprintf(body, "empty"))
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, []any{}, out["output"].(map[string]any)["parameters"], "no components is an empty list, not null")

	for name, tc := range map[string]struct {
		token, body string
		code        int
		msg         string
	}{
		"no token":        {"", fmt.Sprintf(body, "ok"), http.StatusUnauthorized, "bearer token"},
		"wrong token":     {"s3cres", fmt.Sprintf(body, "ok"), http.StatusUnauthorized, "bearer token"},
		"token prefix":    {"s3c", fmt.Sprintf(body, "ok"), http.StatusUnauthorized, "bearer token"},
		"not json":        {"s3cret", "{", http.StatusBadRequest, "not a plugin generator request"},
		"too big":         {"s3cret", `{"input":{"parameters":{"x":"` + strings.Repeat("a", 2000) + `"}}}`, http.StatusRequestEntityTooLarge, "over 1024 bytes"},
		"unknown binding": {"s3cret", fmt.Sprintf(body, "bad"), http.StatusBadRequest, "no such binding"},
		"timeout":         {"s3cret", fmt.Sprintf(body, "slow"), http.StatusGatewayTimeout, "timed out"},
		"internal":        {"s3cret", fmt.Sprintf(body, "broken"), http.StatusInternalServerError, "cache not ready"},
		"refused input":   {"s3cret", fmt.Sprintf(body, "refused"), http.StatusBadRequest, `Snapshot "s" not found`},
	} {
		t.Run(name, func(t *testing.T) {
			code, out := post(t, srv.URL, tc.token, tc.body)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, out["error"], tc.msg)
		})
	}

	resp, err := http.Get(srv.URL + Path)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestServerRefusesWhenNoTokenConfigured(t *testing.T) {
	s := &Server{Token: func() []byte { return nil }, Params: func(context.Context, Request) ([]argocd.GeneratorParams, error) { return nil, nil }}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, _ := post(t, srv.URL, "", `{}`)
	assert.Equal(t, http.StatusUnauthorized, code, "an empty configured token must not let an empty bearer in")
}

// A binding of a tenant another Argo CD instance serves is refused with no
// parameters, and the binding is not even read.
func TestServedRefusesOtherInstancesTenants(t *testing.T) {
	read := 0
	params := Served(func(context.Context, Request) ([]argocd.GeneratorParams, error) {
		read++
		return []argocd.GeneratorParams{{Component: "a"}}, nil
	}, func(_ context.Context, ns string) bool { return ns == "ours" })
	srv := newTestServer(params)
	defer srv.Close()
	body := `{"applicationSetName":"seb-1","input":{"parameters":{"namespace":"%s","binding":"b"}}}`

	code, out := post(t, srv.URL, "s3cret", fmt.Sprintf(body, "theirs"))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, fmt.Sprint(out), "not served by this Argo CD instance")
	assert.Nil(t, out["output"])
	assert.Zero(t, read)

	code, out = post(t, srv.URL, "s3cret", fmt.Sprintf(body, "ours"))
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, out["output"].(map[string]any)["parameters"], 1)
	assert.Equal(t, 1, read)
}
