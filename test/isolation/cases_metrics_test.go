package isolation

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/test/stack"
)

// Issue 33, item 6: the metrics name every tenant's namespaces, applications
// and figures. The suite's sidecar serves them as shipped (https, callers
// the API server authorizes for get /metrics).

// metricsAddr is the suite sidecar's metrics address.
var metricsAddr = func() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}()

// A tenant tries every identity it has, and none: its namespace admin's
// ServiceAccount, the namespace's default ServiceAccount, a made-up token, no
// token, plain http. Only the platform's Prometheus (bound to the shipped
// gitops-service-metrics-reader role) reads the metrics.
func TestMetricsRefuseTenants(t *testing.T) {
	ctx := context.Background()
	url := "https://" + metricsAddr + "/metrics"
	cs, err := kube.Clientset()
	require.NoError(t, err)
	ns := "metrics-tenant"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(t, &corev1.ServiceAccount{ObjectMeta: om(ns, "scraper")})
	create(t, &corev1.ServiceAccount{ObjectMeta: om(ns, "builder")})
	create(t, &rbacv1.RoleBinding{ObjectMeta: om(ns, "scraper-admin"),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}}})
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	get := func(hc *http.Client, url string) (int, string) {
		t.Helper()
		var code int
		var body string
		// The server starts with the suite's manager; give it a moment.
		require.Eventually(t, func() bool {
			resp, err := hc.Get(url)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			code, body = resp.StatusCode, string(b)
			return true
		}, wait, tick)
		return code, body
	}
	// controller-runtime's filter answers a token the API server does not
	// know with 500 ("Authentication failed"), no token with 401.
	for name, c := range map[string]struct {
		hc   *http.Client
		url  string
		want []int
	}{
		"no token":                       {stack.MetricsClient(""), url, []int{http.StatusUnauthorized}},
		"a made-up token":                {stack.MetricsClient("made-up"), url, []int{http.StatusUnauthorized, http.StatusInternalServerError}},
		"the namespace admin's":          {stack.MetricsClient(token("scraper")), url, []int{http.StatusForbidden}},
		"another of its ServiceAccounts": {stack.MetricsClient(token("builder")), url, []int{http.StatusForbidden}},
		"plain http":                     {&http.Client{Timeout: 5 * time.Second}, strings.Replace(url, "https://", "http://", 1), []int{http.StatusBadRequest}},
	} {
		code, body := get(c.hc, c.url)
		assert.Contains(t, c.want, code, name)
		assert.NotContains(t, body, "rest_client_requests_total", name)
		assert.NotContains(t, body, "go_goroutines", name)
	}

	prometheus, err := stack.MetricsReaderToken(ctx, kube)
	require.NoError(t, err)
	code, body := get(stack.MetricsClient(prometheus), url)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "rest_client_requests_total")
}
