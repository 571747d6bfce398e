package stack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The platform's Prometheus as docs/metrics.md has the admin set it up: a
// ServiceAccount bound to ClusterRole gitops-service-metrics-reader.
const (
	MetricsReaderRole      = "gitops-service-metrics-reader"
	PrometheusNamespace    = "monitoring"
	PrometheusSA           = "prometheus"
	prometheusRoleBindName = "gitops-service-metrics-reader-prometheus"
)

// MetricsReaderToken is a token of the platform's Prometheus: it applies the
// shipped ClusterRole (manifests/rbac/metrics_reader.yaml) and binds it to
// ServiceAccount monitoring/prometheus, as docs/metrics.md says.
func MetricsReaderToken(ctx context.Context, k *Kube) (string, error) {
	cs, err := k.Clientset()
	if err != nil {
		return "", err
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(filepath.Join(root, "manifests", "rbac", "metrics_reader.yaml"))
	if err != nil {
		return "", err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return "", err
	}
	if role.Name != MetricsReaderRole {
		return "", fmt.Errorf("manifests/rbac/metrics_reader.yaml ships %q, not %s", role.Name, MetricsReaderRole)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PrometheusNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: PrometheusNamespace, Name: PrometheusSA}}
	if _, err := cs.CoreV1().ServiceAccounts(PrometheusNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: prometheusRoleBindName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: PrometheusNamespace, Name: PrometheusSA}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(PrometheusNamespace).CreateToken(ctx, PrometheusSA, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// MetricsClient scrapes the sidecar's https metrics endpoint (its certificate
// is self-signed) with token as its bearer token; "" sends none.
func MetricsClient(token string) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the sidecar's self-signed certificate
	return &http.Client{Timeout: 10 * time.Second, Transport: bearer{token: token, next: tr}}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// ScrapeMetrics gets the sidecar's /metrics as the platform's Prometheus.
func (s *Sidecar) ScrapeMetrics(ctx context.Context) (*http.Response, error) {
	if s.metrics == nil {
		token, err := MetricsReaderToken(ctx, s.kube)
		if err != nil {
			return nil, fmt.Errorf("the platform's Prometheus identity: %w", err)
		}
		s.metrics = MetricsClient(token)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.MetricsURL, nil)
	if err != nil {
		return nil, err
	}
	return s.metrics.Do(req)
}
