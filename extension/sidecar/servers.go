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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	generator "github.com/gitops-service/gitops-service/applicationset-generator"
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
}

// check is its readiness check.
func (g *httpRunnable) check(*http.Request) error {
	if !g.listening.Load() {
		return fmt.Errorf("the %s is not listening yet", g.what)
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

func generatorServer(o Options, c, api client.Reader) *httpRunnable {
	s := &generator.Server{
		Token: tokenFrom(ctrl.Log.WithName("generator"), o.GeneratorTokenFile,
			`create the Secret named by the plugin ConfigMap (key "token") and mount it at this file`),
		Params: generator.ServerParams(c, api, o.ArgoNamespace),
	}
	return &httpRunnable{name: "generator", what: "ApplicationSet plugin generator", addr: o.GeneratorAddr, handler: s.Handler()}
}

// The panel's actions (ui-proxy checks the tenant mapping names the user):
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=create
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentsyncruns,verbs=create

func uiProxyServer(o Options, c client.Client) *httpRunnable {
	s := &uiproxy.Server{
		Client: c, Writer: c, ArgoNamespace: o.ArgoNamespace,
		Token: tokenFrom(ctrl.Log.WithName("ui-proxy"), o.UIProxyTokenFile,
			"mount the Secret whose key argocd-secret's extension header refers to at this file (see README)"),
	}
	return &httpRunnable{name: "ui-proxy", what: "Argo CD proxy extension backend (the UI panel's API)", addr: o.UIProxyAddr, handler: s.Handler()}
}
