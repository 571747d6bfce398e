package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// rollback, release and history with an Argo CD login: the panel's Rollback,
// its release action and its history endpoint, which the GitOps Service
// authorizes by the tenant mapping as the other actions.

// histories are the PromotionHistories of env (of every application, or
// application's) in the namespace of app's binding, as the panel sees them.
func (a *argoClient) histories(ctx context.Context, app *argov1alpha1.Application, env, application string) (*uiproxy.Histories, error) {
	q := url.Values{"environment": {env}}
	if application != "" {
		q.Set("application", application)
	}
	out := &uiproxy.Histories{}
	_, err := a.do(ctx, http.MethodGet, "/extensions/"+uiproxy.ExtensionName+"/api/v1/history", q, appHeaders(app), nil, out)
	return out, err
}

// historyFromPanel is the PromotionHistory the panel's view shows (the view
// is newest first; the object's entries are oldest first).
func historyFromPanel(ns string, v uiproxy.History) as.PromotionHistory {
	h := as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: as.PromotionHistoryName(v.Application, v.Environment)},
		Spec: as.PromotionHistorySpec{Application: v.Application, Environment: v.Environment}}
	for i := len(v.Entries) - 1; i >= 0; i-- {
		e := v.Entries[i]
		h.Status.Entries = append(h.Status.Entries, as.PromotionHistoryEntry{PromotionRun: e.PromotionRun, Kind: as.PromotionKind(e.Kind), Snapshot: e.Snapshot,
			Result: as.PromotionRunCompleteResult(e.Result), CompletionTime: parseTime(e.Completed), PromotedBy: e.PromotedBy, ApprovedBy: e.ApprovedBy, RolledBackBy: e.RolledBackBy})
	}
	for _, r := range v.Rejected {
		h.Status.Rejected = append(h.Status.Rejected, as.RejectedSnapshot{Snapshot: r})
	}
	if v.HeldSince != "" {
		h.Status.Hold = &as.PromotionHold{Since: parseTime(v.HeldSince), PromotionRun: v.HeldBy, Snapshot: v.HeldSnapshot}
	}
	return h
}

func parseTime(s string) metav1.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return metav1.NewTime(t)
}

// argoBindingIn is a binding of the application in env that Argo CD shows
// the user (in -n's namespace, or the only one).
func (c *cli) argoBindingIn(ctx context.Context, env string) (*panelObject, error) {
	objs, err := c.argoObjects(ctx)
	if err != nil {
		return nil, err
	}
	var found *panelObject
	for i, o := range objs {
		if o.d.Kind != ownership.KindBinding || o.d.Application != c.opts.application || o.d.Environment != env {
			continue
		}
		if found != nil && found.d.Namespace != o.d.Namespace {
			return nil, usageError("application %s runs in Environment %s of several namespaces: pick one with -n", c.opts.application, env)
		}
		if found == nil {
			found = &objs[i]
		}
	}
	if found == nil {
		return nil, &exitError{code: exitRefused, msg: fmt.Sprintf("application %s has no binding in Environment %s that Argo CD shows you: nothing to roll back", c.opts.application, env)}
	}
	return found, nil
}

func (c *cli) argoRollback(ctx context.Context, env string) error {
	b, err := c.argoBindingIn(ctx, env)
	if err != nil {
		return err
	}
	act, err := c.argo.act(ctx, b.app, "rollback", nil)
	if err != nil {
		return err
	}
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: act.Namespace, Name: act.Name},
		Spec: as.PromotionRunSpec{Snapshot: b.d.Snapshot, Application: b.d.Application,
			ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: env, Rollback: true}}}
	return c.argoFollowPromotion(ctx, b.app, run, fmt.Sprintf("PromotionRun %s created: rollback of %s out of %s (application %s)", run.Name, b.d.Snapshot, env, b.d.Application))
}

// argoHistories are the histories of env (of --application) in the
// namespace of a binding of the application that Argo CD shows the user, and
// that binding.
func (c *cli) argoHistories(ctx context.Context, env string) (*panelObject, *uiproxy.Histories, error) {
	b, err := c.argoBinding(ctx, c.opts.application)
	if err != nil {
		return nil, nil, err
	}
	hs, err := c.argo.histories(ctx, b.app, env, c.opts.application)
	return b, hs, err
}

// argoRelease releases the hold through any binding of the application.
func (c *cli) argoRelease(ctx context.Context, env string) error {
	b, hs, err := c.argoHistories(ctx, env)
	if err != nil {
		return err
	}
	if len(hs.Items) == 0 || hs.Items[0].HeldSince == "" {
		_, err := fmt.Fprintf(c.opts.streams.Out, "Environment %s of application %s is not held\n", env, c.opts.application)
		return err
	}
	held := hs.Items[0]
	if _, err := c.argo.act(ctx, b.app, "release", map[string]string{"environment": env}); err != nil {
		return err
	}
	if c.opts.output != "" {
		if hs, err = c.argo.histories(ctx, b.app, env, c.opts.application); err != nil {
			return err
		}
		for _, v := range hs.Items {
			h := historyFromPanel(hs.Namespace, v)
			if done, err := c.printObjects(false, &h); done {
				return err
			}
		}
	}
	_, err = fmt.Fprintf(c.opts.streams.Out, "released the hold on automated promotion out of %s (rollback %s of %s)\n", env, held.HeldBy, held.HeldSnapshot)
	return err
}

func (c *cli) argoHistory(ctx context.Context, env string) error {
	_, hs, err := c.argoHistories(ctx, env)
	if err != nil {
		return err
	}
	shown := make([]as.PromotionHistory, len(hs.Items))
	objs := make([]client.Object, len(hs.Items))
	for i, v := range hs.Items {
		shown[i] = historyFromPanel(hs.Namespace, v)
		objs[i] = &shown[i]
	}
	if done, err := c.printObjects(true, objs...); done {
		return err
	}
	if len(shown) == 0 {
		_, err := fmt.Fprintf(c.opts.streams.Out, "nothing ran in Environment %s yet\n", env)
		return err
	}
	return writeHistory(c.opts.streams.Out, shown)
}
