package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// AdminUser is Argo CD's built-in admin account (role:admin by Argo CD's
// built-in policy).
const AdminUser = "admin"

// AuthCookie is the cookie argocd-server reads the session token from on its
// plain HTTP routes (the proxy extensions among them).
const AuthCookie = "argocd.token"

// CreateAccount adds an Argo CD local account that can log in (argocd-cm
// `accounts.<name>: login`) with the given password (bcrypt hash in
// argocd-secret), as an admin does. It returns once argocd-server knows the
// account. The account has no permissions until a policy grants some.
func (a *ArgoCD) CreateAccount(ctx context.Context, name, password string) error {
	if name == AdminUser {
		return errors.New("admin is built in; it has AdminPassword")
	}
	if err := a.setPassword(ctx, name, password); err != nil {
		return err
	}
	if err := a.patchConfigMap(ctx, "argocd-cm", map[string]string{"accounts." + name: "login"}); err != nil {
		return err
	}
	// argocd-server reads argocd-cm and argocd-secret through informers: wait
	// until the account shows, so that a login right after cannot count as a
	// failed attempt (Argo CD locks accounts out after a few).
	token, err := a.AdminSession(ctx)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _, err := a.api(ctx, http.MethodGet, "/api/v1/account/"+name, token, nil)
		if err == nil && status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("argocd-server never showed account %s (last: %d %v)", name, status, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// setPassword stores user's bcrypt password hash and its mtime in
// argocd-secret (`admin.password` for the admin, `accounts.<name>.password`
// for local accounts). Tokens issued before the mtime are invalid, so it is
// set a little in the past.
func (a *ArgoCD) setPassword(ctx context.Context, user, password string) error {
	return SetPassword(ctx, a.Kube, a.Namespace, user, password)
}

// SetPassword is setPassword for an Argo CD namespace the test stack did not
// start argocd-server in (an install path's): what an admin does to give a
// local account (argocd-cm `accounts.<name>: login`) its password.
func SetPassword(ctx context.Context, k *Kube, ns, user, password string) error {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	prefix := "accounts." + user
	if user == AdminUser {
		prefix = AdminUser
	}
	patch, err := json.Marshal(map[string]any{"stringData": map[string]string{
		prefix + ".password":      string(hash),
		prefix + ".passwordMtime": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
	}})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Secrets(ns).Patch(ctx, "argocd-secret", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("argocd-secret: password of %s: %w", user, err)
	}
	return nil
}

// SetRBAC merges data into argocd-rbac-cm (e.g. "policy.csv"); argocd-server
// applies it without a restart.
func (a *ArgoCD) SetRBAC(ctx context.Context, data map[string]string) error {
	return a.patchConfigMap(ctx, "argocd-rbac-cm", data)
}

func (a *ArgoCD) patchConfigMap(ctx context.Context, name string, data map[string]string) error {
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(a.Kube.Config)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().ConfigMaps(a.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Session logs user in through argocd-server's API (POST /api/v1/session)
// and returns the session token: send it as `Authorization: Bearer` (gRPC
// gateway routes) or as the AuthCookie (extensions).
func (a *ArgoCD) Session(ctx context.Context, user, password string) (string, error) {
	return session(ctx, a.ServerAddr, user, password)
}

func session(ctx context.Context, serverAddr, user, password string) (string, error) {
	body, err := json.Marshal(map[string]string{"username": user, "password": password})
	if err != nil {
		return "", err
	}
	status, resp, err := apiCall(ctx, serverAddr, http.MethodPost, "/api/v1/session", "", body)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("log in as %s: %d %s", user, status, strings.TrimSpace(string(resp)))
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(resp, &out); err != nil || out.Token == "" {
		return "", fmt.Errorf("log in as %s: no token in %q", user, resp)
	}
	return out.Token, nil
}

// AdminSession returns a session token of the admin (made once per ArgoCD).
func (a *ArgoCD) AdminSession(ctx context.Context) (string, error) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	if a.adminToken != "" {
		return a.adminToken, nil
	}
	t, err := a.Session(ctx, AdminUser, a.AdminPassword)
	if err != nil {
		return "", err
	}
	a.adminToken = t
	return t, nil
}

// api calls argocd-server's HTTP API with an optional bearer token and returns
// status and body.
func (a *ArgoCD) api(ctx context.Context, method, path, token string, body []byte) (int, []byte, error) {
	return apiCall(ctx, a.ServerAddr, method, path, token, body)
}

func apiCall(ctx context.Context, serverAddr, method, path, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+serverAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// ArgoCLI runs the real argocd CLI as one logged-in user, with that user's
// own config file (as on a person's machine).
type ArgoCLI struct {
	User   string
	Bin    string
	Config string // the user's argocd config file (--config)
	home   string
}

// Login runs `argocd login --plaintext --username --password` with a config
// file of its own for user and returns a CLI that runs as that user.
func (a *ArgoCD) Login(ctx context.Context, user, password string) (*ArgoCLI, error) {
	home, err := os.MkdirTemp(filepath.Join(a.Dir, "clients"), user+"-")
	if err != nil {
		return nil, err
	}
	c := &ArgoCLI{User: user, Bin: resolveBinaries().ArgoCD, Config: filepath.Join(home, "config"), home: home}
	// The password goes on the command line as in Argo CD's docs; the test
	// stack's passwords are throwaway.
	if out, err := c.Run(ctx, "login", a.ServerAddr, "--plaintext", "--username", user, "--password", password, "--name", user); err != nil {
		return nil, fmt.Errorf("argocd login as %s: %w: %s", user, err, out)
	}
	return c, nil
}

// Run runs `argocd <args> --config <user's config>` and returns its combined
// output. A non-zero exit is an *exec.ExitError.
func (c *ArgoCLI) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Bin, append(args, "--config", c.Config)...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "ARGOCD_OPTS=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
