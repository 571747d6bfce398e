package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// The gate verbs: approve a Snapshot into an Environment, freeze and
// unfreeze an Environment (its .spec.gates).

// whoAmI is the identity the API server authenticates the kubeconfig as
// (a SelfSubjectReview, as `kubectl auth whoami`).
func (c *cli) whoAmI(ctx context.Context) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(c.rest)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, explain(err, "", c.namespace)
	}
	return r.Status.UserInfo, nil
}

// requester is who a PromotionRun we create says requested it: who the API
// server says we are (its admission policy checks it), without groups.
func (c *cli) requester(ctx context.Context) (*as.Requester, error) {
	me, err := c.whoAmI(ctx)
	if err != nil {
		return nil, err
	}
	return &as.Requester{User: me.Username}, nil
}

// approval is the PromotionApproval approve creates: of the Snapshot as it is
// (its UID and content digest: one re-created under the name later is not
// approved), the approver who the API server says we are (its admission
// policy checks it), with only those of our groups that the Environment's
// gate names.
func approval(ns, env string, snap *as.Snapshot, application, comment string, me authenticationv1.UserInfo, gate *as.ApprovalGate) *as.PromotionApproval {
	a := &as.PromotionApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: truncate(snap.Name+"-into-"+env, 200) + "-"},
		Spec: as.PromotionApprovalSpec{Snapshot: snap.Name, SnapshotIdentity: snap.Identity(), Environment: env, Application: application, Comment: comment,
			Approver: as.Approver{User: me.Username}},
	}
	if gate != nil {
		for _, g := range me.Groups {
			if slices.Contains(gate.Groups, g) {
				a.Spec.Approver.Groups = append(a.Spec.Approver.Groups, g)
			}
		}
	}
	return a
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (c *cli) approve(ctx context.Context, envName string) error {
	if c.opts.snapshot == "" {
		return usageError("approve needs --snapshot <snapshot>: an approval is for one Snapshot into one Environment")
	}
	if c.argo != nil {
		return c.argoApprove(ctx, envName)
	}
	env := &as.Environment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: envName}, env); err != nil {
		return explain(err, fmt.Sprintf("Environment %q", envName), c.namespace)
	}
	me, err := c.whoAmI(ctx)
	if err != nil {
		return err
	}
	var gate *as.ApprovalGate
	if env.Spec.Gates != nil {
		gate = env.Spec.Gates.Approvals
	}
	snap := &as.Snapshot{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: c.opts.snapshot}, snap); err != nil {
		return explain(err, fmt.Sprintf("Snapshot %q", c.opts.snapshot), c.namespace)
	}
	a := approval(c.namespace, envName, snap, c.opts.application, c.opts.comment, me, gate)
	if err := c.Create(ctx, a); err != nil {
		return explain(err, "the PromotionApproval", c.namespace)
	}
	if done, err := c.printObjects(false, a); done {
		return err
	}
	_, err = fmt.Fprintf(c.out, "PromotionApproval %s created: %s approves Snapshot %s into Environment %s%s\n", a.Name, me.Username, c.opts.snapshot, envName, gateNote(gate))
	return err
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
	if c.argo != nil {
		return c.argoFreeze(ctx, envName, frozen)
	}
	me, err := c.whoAmI(ctx)
	if err != nil {
		return err
	}
	env := &as.Environment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: envName}, env); err != nil {
		return explain(err, fmt.Sprintf("Environment %q", envName), c.namespace)
	}
	// A merge patch of the freeze alone, on the version read: the other gates stay as they are.
	patch := client.MergeFromWithOptions(env.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if env.Spec.Gates == nil {
		env.Spec.Gates = &as.PromotionGates{}
	}
	env.Spec.Gates.Freeze = freezeSwitch(frozen, me.Username, c.opts.reason, time.Now())
	if err := c.Patch(ctx, env, patch); err != nil {
		return explain(err, fmt.Sprintf("Environment %q", envName), c.namespace)
	}
	if done, err := c.printObjects(false, env); done {
		return err
	}
	if frozen {
		_, err = fmt.Fprintf(c.out, "Environment %s frozen by %s: promotions into it wait until `%s unfreeze %s`\n", envName, me.Username, c.prog, envName)
	} else {
		_, err = fmt.Fprintf(c.out, "Environment %s unfrozen by %s: waiting promotions go on (unless a freeze window is open)\n", envName, me.Username)
	}
	return err
}

// argoBinding is a binding Argo CD shows the user in the namespace (-n, or
// the only one): panel actions are taken through one of its Applications,
// and the GitOps Service checks the tenant mapping of its namespace. One of
// application's bindings when given.
func (c *cli) argoBinding(ctx context.Context, application string) (*panelObject, error) {
	objs, err := c.argoObjects(ctx)
	if err != nil {
		return nil, err
	}
	var found []panelObject
	namespaces := map[string]bool{}
	for _, o := range objs {
		if o.d.Kind == ownership.KindBinding && (c.namespace == "" || o.d.Namespace == c.namespace) && (application == "" || o.d.Application == application) {
			found = append(found, o)
			namespaces[o.d.Namespace] = true
		}
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("no binding of yours in Argo CD in namespace %q: through Argo CD the GitOps Service acts in a namespace where a binding you may see deploys", c.namespace)
	case len(namespaces) > 1:
		return nil, usageError("your bindings are in several namespaces: pick one with -n")
	}
	return &found[0], nil
}

func (c *cli) argoApprove(ctx context.Context, envName string) error {
	b, err := c.argoBinding(ctx, c.opts.application)
	if err != nil {
		return err
	}
	act, err := c.argo.act(ctx, b.app, "approve", map[string]string{"environment": envName, "snapshot": c.opts.snapshot,
		"application": c.opts.application, "comment": c.opts.comment})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "PromotionApproval %s created in namespace %s: your Argo CD user approves Snapshot %s into Environment %s\n", act.Name, act.Namespace, c.opts.snapshot, envName)
	return err
}

func (c *cli) argoFreeze(ctx context.Context, envName string, frozen bool) error {
	b, err := c.argoBinding(ctx, "")
	if err != nil {
		return err
	}
	verb := "unfreeze"
	if frozen {
		verb = "freeze"
	}
	act, err := c.argo.act(ctx, b.app, verb, map[string]string{"environment": envName, "reason": c.opts.reason})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.out, "Environment %s in namespace %s: %s done by your Argo CD user\n", act.Name, act.Namespace, verb)
	return err
}
