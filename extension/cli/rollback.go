package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func newRollbackCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollback <environment> --application <app> [--release]",
		Short: "Roll an Environment back to the last Snapshot verified there, or release the hold a rollback put",
		Long: `Roll an application's Environment back: create a PromotionRun with manualPromotion.rollback for the Snapshot the
Environment deploys now, and follow it. The binding points at the last other Snapshot verified there
again, the rolled-back Snapshot is rejected for the application (automated promotion never picks it
again; a manual promotion of it needs spec.manualPromotion.force) and automated promotion out of the
Environment holds until released. --release releases that hold (sets the PromotionHistory's
spec.releasedAt) and exits. With an Argo CD login both go through the GitOps Service's panel
actions on a binding of the application, for a user the tenant mapping names; --release also
needs the user named in the tenant's release managers (namespace annotation
managed-gitops.redhat.com/argocd-release-managers), as with kubectl it needs the release manager's role.

` + exitCodesHelp,
		Example: `  %[1]s rollback prod --application shop
  %[1]s rollback prod --application shop --release`,
		Args:              exactArgs(1, "the Environment"),
		ValidArgsFunction: completeNames(o, "environments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.application == "" {
				return usageError("rollback needs --application <app>")
			}
			return connected(o, func(c *cli, cmd *cobra.Command, args []string) error {
				if o.release {
					return c.release(cmd.Context(), args[0])
				}
				return c.rollback(cmd.Context(), args[0])
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&o.application, "application", "", "The application to roll back")
	cmd.Flags().BoolVar(&o.release, "release", false, "Release the hold on automated promotion out of the Environment instead")
	addTimeout(o, cmd.Flags())
	withPrinter(o, cmd, false)
	return examples(o, cmd)
}

func (c *cli) rollback(ctx context.Context, env string) error {
	run, err := c.be.rollback(ctx, c.opts.application, env)
	if err != nil {
		return err
	}
	return c.followPromotion(ctx, run, fmt.Sprintf("PromotionRun %s created: rollback of %s out of %s (application %s)", run.Name, run.Spec.Snapshot, env, c.opts.application))
}

func (c *cli) release(ctx context.Context, env string) error {
	hs, err := c.be.histories(ctx, env, c.opts.application)
	if err != nil {
		return err
	}
	if len(hs) == 0 || !hs[0].Held() {
		_, err := fmt.Fprintf(c.out, "Environment %s of application %s is not held\n", env, c.opts.application)
		return err
	}
	held := hs[0].Status.Hold
	h, err := c.be.release(ctx, &hs[0])
	if err != nil {
		return err
	}
	if done, err := c.printObjects(false, h); done {
		return err
	}
	_, err = fmt.Fprintf(c.out, "released the hold on automated promotion out of %s (rollback %s of %s)\n", env, held.PromotionRun, held.Snapshot)
	return err
}

func newHistoryCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history <environment> [--application <app>]",
		Short: "Show what ran in an Environment: Snapshots, when, who, result, rollbacks",
		Long: `Show the history of an Environment, per application (the PromotionHistories the GitOps Service
keeps; they outlive the PromotionRuns): each promotion or rollback with its Snapshot, when it ended,
who promoted and approved it, its result and whether it was rolled back; then the rejected Snapshots
and the hold on automated promotion out of the Environment. -o prints the PromotionHistories.
With an Argo CD login the GitOps Service answers for a user the tenant mapping names, from the
namespace of a binding Argo CD shows them.`,
		Example: `  %[1]s history prod
  %[1]s history prod --application shop -o yaml`,
		Args:              exactArgs(1, "the Environment"),
		ValidArgsFunction: completeNames(o, "environments"),
		RunE:              connected(o, func(c *cli, cmd *cobra.Command, args []string) error { return c.history(cmd.Context(), args[0]) }),
	}
	cmd.Flags().StringVar(&o.application, "application", "", "Only this application")
	withPrinter(o, cmd, false)
	return examples(o, cmd)
}

func (c *cli) history(ctx context.Context, env string) error {
	shown, err := c.be.histories(ctx, env, c.opts.application)
	if err != nil {
		return err
	}
	objs := make([]client.Object, len(shown))
	for i := range shown {
		objs[i] = &shown[i]
	}
	if done, err := c.printObjects(true, objs...); done {
		return err
	}
	if len(shown) == 0 {
		_, err := fmt.Fprintf(c.out, "nothing ran in Environment %s yet\n", env)
		return err
	}
	return writeHistory(c.out, shown)
}

// writeHistory writes the histories as a table, newest first per application.
func writeHistory(out io.Writer, hs []as.PromotionHistory) error {
	slices.SortFunc(hs, func(a, b as.PromotionHistory) int { return strings.Compare(a.Spec.Application, b.Spec.Application) })
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "APPLICATION\tCOMPLETED\tKIND\tSNAPSHOT\tRESULT\tPROMOTED-BY\tAPPROVED-BY\tROLLED-BACK-BY\tRUN")
	for _, h := range hs {
		for i := len(h.Status.Entries) - 1; i >= 0; i-- {
			e := h.Status.Entries[i]
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Spec.Application, e.CompletionTime.UTC().Format(time.RFC3339), e.Kind, e.Snapshot, e.Result,
				orUnknown(e.PromotedBy), dash(strings.Join(e.ApprovedBy, ",")), dash(e.RolledBackBy), e.PromotionRun)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, h := range hs {
		if len(h.Status.Rejected) > 0 {
			var names []string
			for _, r := range h.Status.Rejected {
				names = append(names, r.Snapshot)
			}
			fmt.Fprintf(out, "%s: rejected Snapshots: %s\n", h.Spec.Application, strings.Join(names, ", "))
		}
		if h.Held() {
			fmt.Fprintf(out, "%s: automated promotion out of %s held since %s by rollback %s; release: rollback %s --application %s --release\n",
				h.Spec.Application, h.Spec.Environment, h.Status.Hold.Since.UTC().Format(time.RFC3339), h.Status.Hold.PromotionRun, h.Spec.Environment, h.Spec.Application)
		}
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
