package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/gitops-service/gitops-service/extension/buildinfo"
)

const rootLong = `The GitOps Service from the command line.

Usage:
  %[1]s list                                   deployments and bindings, with their sync and health
  %[1]s status <name>                          a GitOpsDeployment (or binding): conditions, its Argo CD Application
  %[1]s sync <deployment> [--revision R]       sync a manual GitOpsDeployment and follow it; exit 0 when it succeeded
  %[1]s promote <snapshot> --to <env>          promote a Snapshot to one Environment and follow it
  %[1]s promote <snapshot> --auto-from <env>   promote along the Environment graph from <env>
  %[1]s rollback <env> --application <app>     roll an Environment back to the last verified Snapshot (--release: end its hold)
  %[1]s history <env> [--application <app>]    what ran in an Environment: Snapshot, when, who, result, rollbacks
  %[1]s envs                                   the Environments, their order and what each runs
  %[1]s approve <env> --snapshot <snapshot>    approve a Snapshot into an Environment (as yourself)
  %[1]s freeze <env> [--reason R]              stop promotions into an Environment
  %[1]s unfreeze <env>                         let them go on
  %[1]s version                                this CLI's version and the GitOps Service's

Two ways in:
  your kubeconfig   kubectl's flags (-n, --context, --kubeconfig, --as, --request-timeout, ...):
                    exactly what your Kubernetes RBAC allows, as with kubectl.
  an Argo CD login  after ` + "`argocd login`" + ` (argocd's config file and current context), or with
                    --server and --auth-token / $ARGOCD_AUTH_TOKEN (also in $ARGOCD_OPTS): through
                    argocd-server's GitOps Service extension with your Argo CD token, so exactly what
                    Argo CD lets you do (as the GitOps Service panel in the Argo CD UI). Used when an
                    Argo CD flag or variable is set, or when there is no usable kubeconfig.

` + exitCodesHelp

// argoFlagNames are argocd's flags: with any of them we go through Argo CD.
var argoFlagNames = []string{"server", "auth-token", "argocd-context", "grpc-web", "grpc-web-root-path", "plaintext", "insecure", "header", "config"}

func newRootCommand(prog string, streams genericiooptions.IOStreams, tty bool) *cobra.Command {
	root, _ := newRoot(prog, streams, tty)
	return root
}

// newRoot is the command tree and the options its flags fill.
func newRoot(prog string, streams genericiooptions.IOStreams, tty bool) (*cobra.Command, *options) {
	o := &options{prog: prog, streams: streams, tty: tty, kube: genericclioptions.NewConfigFlags(true), argo: newArgoOptions()}
	// --server is Argo CD's here, as for every argocd command; the Kubernetes
	// API server comes from the kubeconfig.
	o.kube.APIServer = nil
	root := &cobra.Command{
		Use:          "argocd-gitops",
		Annotations:  map[string]string{cobra.CommandDisplayNameAnnotation: prog},
		Short:        "The GitOps Service from the command line",
		Long:         fmt.Sprintf(rootLong, prog),
		Version:      buildinfo.String(prog),
		SilenceUsage: true, SilenceErrors: true,
		// No command: the help, and a usage error.
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageError("no command given")
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// --version without cobra's -v (kubectl's -v is verbosity).
	root.Flags().Bool("version", false, "Print the version and exit")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageError("%v; see `%s --help`", err, prog)
	})
	o.kube.AddFlags(root.PersistentFlags())
	o.argo.addFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&o.argocdNamespace, "argocd-namespace", "argocd", "Namespace of Argo CD and the GitOps Service (where version looks for the GitOps Service)")
	root.AddCommand(newListCommand(o), newStatusCommand(o), newSyncCommand(o), newPromoteCommand(o), newRollbackCommand(o), newHistoryCommand(o), newEnvsCommand(o), newApproveCommand(o), newFreezeCommand(o, true), newFreezeCommand(o, false), newVersionCommand(o))
	return root, o
}

// exactArgs says how many arguments a verb takes, in our words.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %d argument(s) (%s), got %d; see `%s %s --help`", cmd.Name(), n, what, len(args), cmd.Root().Annotations[cobra.CommandDisplayNameAnnotation], cmd.Name())
		}
		return nil
	}
}

// withPrinter adds -o to cmd (the formats of cli-runtime's printers, and
// wide where the verb has a table) and checks it before the verb runs.
func withPrinter(o *options, cmd *cobra.Command, wide bool) {
	pf := genericclioptions.NewPrintFlags("").WithTypeSetter(newScheme())
	pf.AddFlags(cmd)
	formats := append([]string{}, pf.AllowedFormats()...)
	if wide {
		formats = append(formats, "wide")
	}
	cmd.Flag("output").Usage = "Output format. One of: (" + strings.Join(formats, ", ") + "); a table by default."
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		o.print, o.output = pf, *pf.OutputFormat
		if tpl := pf.TemplatePrinterFlags.TemplateArgument; o.output == "" && tpl != nil && *tpl != "" {
			o.output = "go-template"
		}
		if o.output == "wide" && !wide {
			return usageError("-o wide: %s has no wider table; use one of %s", cmd.Name(), strings.Join(pf.AllowedFormats(), ", "))
		}
		if o.output != "" && o.output != "wide" {
			if _, err := pf.ToPrinter(); err != nil {
				return usageError("-o %s: %v", o.output, err)
			}
		}
		return run(cmd, args)
	}
}

func addTimeout(o *options, fs *pflag.FlagSet) {
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long to follow the run; after it the run goes on in the cluster and the exit code is 4")
}

// connected runs f with a connection made from the flags.
func connected(o *options, f func(c *cli, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := connect(o)
		if err != nil {
			return err
		}
		return f(c, cmd, args)
	}
}

func newListCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List GitOpsDeployments and SnapshotEnvironmentBindings with their sync and health",
		Long: `List the GitOpsDeployments and SnapshotEnvironmentBindings of a namespace (your context's, -n, or
every namespace you may read with -A), with their sync and health. -o json|yaml prints a List of the
objects with their apiVersion and kind; -o name their kind/name.`,
		Example: `  %[1]s list
  %[1]s list -n team-a -o wide
  %[1]s list -A -l app.kubernetes.io/part-of=shop
  %[1]s list -o jsonpath='{.items[*].metadata.name}'
  %[1]s list --server argocd.example.com --grpc-web     # with your Argo CD login`,
		Args: exactArgs(0, "none"),
		RunE: connected(o, func(c *cli, cmd *cobra.Command, _ []string) error { return c.list(cmd.Context()) }),
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "List in every namespace you may read")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "Label selector (=, ==, !=, in, notin, exists), as kubectl's")
	withPrinter(o, cmd, true)
	return examples(o, cmd)
}

func newStatusCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status <name>",
		Short: "Show a GitOpsDeployment (or SnapshotEnvironmentBinding): conditions and its Argo CD Application",
		Long: `Show a GitOpsDeployment, or else the SnapshotEnvironmentBinding of that name: source, sync,
health, conditions and the name of its Argo CD Application. -o json|yaml prints the object.`,
		Example: `  %[1]s status guestbook
  %[1]s status guestbook -o yaml
  %[1]s status guestbook -o jsonpath='{.status.health.status}'`,
		Args:              exactArgs(1, "the name"),
		ValidArgsFunction: completeNames(o, "deployments"),
		RunE:              connected(o, func(c *cli, cmd *cobra.Command, args []string) error { return c.status(cmd.Context(), args[0]) }),
	}
	withPrinter(o, cmd, false)
	return examples(o, cmd)
}

func newSyncCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync <deployment>",
		Short: "Sync a manual GitOpsDeployment and follow it to its end",
		Long: `Create a GitOpsDeploymentSyncRun for a manual GitOpsDeployment and follow it (by watching it) until it
succeeds, fails or --timeout passes: on a terminal one live line, piped one line per change.
-o prints the finished run.

` + exitCodesHelp,
		Example: `  %[1]s sync guestbook
  %[1]s sync guestbook --revision 1a2b3c --timeout 2m
  %[1]s sync guestbook -o jsonpath='{.status.phase}'`,
		Args:              exactArgs(1, "the GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, "deployments"),
		RunE:              connected(o, func(c *cli, cmd *cobra.Command, args []string) error { return c.sync(cmd.Context(), args[0]) }),
	}
	cmd.Flags().StringVar(&o.revision, "revision", "", "Revision (commit, tag or branch) to sync to; default the deployment's target")
	addTimeout(o, cmd.Flags())
	withPrinter(o, cmd, false)
	return examples(o, cmd)
}

func newPromoteCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote <snapshot> (--to <env> | --auto-from <env> | --preview --all-environments)",
		Short: "Promote a Snapshot to an Environment, or along the Environment graph, and follow it",
		Long: `Create a PromotionRun of a Snapshot, either to one Environment (--to) or along the Environment
graph from one (--auto-from, through AppStudioAutomated Environments), and follow it step by step
until it completes or --timeout passes. -o prints the finished run.

--preview promotes nothing: it shows what promoting to --to would change there (a
PromotionPreview: the manifests Argo CD would render, diffed against the live objects, and a
server-side dry-run on the target cluster), and exits 0 when the promotion would apply cleanly,
1 when the dry-run refused objects. --preview --all-environments previews the Snapshot into every
Environment of the path at once (a release preview), with each component's render hash: an
Environment that requires a preview lets a promotion in only while it renders the same.

` + exitCodesHelp,
		Example: `  %[1]s promote shop-v2 --to staging
  %[1]s promote shop-v2 --auto-from dev --timeout 30m
  %[1]s promote shop-v2 --to prod -o yaml
  %[1]s promote shop-v2 --to prod --preview
  %[1]s promote shop-v2 --preview --all-environments`,
		Args:              exactArgs(1, "the Snapshot"),
		ValidArgsFunction: completeNames(o, "snapshots"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Usage first: nothing is done, no connection needed.
			if o.allEnvironments && (!o.preview || o.to != "" || o.autoFrom != "") {
				return usageError("--all-environments goes with --preview alone: it previews every Environment of the path, not --to or --auto-from")
			}
			if o.allEnvironments {
				return connected(o, func(c *cli, cmd *cobra.Command, args []string) error { return c.preview(cmd.Context(), args[0]) })(cmd, args)
			}
			if (o.to == "") == (o.autoFrom == "") {
				return usageError("promote needs exactly one of --to <environment> (one Environment) or --auto-from <environment> (along the Environment graph)")
			}
			if o.preview && o.to == "" {
				return usageError("--preview needs --to <environment>: a preview is of one Environment")
			}
			return connected(o, func(c *cli, cmd *cobra.Command, args []string) error { return c.promote(cmd.Context(), args[0]) })(cmd, args)
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "The Environment to promote to")
	cmd.Flags().StringVar(&o.autoFrom, "auto-from", "", "Promote along the Environment graph from this Environment")
	cmd.Flags().BoolVar(&o.preview, "preview", false, "Promote nothing: show what promoting to --to would change (diff against the live objects, server-side dry-run)")
	cmd.Flags().BoolVar(&o.allEnvironments, "all-environments", false, "With --preview: preview every Environment of the path at once (a release preview)")
	_ = cmd.RegisterFlagCompletionFunc("to", completeNames(o, "environments"))
	_ = cmd.RegisterFlagCompletionFunc("auto-from", completeNames(o, "environments"))
	addTimeout(o, cmd.Flags())
	withPrinter(o, cmd, false)
	return examples(o, cmd)
}

func newApproveCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approve <environment> --snapshot <snapshot>",
		Short: "Approve a Snapshot into an Environment that asks for approvals",
		Long: `Create a PromotionApproval: you approve one Snapshot into one Environment of the namespace. The
approver is who the cluster authenticates you as (the API server checks it; no one approves as
someone else), with those of your groups the Environment's approval gate names; with an Argo CD
login, the GitOps Service approves for your Argo CD user (argocd:<user>) if the namespace's tenant
mapping names you. A promotion waiting for approvals goes on once it has enough. -o prints the
approval.`,
		Example: `  %[1]s approve prod --snapshot shop-v2
  %[1]s approve prod --snapshot shop-v2 --comment CHG-1234`,
		Args:              exactArgs(1, "the Environment"),
		ValidArgsFunction: completeNames(o, "environments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Usage first: nothing is done, no connection needed.
			if o.snapshot == "" {
				return usageError("approve needs --snapshot <snapshot>: an approval is for one Snapshot into one Environment")
			}
			return connected(o, func(c *cli, cmd *cobra.Command, args []string) error { return c.approve(cmd.Context(), args[0]) })(cmd, args)
		},
	}
	cmd.Flags().StringVar(&o.snapshot, "snapshot", "", "The Snapshot to approve (required)")
	cmd.Flags().StringVar(&o.application, "application", "", "Approve only for this Application's promotions (the Snapshot's)")
	cmd.Flags().StringVar(&o.comment, "comment", "", "Free text kept with the approval, e.g. a change ticket")
	_ = cmd.RegisterFlagCompletionFunc("snapshot", completeNames(o, "snapshots"))
	withPrinter(o, cmd, false)
	return examples(o, cmd)
}

func newFreezeCommand(o *options, frozen bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "freeze <environment> [--reason R]",
		Short: "Freeze an Environment: promotions into it wait until it is unfrozen",
		Long: `Set the freeze switch of an Environment (.spec.gates.freeze): promotions into it wait (their
PromotionRun says so) until ` + "`unfreeze`" + `; rollbacks go on unless the Environment says otherwise.
Needs the right to patch the Environment (or, with an Argo CD login, the tenant mapping naming you).
-o prints the Environment.`,
		Example:           `  %[1]s freeze prod --reason "INC-4711: checkout errors"`,
		Args:              exactArgs(1, "the Environment"),
		ValidArgsFunction: completeNames(o, "environments"),
		RunE:              connected(o, func(c *cli, cmd *cobra.Command, args []string) error { return c.freeze(cmd.Context(), args[0], frozen) }),
	}
	if frozen {
		cmd.Flags().StringVar(&o.reason, "reason", "", "Why, shown to whoever waits")
	} else {
		cmd.Use = "unfreeze <environment>"
		cmd.Short = "Unfreeze an Environment: waiting promotions go on"
		cmd.Long = `Turn the freeze switch of an Environment off: promotions waiting for it go on (unless one of its
freeze windows is open). It lifts a gate: needs the release manager's role (or admin), or, with an
Argo CD login, the user named in the tenant's release managers (namespace annotation
managed-gitops.redhat.com/argocd-release-managers). -o prints the Environment.`
		cmd.Example = `  %[1]s unfreeze prod`
	}
	withPrinter(o, cmd, false)
	return examples(o, cmd)
}

func newEnvsCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "envs",
		Short: "Show the Environments, their order and what each runs",
		Long: `Show the Environment graph of a namespace (roots first, children below their parent) and the
Snapshot each application runs there. -o json|yaml prints the graph (a list of nodes with name,
parentEnvironment, deploymentStrategy, runs and children): a view, not API objects.`,
		Example: `  %[1]s envs
  %[1]s envs -n team-a -o json`,
		Args: exactArgs(0, "none"),
		RunE: connected(o, func(c *cli, cmd *cobra.Command, _ []string) error { return c.envs(cmd.Context()) }),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format. One of: (json, yaml); a tree by default.")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "Label selector of the Environments")
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		switch o.output {
		case "", "json", "yaml":
			return run(cmd, args)
		}
		return usageError("-o %s: envs prints its graph as json or yaml (or a tree)", o.output)
	}
	return examples(o, cmd)
}

func newVersionCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print this CLI's version and the GitOps Service's",
		Long: `Print this CLI's version, and the version of the GitOps Service when it can be reached:
with a kubeconfig, from its gitops_service_build_info metric through the API server's service proxy
(service gitops-service-metrics in --argocd-namespace; needs get on services/proxy there); with an
Argo CD login, from the Gitops-Service-Version header of its Argo CD extension's answers
(needs one Application of the GitOps Service you may see). --client skips the service.`,
		Example: `  %[1]s version
  %[1]s version --client
  %[1]s version -o json`,
		Args: exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, _ []string) error { return versionCmd(cmd.Context(), o) },
	}
	cmd.Flags().BoolVar(&o.clientOnly, "client", false, "Print only the client's version")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format. One of: (json, yaml); text by default.")
	return examples(o, cmd)
}

// examples fills the program name into the examples.
func examples(o *options, cmd *cobra.Command) *cobra.Command {
	cmd.Example = fmt.Sprintf(cmd.Example, o.prog)
	return cmd
}

// completeNames completes names of kind (deployments, snapshots,
// environments) in the namespace (through the kubeconfig only).
func completeNames(o *options, kind string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if kind != "environments" && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := connect(o)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, _ := c.be.names(cmd.Context(), kind)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
