package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
)

// removeSettingsCommand is the uninstall's subcommand (manifests/uninstall).
const removeSettingsCommand = "remove-argocd-settings"

// bindNameFlags binds the names of Argo CD's ConfigMaps, shared by the
// sidecar and remove-argocd-settings.
func bindNameFlags(fs *flag.FlagSet, n *argocdsettings.Names) {
	fs.StringVar(&n.ArgoCM, "argocd-cm", n.ArgoCM, "Argo CD's main ConfigMap (argocd-cm) in --argocd-namespace. The sidecar's Role (manifests/rbac) names Argo CD's default names: adjust it for others.")
	fs.StringVar(&n.CmdParamsCM, "argocd-cmd-params-cm", n.CmdParamsCM, "Argo CD's ConfigMap of its components' parameters (argocd-cmd-params-cm) in --argocd-namespace.")
	fs.StringVar(&n.RBACCM, "argocd-rbac-cm", n.RBACCM, "Argo CD's RBAC ConfigMap (argocd-rbac-cm) in --argocd-namespace, where the tenants' policy.gitops-service.csv goes too.")
}

// removeArgoCDSettings is `gitops-service remove-argocd-settings`: it
// removes exactly the keys only we own from Argo CD's ConfigMaps and reports
// each; the exit code is 0 when nothing failed (missing ConfigMaps and keys
// are no failure).
func removeArgoCDSettings(args []string) int {
	fs := flag.NewFlagSet(removeSettingsCommand, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: gitops-service %s [flags]\n\nRemoves the keys only the GitOps Service owns (field managers %s and %s) from Argo CD's ConfigMaps; keys someone else also set, and everything else, stay. Scale the sidecar to 0 first, or it writes them again (docs/install.md).\n\n", removeSettingsCommand, argocdsettings.FieldManager, argocdsettings.TenantPolicyFieldManager)
		fs.PrintDefaults()
	}
	names := argocdsettings.DefaultNames()
	namespace := fs.String("argocd-namespace", envOr("ARGOCD_NAMESPACE", envOr("POD_NAMESPACE", inClusterNamespace())), "Namespace of Argo CD's ConfigMaps (env ARGOCD_NAMESPACE; in a cluster the Job's namespace).")
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "A kubeconfig file; default: in-cluster (the Job's ServiceAccount), else $KUBECONFIG.")
	timeout := fs.Duration("timeout", 2*time.Minute, "How long to try.")
	bindNameFlags(fs, &names)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel, c, exit := connect(*namespace, *kubeconfig, *timeout)
	if exit != 0 {
		return exit
	}
	defer cancel()
	removed, err := argocdsettings.Remove(ctx, c, *namespace, names)
	for _, r := range removed {
		switch {
		case r.Absent:
			fmt.Printf("%s/%s: does not exist, nothing to remove\n", *namespace, r.ConfigMap)
		case len(r.Keys)+len(r.Kept) == 0:
			fmt.Printf("%s/%s: no keys of ours\n", *namespace, r.ConfigMap)
		default:
			fmt.Printf("%s/%s: removed %s", *namespace, r.ConfigMap, orNone(r.Keys))
			if len(r.Kept) > 0 {
				fmt.Printf("; kept %s (set by someone else too)", strings.Join(r.Kept, ", "))
			}
			fmt.Println()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func orNone(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// connect is a subcommand's start: the Argo CD namespace must be known, the
// client is of kubeconfig (else in-cluster), the context ends after timeout.
// exit is the process's exit code when it cannot go on (ctx and cancel are
// then nil), else 0.
func connect(namespace, kubeconfig string, timeout time.Duration) (_ context.Context, cancel context.CancelFunc, _ client.Client, exit int) {
	if namespace == "" {
		fmt.Fprintln(os.Stderr, "--argocd-namespace is required outside a cluster")
		return nil, nil, nil, 2
	}
	cfg, err := restConfig(kubeconfig)
	if err == nil {
		var c client.Client
		if c, err = client.New(cfg, client.Options{}); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			return ctx, cancel, c, 0
		}
	}
	fmt.Fprintln(os.Stderr, err)
	return nil, nil, nil, 1
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes configuration (in-cluster, or --kubeconfig): %w", err)
	}
	return cfg, nil
}
