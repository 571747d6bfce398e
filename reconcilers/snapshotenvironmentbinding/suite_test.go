//go:build !unit

package snapshotenvironmentbinding_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = stack.SuiteArgoNamespace

// k8s is a client of the real API server the sidecar runs against (no Argo CD:
// a test plays the applicationset-controller where it needs one).
var k8s client.Client

// generatorURL and generatorToken reach the sidecar's plugin generator, as
// Argo CD's applicationset-controller does.
var generatorURL, generatorToken string

func TestMain(m *testing.M) {
	addr, tokenFile, err := generatorEndpoint()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(filepath.Dir(tokenFile))
	code := stack.RunSuite(m, "snapshotenvironmentbinding", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}, func(o *sidecar.Options) { o.GeneratorAddr, o.GeneratorTokenFile = addr, tokenFile })
	os.Exit(code)
}

// generatorEndpoint picks a free local address for the plugin generator and
// writes its token.
func generatorEndpoint() (string, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", "", err
	}
	dir, err := os.MkdirTemp("", "seb-suite-")
	if err != nil {
		return "", "", err
	}
	generatorURL, generatorToken = "http://"+addr, "generator-token-"+rand.String(12)
	file := filepath.Join(dir, "token")
	return addr, file, os.WriteFile(file, []byte(generatorToken), 0o600)
}
