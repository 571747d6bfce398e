// Package targetcluster connects to a tenant's target cluster as Argo CD
// deploys there: with the credentials of the Argo CD cluster Secret made for
// the tenant's own GitOpsDeploymentManagedEnvironment of that server (never
// a Secret of another tenant or project, never the sidecar's own
// credentials), through the egress check of API servers. A PromotionPreview
// and the verification of a promotion's live state read through it.
package targetcluster

import (
	"context"
	"encoding/json"
	"net"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mg "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Target names the cluster: the Argo CD destination server of an
// Application of project, deployed for the tenant of Namespace.
type Target struct {
	Namespace, Server, Project string
}

// Config is the rest.Config for t, or nil when the namespace has no
// ManagedEnvironment of that server whose Argo CD cluster Secret (in
// argoNamespace) is ours, of t.Project and readable: not ready. The
// caller sets what its clients need beyond the credentials (a client that
// follows no redirect: the token would go along).
func Config(ctx context.Context, c client.Reader, argoNamespace string, t Target, e *egress.Policy, timeout time.Duration, userAgent string) (*rest.Config, error) {
	var mes mg.GitOpsDeploymentManagedEnvironmentList
	if err := c.List(ctx, &mes, client.InNamespace(t.Namespace)); err != nil {
		return nil, err
	}
	for _, me := range mes.Items {
		if argocd.ClusterServer(me.Spec.APIURL, string(me.UID)) != t.Server {
			continue
		}
		secret := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: argoNamespace, Name: argocd.ClusterSecretName(string(me.UID))}, secret)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err != nil || !ownership.IsOwnedBy(secret.Labels, ownership.KindManagedEnvironment, string(me.UID)) || string(secret.Data["project"]) != t.Project {
			return nil, nil
		}
		var cc argov1alpha1.ClusterConfig
		if err := json.Unmarshal(secret.Data["config"], &cc); err != nil {
			return nil, nil
		}
		cfg := &rest.Config{Host: me.Spec.APIURL, BearerToken: cc.BearerToken, Timeout: timeout, UserAgent: userAgent, QPS: 20, Burst: 40,
			Dial: e.ForAPIServers().DialContext(&net.Dialer{Timeout: timeout})}
		cfg.Insecure = cc.TLSClientConfig.Insecure
		if !cfg.Insecure {
			cfg.CAData = append([]byte(nil), cc.TLSClientConfig.CAData...)
		}
		return cfg, nil
	}
	return nil, nil
}
