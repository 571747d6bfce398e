// Command argocd-gitops is the command line of the GitOps Service. It works
// standalone, as `argocd gitops` (Argo CD >= 3.1 runs argocd-<name> from PATH)
// and as `kubectl gitops` (through a kubectl-gitops link). It talks to the
// Kubernetes API with the user's own kubeconfig and namespace, so it can never
// do more than the user's RBAC allows.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	managedgitopsv1alpha1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/buildinfo"
)

const usage = `%[1]s: the GitOps Service from the command line (your kubeconfig, your namespace).

Usage:
  %[1]s list                                   deployments and bindings, with their sync and health
  %[1]s status <name>                          a GitOpsDeployment (or binding): conditions, its Argo CD Application
  %[1]s sync <deployment> [--revision R]       sync a manual GitOpsDeployment and follow it; exit 0 when it succeeded
  %[1]s promote <snapshot> --to <env>          promote a Snapshot to one Environment and follow it
  %[1]s promote <snapshot> --auto-from <env>   promote along the Environment graph from <env>
  %[1]s envs                                   the Environments, their order and what each runs

Flags (before or after the command):
  -n, --namespace NS   namespace (default: your kubeconfig context's)
  --kubeconfig FILE    kubeconfig (default: $KUBECONFIG or ~/.kube/config)
  --context NAME       kubeconfig context
  -o, --output FMT     json or yaml instead of text
  --timeout D          how long sync/promote follow (default 10m)
  --version            print the version and exit
`

// exitError carries an exit code; its message is printed unless empty.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	name := filepath.Base(os.Args[0])
	switch {
	case strings.HasPrefix(name, "kubectl-"):
		name = "kubectl gitops"
	case strings.HasPrefix(name, "argocd-"):
		// Argo CD runs plugins as argocd-<name>; people call it either way.
		name = "argocd gitops"
	}
	err := run(ctx, name, os.Args[1:], os.Stdout)
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(os.Stderr, "error: %s\n", msg)
	}
	os.Exit(code)
}

// options are the global flags.
type options struct {
	namespace, kubeconfig, kubeContext, output string
	revision, to, autoFrom                     string
	timeout                                    time.Duration
}

// parse reads flags anywhere among args (as kubectl and argocd do) and returns
// the positional arguments.
func parse(prog string, args []string, o *options) ([]string, error) {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, n := range []string{"n", "namespace"} {
		fs.StringVar(&o.namespace, n, "", "")
	}
	for _, n := range []string{"o", "output"} {
		fs.StringVar(&o.output, n, "", "")
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&o.kubeContext, "context", "", "")
	fs.StringVar(&o.revision, "revision", "", "")
	fs.StringVar(&o.to, "to", "", "")
	fs.StringVar(&o.autoFrom, "auto-from", "", "")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "")
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, &exitError{code: 2, msg: fmt.Sprintf("%v; see `%s --help`", err, prog)}
		}
		args = fs.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	switch o.output {
	case "", "json", "yaml":
	default:
		return nil, &exitError{code: 2, msg: fmt.Sprintf("--output %q: use json or yaml (or nothing for text)", o.output)}
	}
	return pos, nil
}

func run(ctx context.Context, prog string, args []string, out io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "help" {
			fmt.Fprintf(out, usage, prog)
			return nil
		}
		if a == "--version" {
			fmt.Fprintln(out, buildinfo.String(prog))
			return nil
		}
	}
	var o options
	pos, err := parse(prog, args, &o)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fmt.Fprintf(out, usage, prog)
		return &exitError{code: 2, msg: "no command given"}
	}
	want := map[string]int{"list": 0, "status": 1, "sync": 1, "promote": 1, "envs": 0}
	n, known := want[pos[0]]
	if !known {
		return &exitError{code: 2, msg: fmt.Sprintf("unknown command %q; see `%s --help`", pos[0], prog)}
	}
	if len(pos)-1 != n {
		return &exitError{code: 2, msg: fmt.Sprintf("%s takes %d argument(s), got %d; see `%s --help`", pos[0], n, len(pos)-1, prog)}
	}
	c, err := connect(&o)
	if err != nil {
		return err
	}
	c.prog, c.out = prog, out
	switch pos[0] {
	case "list":
		return c.list(ctx)
	case "status":
		return c.status(ctx, pos[1])
	case "sync":
		return c.sync(ctx, pos[1])
	case "promote":
		return c.promote(ctx, pos[1])
	default:
		return c.envs(ctx)
	}
}

// cli is one invocation: the user's client and namespace.
type cli struct {
	client.Client
	opts      options
	namespace string
	prog      string
	out       io.Writer
}

func connect(o *options) (*cli, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rest, err := cfg.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no usable kubeconfig (%v): log in to your cluster first, or point --kubeconfig or $KUBECONFIG at your kubeconfig", err)
	}
	ns := o.namespace
	if ns == "" {
		if ns, _, err = cfg.Namespace(); err != nil {
			return nil, fmt.Errorf("reading the namespace of your kubeconfig context: %v; pass -n <namespace>", err)
		}
	}
	s := runtime.NewScheme()
	utilruntime.Must(managedgitopsv1alpha1.AddToScheme(s))
	utilruntime.Must(appstudiov1alpha1.AddToScheme(s))
	rest.UserAgent = "argocd-gitops"
	c, err := client.New(rest, client.Options{Scheme: s})
	if err != nil {
		return nil, explain(err, "", ns)
	}
	return &cli{Client: c, opts: *o, namespace: ns}, nil
}
