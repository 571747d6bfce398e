package main

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// backend is a way in: the user's kubeconfig (kube.go) or their Argo CD
// login through argocd-server's proxy extension (argobackend.go). Each verb
// is written once over it (commands.go, rollback.go, gates.go, preview.go);
// a backend reads and writes as the user and returns the API objects the
// verbs show, with errors already in the user's words (exitError for
// refusals: the same exit code whichever way in).
type backend interface {
	// objects are the GitOpsDeployments and bindings of the namespace
	// (every namespace the user may see when ""), -l selector.
	objects(ctx context.Context, selector string) ([]v1.GitOpsDeployment, []as.SnapshotEnvironmentBinding, error)
	// find is the GitOpsDeployment named name or, unless deploymentOnly,
	// else the binding of that name.
	find(ctx context.Context, name string, deploymentOnly bool) (client.Object, error)
	// sync creates a SyncRun of the manual deployment gd.
	sync(ctx context.Context, gd *v1.GitOpsDeployment, revision string) (*v1.GitOpsDeploymentSyncRun, error)
	// promote creates the PromotionRun of snapshot to one Environment (to)
	// or along the graph from one (autoFrom).
	promote(ctx context.Context, snapshot, to, autoFrom string) (*as.PromotionRun, error)
	// preview creates a PromotionPreview of snapshot to Environment to, or
	// to every Environment of the path when to is "".
	preview(ctx context.Context, snapshot, to string) (*as.PromotionPreview, error)
	// rollback creates the PromotionRun that rolls application back out of env.
	rollback(ctx context.Context, application, env string) (*as.PromotionRun, error)
	// promotionRuns are the PromotionRuns of the binding's Application, newest first.
	promotionRuns(ctx context.Context, seb *as.SnapshotEnvironmentBinding) ([]as.PromotionRun, error)
	// histories are the PromotionHistories of env (of application when given).
	histories(ctx context.Context, env, application string) ([]as.PromotionHistory, error)
	// release releases the hold of h (a held history histories returned)
	// and returns it as it is then.
	release(ctx context.Context, h *as.PromotionHistory) (*as.PromotionHistory, error)
	// environments are the Environments of the namespace (-l selector) and
	// the bindings of what runs there.
	environments(ctx context.Context, selector string) ([]as.Environment, []as.SnapshotEnvironmentBinding, error)
	// approve creates the user's approval of snapshot into env; gate is the
	// Environment's approval gate when the backend knows it.
	approve(ctx context.Context, env, snapshot, application, comment string) (a *as.PromotionApproval, gate *as.ApprovalGate, known bool, err error)
	// freeze sets (or clears) env's freeze switch; the Environment returned
	// has it (By: who did it).
	freeze(ctx context.Context, env string, frozen bool, reason string) (*as.Environment, error)
	// follow refreshes obj, an object this backend created, until done
	// says so or ctx ends.
	follow(ctx context.Context, obj client.Object, done func() bool) error
	// serviceVersion is the GitOps Service's version.
	serviceVersion(ctx context.Context) (*buildVersion, error)
	// names are names of kind (deployments, snapshots, environments), for
	// shell completion; none when the backend cannot tell.
	names(ctx context.Context, kind string) ([]string, error)
}

// Errors both backends return in the same words.

// refusedIn: the user may not do this in namespace ns (exit 3); why is the
// backend's reason, next what to do.
func refusedIn(ns, why, next string) error {
	if ns == "" {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("you may not do this in every namespace (%s): %s", why, next)}
	}
	return &exitError{code: exitRefused, msg: fmt.Sprintf("you may not do this in namespace %q (%s): %s", ns, why, next)}
}

// notFound: what is not in namespace ns (exit 1).
func notFound(what, ns string) error {
	if ns == "" {
		return fmt.Errorf("%s not found in any namespace you may see: `list -A` shows what there is", what)
	}
	return fmt.Errorf("%s not found in namespace %q: `list` shows what there is, -n picks another namespace", what, ns)
}

// noBinding: application has no binding in env (exit 3: nothing to do).
func noBinding(application, env string) error {
	return &exitError{code: exitRefused, msg: fmt.Sprintf("application %s has no binding in Environment %s: nothing to roll back", application, env)}
}
