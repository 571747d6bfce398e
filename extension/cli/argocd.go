package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoconfig "github.com/argoproj/argo-cd/v2/util/config"
	"github.com/argoproj/argo-cd/v2/util/localconfig"
	"github.com/spf13/pflag"

	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	panel "github.com/gitops-service/gitops-service/ui-proxy/api"
)

// Argo CD's environment variables (as the argocd CLI reads them; flags in
// $ARGOCD_OPTS are read by argoconfig).
const (
	envArgoServer    = "ARGOCD_SERVER"
	envArgoAuthToken = "ARGOCD_AUTH_TOKEN"
	// authCookie is argocd-server's session cookie: its proxy extensions
	// authenticate with it only (gRPC-gateway routes also take the bearer).
	authCookie = "argocd.token"
	// versionHeader is where ui-proxy says which version it is.
	versionHeader = panel.HeaderVersion
)

// errNoArgoLogin: neither flags, environment nor argocd's config file name an
// Argo CD server.
var errNoArgoLogin = errors.New("no Argo CD login")

// argoOptions are argocd's global flags, with argocd's defaults ($ARGOCD_OPTS,
// $ARGOCD_SERVER, $ARGOCD_AUTH_TOKEN, its config file). argocd passes a
// plugin only its environment and the arguments after the plugin's name, so
// they are read here again.
type argoOptions struct {
	fs                                     *pflag.FlagSet
	server, authToken, context, configPath string
	rootPath                               string
	grpcWeb, plaintext, insecure           bool
	headers                                []string
}

func newArgoOptions() *argoOptions { return &argoOptions{} }

func (a *argoOptions) addFlags(fs *pflag.FlagSet) {
	a.fs = fs
	defaultConfig, _ := localconfig.DefaultLocalConfigPath()
	fs.StringVar(&a.server, "server", argoconfig.GetFlag("server", os.Getenv(envArgoServer)), "Argo CD server address (as for argocd; $"+envArgoServer+"): go through Argo CD with your Argo CD login")
	fs.StringVar(&a.authToken, "auth-token", argoconfig.GetFlag("auth-token", os.Getenv(envArgoAuthToken)), "Argo CD token (as for argocd; $"+envArgoAuthToken+"); default the token of your argocd login")
	fs.StringVar(&a.context, "argocd-context", argoconfig.GetFlag("argocd-context", ""), "Context of argocd's config file to use (default its current context)")
	fs.StringVar(&a.configPath, "config", argoconfig.GetFlag("config", defaultConfig), "Path to argocd's config file")
	fs.BoolVar(&a.grpcWeb, "grpc-web", argoconfig.GetBoolFlag("grpc-web"), "Accepted as argocd does (the extension is plain HTTPS, which passes proxies without HTTP/2 anyway)")
	fs.StringVar(&a.rootPath, "grpc-web-root-path", argoconfig.GetFlag("grpc-web-root-path", ""), "Path under which argocd-server is served")
	fs.BoolVar(&a.plaintext, "plaintext", argoconfig.GetBoolFlag("plaintext"), "Talk to argocd-server without TLS")
	fs.BoolVar(&a.insecure, "insecure", argoconfig.GetBoolFlag("insecure"), "Do not verify argocd-server's certificate")
	fs.StringSliceVarP(&a.headers, "header", "H", argoconfig.GetStringSliceFlag("header", nil), "Extra header for argocd-server (Name: value), as for argocd")
}

// explicit says whether the user asked for Argo CD: an Argo CD flag on the
// command line, $ARGOCD_SERVER / $ARGOCD_AUTH_TOKEN, or a server, token or
// context in $ARGOCD_OPTS (not its other flags: `--grpc-web` there is a
// habit of argocd users, not a choice of the way in).
func (a *argoOptions) explicit() bool {
	if os.Getenv(envArgoServer) != "" || os.Getenv(envArgoAuthToken) != "" {
		return true
	}
	for _, n := range []string{"server", "auth-token", "argocd-context"} {
		if argoconfig.GetFlag(n, "") != "" {
			return true
		}
	}
	for _, n := range argoFlagNames {
		if a.fs != nil && a.fs.Changed(n) {
			return true
		}
	}
	return false
}

// argoClient talks to argocd-server as the logged-in user.
type argoClient struct {
	base    *url.URL
	token   string
	headers http.Header
	http    *http.Client
}

// client resolves server and token: flags and environment first, then the
// config file's context (the current one unless --argocd-context).
func (a *argoOptions) client(warn io.Writer) (*argoClient, error) {
	server, token := a.server, a.authToken
	plaintext, insecure, rootPath := a.plaintext, a.insecure, a.rootPath
	if cfg, err := localconfig.ReadLocalConfig(a.configPath); err == nil && cfg != nil {
		if ctx, err := cfg.ResolveContext(a.context); err == nil && (server == "" || server == ctx.Server.Server) {
			server = ctx.Server.Server
			plaintext = plaintext || ctx.Server.PlainText
			insecure = insecure || ctx.Server.Insecure
			if rootPath == "" {
				rootPath = ctx.Server.GRPCWebRootPath
			}
			if token == "" {
				token = ctx.User.AuthToken
			}
		} else if err != nil && a.context != "" {
			return nil, usageError("--argocd-context %s: %v (in %s)", a.context, err, a.configPath)
		}
	} else if err != nil && a.fs != nil && a.fs.Changed("config") {
		return nil, usageError("--config %s: %v", a.configPath, err)
	}
	if server == "" {
		return nil, errNoArgoLogin
	}
	if token == "" {
		return nil, &exitError{code: exitRefused, msg: fmt.Sprintf("no Argo CD token for %s: run `argocd login %s` (or pass --auth-token / $%s)", server, server, envArgoAuthToken)}
	}
	scheme := "https"
	if plaintext {
		scheme = "http"
	}
	if strings.Contains(server, "://") {
		return nil, usageError("--server %s: give host[:port] as for argocd (--plaintext for http)", server)
	}
	base := &url.URL{Scheme: scheme, Host: server, Path: "/" + strings.Trim(rootPath, "/")}
	h := http.Header{}
	for _, kv := range a.headers {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return nil, usageError("--header %q: use Name: value", kv)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the user asked for --insecure, as with argocd
	}
	return &argoClient{base: base, token: token, headers: h, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

// do sends a request as the user and decodes a JSON answer into out; it
// returns the answer's headers.
func (a *argoClient) do(ctx context.Context, method, path string, query url.Values, hdr map[string]string, body, out any) (http.Header, error) {
	u := *a.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range a.headers {
		req.Header[k] = vs
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.AddCookie(&http.Cookie{Name: authCookie, Value: a.token})
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("talking to Argo CD at %s: %v", a.base.Host, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading Argo CD's answer: %v", err)
	}
	if resp.StatusCode >= 300 {
		return resp.Header, argoError(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.Header, fmt.Errorf("the answer of Argo CD to %s is not what the GitOps Service sends (%v): is its extension %s configured?", path, err, panel.ExtensionName)
		}
	}
	return resp.Header, nil
}

// argoError turns an answer of argocd-server (or of our extension behind
// it) into what the user should do next.
func argoError(status int, body []byte) error {
	var m struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &m)
	msg := m.Error
	if msg == "" {
		msg = m.Message
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 300 {
			msg = msg[:300]
		}
	}
	switch status {
	case http.StatusUnauthorized:
		return &exitError{code: exitRefused, msg: "Argo CD does not accept your token (" + msg + "): log in again with `argocd login` or `argocd relogin`"}
	case http.StatusForbidden:
		return &exitError{code: exitRefused, msg: "Argo CD refused: " + msg}
	case http.StatusBadRequest, http.StatusConflict:
		return &exitError{code: exitRefused, msg: "the GitOps Service refused: " + msg}
	}
	return fmt.Errorf("argocd-server answered %d: %s", status, msg)
}

// apps are the Applications of the GitOps Service the user may see, of one
// tenant namespace or all.
func (a *argoClient) apps(ctx context.Context, ns string) ([]argov1alpha1.Application, error) {
	sel := ownership.LabelManagedBy + "=" + ownership.ManagedByValue
	if ns != "" {
		sel += "," + ownership.LabelTenantNS + "=" + ns
	}
	var list argov1alpha1.ApplicationList
	if _, err := a.do(ctx, http.MethodGet, "/api/v1/applications", url.Values{"selector": {sel}}, nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func appHeaders(app *argov1alpha1.Application) map[string]string {
	return map[string]string{panel.HeaderApplication: app.Namespace + ":" + app.Name, panel.HeaderProject: app.Spec.Project}
}

// extension is the path of the extension's endpoint p through argocd-server.
func (a *argoClient) extension(p string) string { return "/extensions/" + panel.ExtensionName + p }

// deployment is the GitOps Service object behind app, as the panel sees it,
// and the version of the GitOps Service that answered.
func (a *argoClient) deployment(ctx context.Context, app *argov1alpha1.Application) (*panel.Deployment, string, error) {
	d := &panel.Deployment{}
	h, err := a.do(ctx, http.MethodGet, a.extension(panel.PathDeployment), nil, appHeaders(app), nil, d)
	if err != nil {
		return nil, "", err
	}
	return d, h.Get(versionHeader), nil
}

// act is a panel action (the extension's endpoint path) on app.
func (a *argoClient) act(ctx context.Context, app *argov1alpha1.Application, path string, body any) (*panel.Action, error) {
	out := &panel.Action{}
	if body == nil {
		body = struct{}{}
	}
	_, err := a.do(ctx, http.MethodPost, a.extension(path), nil, appHeaders(app), body, out)
	return out, err
}
