package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// The gate verbs: approve a Snapshot into an Environment, freeze and
// unfreeze an Environment (its .spec.gates).

func (c *cli) approve(ctx context.Context, envName string) error {
	if c.opts.snapshot == "" {
		return usageError("approve needs --snapshot <snapshot>: an approval is for one Snapshot into one Environment")
	}
	a, gate, gateKnown, err := c.be.approve(ctx, envName, c.opts.snapshot, c.opts.application, c.opts.comment)
	if err != nil {
		return err
	}
	if done, err := c.printObjects(false, a); done {
		return err
	}
	note := ""
	if gateKnown {
		note = gateNote(gate)
	}
	_, err = fmt.Fprintf(c.out, "PromotionApproval %s created in namespace %s: %s approves Snapshot %s into Environment %s%s\n",
		a.Name, a.Namespace, orYou(a.Spec.Approver.User), c.opts.snapshot, envName, note)
	return err
}

// orYou is who did it: the user the cluster says, or (through Argo CD,
// which says it to the GitOps Service only) the user's Argo CD login.
func orYou(user string) string {
	if user == "" {
		return "your Argo CD user"
	}
	return user
}

func gateNote(g *as.ApprovalGate) string {
	if g == nil {
		return " (the Environment asks for no approval)"
	}
	return fmt.Sprintf(" (it asks for %d)", g.Required)
}

// freezeSwitch is the freeze (or unfreeze) the verbs set.
func freezeSwitch(frozen bool, by, reason string, now time.Time) *as.FreezeSwitch {
	if !frozen {
		return &as.FreezeSwitch{Frozen: false, By: by}
	}
	since := metav1.NewTime(now.UTC().Truncate(time.Second))
	return &as.FreezeSwitch{Frozen: true, By: by, Reason: reason, Since: &since}
}

func (c *cli) freeze(ctx context.Context, envName string, frozen bool) error {
	env, err := c.be.freeze(ctx, envName, frozen, c.opts.reason)
	if err != nil {
		return err
	}
	if done, err := c.printObjects(false, env); done {
		return err
	}
	by := orYou(env.Spec.Gates.Freeze.By)
	if frozen {
		_, err = fmt.Fprintf(c.out, "Environment %s frozen by %s: promotions into it wait until `%s unfreeze %s`\n", envName, by, c.prog, envName)
	} else {
		_, err = fmt.Fprintf(c.out, "Environment %s unfrozen by %s: waiting promotions go on (unless a freeze window is open)\n", envName, by)
	}
	return err
}
