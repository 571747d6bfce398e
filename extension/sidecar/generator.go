package sidecar

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	generator "github.com/gitops-service/gitops-service/applicationset-generator"
)

// generatorRunnable serves the ApplicationSet plugin generator. It runs on every
// replica (not only the leader): Argo CD may reach any of them.
type generatorRunnable struct {
	addr   string
	server *generator.Server
}

var _ manager.LeaderElectionRunnable = (*generatorRunnable)(nil)

func (g *generatorRunnable) NeedLeaderElection() bool { return false }

func (g *generatorRunnable) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: g.server.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	ctrl.Log.WithName("generator").Info("serving the ApplicationSet plugin generator", "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func generatorServer(o Options, c client.Reader) *generatorRunnable {
	log := ctrl.Log.WithName("generator")
	return &generatorRunnable{addr: o.GeneratorAddr, server: &generator.Server{
		// Read on every request so a rotated Secret takes effect without a restart.
		Token: func() []byte {
			b, err := os.ReadFile(o.GeneratorTokenFile)
			if err != nil {
				log.Error(err, "cannot read the generator token, so every request is refused: create the Secret named by the plugin ConfigMap (key \"token\") and mount it at this file", "file", o.GeneratorTokenFile)
				return nil
			}
			return bytes.TrimSpace(b)
		},
		Params: generator.ServerParams(c),
	}}
}
