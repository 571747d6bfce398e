package stack

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// checkAccounts runs inside TestRealStack once Application stack-test exists:
// argocd-server refuses anonymous calls, the admin sees everything, a new
// local account logs in with the real CLI and sees nothing until a policy
// (changed live) grants it the Application.
func checkAccounts(ctx context.Context, t *testing.T, argo *ArgoCD) {
	t.Helper()
	status, _, err := argo.api(ctx, http.MethodGet, "/api/v1/applications", "", nil)
	if err != nil || status != http.StatusUnauthorized {
		t.Fatalf("anonymous application list: %d %v, want 401", status, err)
	}
	token, err := argo.AdminSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	status, body, err := argo.api(ctx, http.MethodGet, "/api/v1/applications", token, nil)
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `"stack-test"`) {
		t.Fatalf("admin application list: %d %v %.300s", status, err, body)
	}
	if _, err := argo.Session(ctx, AdminUser, "wrong"); err == nil {
		t.Fatal("admin logged in with a wrong password")
	}

	if err := argo.CreateAccount(ctx, "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}
	alice, err := argo.Login(ctx, "alice", "alice-password")
	if err != nil {
		t.Fatal(err)
	}
	// policy.default is '' as in Argo CD: a fresh account sees nothing.
	out, err := alice.Run(ctx, "app", "list", "-o", "name")
	if err != nil || strings.Contains(out, "stack-test") {
		t.Fatalf("alice without a policy: app list = %v %q, want an empty list", err, out)
	}
	if out, err := alice.Run(ctx, "app", "get", "stack-test"); err == nil || !strings.Contains(out, "PermissionDenied") {
		t.Fatalf("alice without a policy: app get = %v %q, want PermissionDenied", err, out)
	}
	if err := argo.SetRBAC(ctx, map[string]string{"policy.csv": "p, alice, applications, get, default/stack-test, allow\n"}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "alice sees stack-test after the policy change", func(ctx context.Context) (bool, error) {
		out, err := alice.Run(ctx, "app", "list", "-o", "name")
		return err == nil && strings.Contains(out, "stack-test"), nil
	})
}
