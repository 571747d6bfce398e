// Command argocd-gitops is the command line of the GitOps Service. It works
// standalone, as `argocd gitops` (Argo CD >= 3.1 runs argocd-<name> from PATH)
// and as `kubectl gitops` (through a kubectl-gitops link). It talks either to
// the Kubernetes API with the user's own kubeconfig (kubectl's flags), or,
// with an Argo CD login, to argocd-server's proxy extension with the user's
// Argo CD token; either way it can never do more than the user may.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	managedgitopsv1alpha1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/buildinfo"
)

// Exit codes, documented in the root command's help and the README.
const (
	exitOK = 0
	// exitFailed: the sync or promotion ran and did not succeed, or another
	// error (not found, cannot reach the cluster or Argo CD).
	exitFailed = 1
	// exitUsage: bad flags or arguments; nothing was done.
	exitUsage = 2
	// exitRefused: the cluster or Argo CD denied the request (RBAC, no
	// session), or the GitOps Service refused the run before it started.
	exitRefused = 3
	// exitTimedOut: --timeout passed while following; the run goes on.
	exitTimedOut = 4
)

const exitCodesHelp = `Exit codes:
  0  success (a sync or promotion followed to its end succeeded)
  1  failed: the sync or promotion did not succeed, or another error (not found, cannot connect)
  2  usage: bad flags or arguments, nothing was done
  3  refused: the cluster or Argo CD denied you (RBAC, no or expired login), or the GitOps Service
     refused the run before it started (e.g. an automated deployment, a revision it does not accept)
  4  timed out: --timeout passed while following; the run goes on in the cluster`

// exitError carries an exit code; its message is printed unless empty.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := exitCode(run(ctx, progName(os.Args[0]), os.Args[1:], streams, term.IsTerminal(int(os.Stdout.Fd()))), streams.ErrOut)
	stop()
	os.Exit(code)
}

// exitCode prints err (if it says something) and returns its exit code.
func exitCode(err error, errOut io.Writer) int {
	if err == nil {
		return exitOK
	}
	code := exitFailed
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(errOut, "error: %s\n", msg)
	}
	return code
}

// progName is how the user called us.
func progName(arg0 string) string {
	name := filepath.Base(arg0)
	switch {
	case strings.HasPrefix(name, "kubectl-"):
		return "kubectl gitops"
	case strings.HasPrefix(name, "argocd-"):
		// Argo CD runs plugins as argocd-<name>; people call it either way.
		return "argocd gitops"
	}
	return name
}

// run executes one command line; its error carries the exit code.
func run(ctx context.Context, prog string, args []string, streams genericiooptions.IOStreams, tty bool) error {
	root := newRootCommand(prog, streams, tty)
	// cobra reads os.Args when given nil.
	root.SetArgs(append([]string{}, args...))
	err := root.ExecuteContext(ctx)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) && isCobraUsageError(err) {
		return usageError("%v; see `%s --help`", err, prog)
	}
	return err
}

// isCobraUsageError: cobra returns plain errors for bad flags and arguments
// (flag errors go through SetFlagErrorFunc below, this catches the rest).
func isCobraUsageError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires ", "invalid argument", "flag needs an argument", "bad flag syntax"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// options are the flags of one invocation.
type options struct {
	prog string
	// kube are kubectl's flags (-n, --context, --as, --request-timeout, ...).
	kube *genericclioptions.ConfigFlags
	// argo are argocd's flags (--server, --auth-token, --grpc-web, ...).
	argo *argoOptions
	// print is the verb's -o; output its value.
	print  *genericclioptions.PrintFlags
	output string

	allNamespaces bool
	selector      string
	revision      string
	to, autoFrom  string
	// approve, freeze and rollback
	snapshot, application, comment, reason string
	release, preview                       bool
	allEnvironments                        bool
	timeout                                time.Duration
	argocdNamespace                        string
	clientOnly                             bool
	streams                                genericiooptions.IOStreams
	tty                                    bool
}

// newScheme knows our API types (and nothing else we print).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(managedgitopsv1alpha1.AddToScheme(s))
	utilruntime.Must(appstudiov1alpha1.AddToScheme(s))
	return s
}

// cli is one invocation: the verbs over the way in the flags chose.
type cli struct {
	be        backend
	opts      *options
	namespace string
	prog      string
	out       io.Writer
	scheme    *runtime.Scheme
}

// connect picks the way in: an Argo CD login when argocd's flags, environment
// or (without a usable kubeconfig) its config file say so, else the
// kubeconfig.
func connect(o *options) (*cli, error) {
	c := &cli{opts: o, prog: o.prog, out: o.streams.Out, scheme: newScheme()}
	kubeErr := error(nil)
	var restCfg *rest.Config
	if !o.argo.explicit() {
		restCfg, kubeErr = kubeConfig(o.kube)
		if kubeErr == nil {
			return c, c.connectKube(restCfg)
		}
	}
	a, err := o.argo.client(o.streams.ErrOut)
	if err != nil {
		if kubeErr != nil && errors.Is(err, errNoArgoLogin) {
			return nil, fmt.Errorf("no usable kubeconfig (%v) and no Argo CD login: log in to your cluster, or run `argocd login <server>` (or pass --server and --auth-token)", kubeErr)
		}
		return nil, err
	}
	if o.kube.Namespace != nil {
		c.namespace = *o.kube.Namespace
	}
	if o.allNamespaces {
		c.namespace = ""
	}
	c.be = newArgoBackend(a, c.namespace, o.streams.ErrOut)
	return c, nil
}

// kubeConfig is the kubeconfig's client config; an error when there is no
// kubeconfig at all (cli-runtime would then try localhost:8080, as kubectl
// does) and we are not in a pod.
func kubeConfig(f *genericclioptions.ConfigFlags) (*rest.Config, error) {
	raw, err := f.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, err
	}
	if len(raw.Contexts) == 0 && (f.Context == nil || *f.Context == "") {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
		return nil, errors.New("no kubeconfig found ($KUBECONFIG, ~/.kube/config or --kubeconfig)")
	}
	return f.ToRESTConfig()
}

func (c *cli) connectKube(restCfg *rest.Config) error {
	o := c.opts
	ns, _, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return fmt.Errorf("reading the namespace of your kubeconfig context: %v; pass -n <namespace>", err)
	}
	if o.allNamespaces {
		ns = ""
	}
	restCfg.UserAgent = "argocd-gitops/" + buildinfo.Version
	cl, err := client.NewWithWatch(restCfg, client.Options{Scheme: c.scheme})
	if err != nil {
		return explain(err, "", ns)
	}
	c.namespace = ns
	c.be = &kubeBackend{WithWatch: cl, rest: restCfg, namespace: ns, argocdNamespace: o.argocdNamespace}
	return nil
}

// text says whether output is for people (a table), not -o.
func (c *cli) text() bool { return c.opts.output == "" || c.opts.output == "wide" }

func (c *cli) wide() bool { return c.opts.output == "wide" }
