package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	generator "github.com/gitops-service/gitops-service/applicationset-generator"
	"github.com/gitops-service/gitops-service/extension/buildinfo"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/metrics"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
	"github.com/gitops-service/gitops-service/reconcilers/subscription"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// httpRunnable serves one of the sidecar's HTTP APIs. It runs on every replica
// (not only the leader): Argo CD may reach any of them.
type httpRunnable struct {
	// name is the logger's and the readiness check's; what says what it serves.
	name, what, addr string
	handler          http.Handler
	// listening is set once the port is bound: part of the sidecar's
	// readiness, so Argo CD is not pointed at a port that refuses.
	listening atomic.Bool
	// tokenFile must hold the token (a mounted Secret) for the sidecar to be
	// ready: without it every request is refused, and a pod that is not
	// ready shows the operator what is missing; howTo says what to do.
	tokenFile, howTo string
	// missing is whether the last check found no token (logged on change only).
	missing atomic.Bool
	// event, when set, records an Event on the sidecar's Pod, so that
	// `kubectl describe pod` names the missing Secret too.
	event *kernel.ObjectEvents
}

// Reasons of the Events on the sidecar's Pod about a server's token.
const (
	ReasonTokenMissing = "TokenSecretMissing"
	ReasonTokenFound   = "TokenSecretFound"
)

// podEvents records Events on the sidecar's own Pod; nil when the Pod is
// unknown (POD_NAME not set, e.g. outside a cluster).
func podEvents(rec record.EventRecorder, pod *corev1.ObjectReference) *kernel.ObjectEvents {
	if pod == nil || pod.Name == "" {
		return nil
	}
	return &kernel.ObjectEvents{Recorder: rec, Object: pod}
}

// check is its readiness check.
func (g *httpRunnable) check(*http.Request) error {
	if !g.listening.Load() {
		return fmt.Errorf("the %s is not listening yet", g.what)
	}
	if g.tokenFile == "" {
		return nil
	}
	b, err := os.ReadFile(g.tokenFile)
	if err == nil && len(bytes.TrimSpace(b)) == 0 {
		err = errors.New("the file is empty")
	}
	if err != nil {
		err = fmt.Errorf("the %s has no token (%v): %s", g.what, err, g.howTo)
		if !g.missing.Swap(true) {
			ctrl.Log.WithName(g.name).Error(err, "not ready", "file", g.tokenFile)
			g.event.Warning(ReasonTokenMissing, err.Error())
		}
		return err
	}
	if g.missing.Swap(false) {
		ctrl.Log.WithName(g.name).Info("token found: ready", "file", g.tokenFile)
		g.event.Normal(ReasonTokenFound, fmt.Sprintf("the %s has its token (%s): ready", g.what, g.tokenFile))
	}
	return nil
}

var _ manager.LeaderElectionRunnable = (*httpRunnable)(nil)

func (g *httpRunnable) NeedLeaderElection() bool { return false }

func (g *httpRunnable) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		return err
	}
	g.listening.Store(true)
	srv := &http.Server{Handler: g.handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	ctrl.Log.WithName(g.name).Info("serving the "+g.what, "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// tokenFrom reads a token file on every request, so a rotated Secret takes
// effect without a restart; without the file every request is refused.
func tokenFrom(log logr.Logger, file, howTo string) func() []byte {
	return func() []byte {
		b, err := os.ReadFile(file)
		if err != nil {
			log.Error(err, "cannot read the token, so every request is refused: "+howTo, "file", file)
			return nil
		}
		return bytes.TrimSpace(b)
	}
}

func generatorServer(o Options, c, uncached client.Reader, shard *sharding.Shard) *httpRunnable {
	const howTo = `create Secret gitops-service-generator (key "token", labelled app.kubernetes.io/part-of=argocd; README "Install"), the one the plugin ConfigMap names, and mount it at this file`
	s := &generator.Server{
		Token:  tokenFrom(ctrl.Log.WithName("generator"), o.GeneratorTokenFile, howTo),
		Params: generator.Served(generator.ServerParams(c, uncached, o.ArgoNamespace, o.AllowFileRepositories), servesOf(shard)),
	}
	return &httpRunnable{name: "generator", what: "ApplicationSet plugin generator", addr: o.GeneratorAddr, handler: metrics.InstrumentHandler("generator", s.Handler()),
		tokenFile: o.GeneratorTokenFile, howTo: howTo}
}

// The panel's actions (ui-proxy checks the tenant mapping names the user):
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionapprovals,verbs=create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments,verbs=patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionhistories,verbs=patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionpreviews,verbs=create
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentsyncruns,verbs=create

func uiProxyServer(o Options, c client.Client, shard *sharding.Shard) *httpRunnable {
	const howTo = `create Secret gitops-service-ui-proxy (key "token", labelled app.kubernetes.io/part-of=argocd; README "Install") and mount it at this file`
	s := &uiproxy.Server{
		Client: c, Writer: c, ArgoNamespace: o.ArgoNamespace, Diffs: previewDiffs, Version: buildinfo.Version,
		Token:  tokenFrom(ctrl.Log.WithName("ui-proxy"), o.UIProxyTokenFile, howTo),
		Serves: servesOf(shard),
	}
	return &httpRunnable{name: "ui-proxy", what: "Argo CD proxy extension backend (the UI panel's API)", addr: o.UIProxyAddr, handler: metrics.InstrumentHandler("ui-proxy", s.Handler()),
		tokenFile: o.UIProxyTokenFile, howTo: howTo}
}

// subscriptionWebhookServer receives pushes for SnapshotSubscriptions; each
// is authenticated by the subscription's own token, so the server has none.
// Its own port: it is the one server exposed to registries and git servers
// outside the cluster, the generator and the ui-proxy never are.
func subscriptionWebhookServer(o Options, mgr ctrl.Manager, shard *sharding.Shard) *httpRunnable {
	h := &subscription.Webhook{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Serves: servesOf(shard)}
	mux := http.NewServeMux()
	mux.Handle(subscription.WebhookPath, h)
	return &httpRunnable{name: "subscription-webhook", what: "SnapshotSubscription webhook", addr: o.SubscriptionWebhookAddr,
		handler: metrics.InstrumentHandler("subscription-webhook", mux)}
}

// servesOf is the servers' check of a tenant namespace; nil with one instance.
func servesOf(shard *sharding.Shard) func(context.Context, string) bool {
	if shard == nil {
		return nil
	}
	return shard.Serves
}
