package promotionrun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Who approved and who promoted count only when the API server enforces
// it: the admission policies the install ships (manifests/install) must be
// live as shipped, bound with Deny to the sidecar's own ServiceAccount. The
// sidecar reads them, uncached, in a pass whose run may enter or has entered
// an Environment that asks for approvals, or names who requested it (its
// history entries say so), and watches them to wake waiting runs
// (docs/gates.md "Identity").

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch

// policyGrace is how long after a policy and its binding are created the API
// server may still admit without them (its policy informer): what was
// written within it does not count.
const policyGrace = 2 * time.Second

// shippedPolicies are the install's admission policies, parsed once.
var shippedPolicies = sync.OnceValues(install.Policies)

// notEnforced is an Enforcement that says why identity is not enforced.
func notEnforced(format string, args ...any) install.Enforcement {
	return install.Enforcement{Problem: fmt.Sprintf(format, args...)}
}

// identityEnforcement reads the live admission policies and says whether
// they enforce the shipped rules. An approval or requester written while
// they did not is never trusted: Since is at least the last time this
// sidecar saw them not enforced (a restart forgets that; the policies'
// creation times are kept by the API server).
func (r *Reconciler) identityEnforcement(ctx context.Context) (install.Enforcement, error) {
	e, err := r.readEnforcement(ctx)
	if err != nil {
		return e, err
	}
	r.enforcementMu.Lock()
	defer r.enforcementMu.Unlock()
	if !e.Enforced() {
		r.lastUnenforced = r.now().Time
	} else if r.lastUnenforced.After(e.Since) {
		e.Since = r.lastUnenforced
	}
	return e, nil
}

func (r *Reconciler) readEnforcement(ctx context.Context) (install.Enforcement, error) {
	shipped, err := shippedPolicies()
	if err != nil {
		return notEnforced("the shipped policies cannot be read: %v", err), nil
	}
	if r.ServiceAccount.Name == "" {
		return notEnforced("the sidecar does not know its ServiceAccount (the policies' parameter)"), nil
	}
	var policies admissionv1.ValidatingAdmissionPolicyList
	var bindings admissionv1.ValidatingAdmissionPolicyBindingList
	for _, list := range []client.ObjectList{&policies, &bindings} {
		err := r.APIReader.List(ctx, list)
		switch {
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			return notEnforced("the API server does not serve ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, Kubernetes >= 1.30)"), nil
		case apierrors.IsForbidden(err):
			return notEnforced("the sidecar may not read ValidatingAdmissionPolicies and their bindings (manifests/rbac)"), nil
		case err != nil:
			return install.Enforcement{}, err
		}
	}
	return install.Check(shipped, policies.Items, bindings.Items, r.ServiceAccount), nil
}

// enforcedAt says whether something created at t was checked by the
// policies: they enforce, and t is after their creation (and the grace).
func enforcedAt(e install.Enforcement, t time.Time) bool {
	return e.Enforced() && t.After(e.Since.Add(policyGrace))
}

// identityWait is the Waiting of a gate that needs approvals while they
// cannot count.
func identityWait(env string, e install.Enforcement) *kernel.Waiting {
	return kernel.Wait(as.WaitingReasonApprovalIdentityNotEnforced, kernel.WaitingRetry,
		"approvals into Environment %s to be enforced: the API server does not check who approves (%s); "+
			"apply manifests/install's promotion-approvals.yaml and promotion-requesters.yaml as shipped (Kubernetes >= 1.30)", env, e.Problem)
}

// person is who an approver is for counting: an Argo CD user argocd:<name>
// and the Kubernetes user <name> are one person (the platform maps its users
// into Argo CD under their names), so they count once.
func person(user string) string { return strings.TrimPrefix(user, "argocd:") }

// isServiceAccount says whether the approver is a ServiceAccount: a
// namespace admin mints as many as they like, so they count only where a gate
// names them.
func isServiceAccount(user string) bool { return strings.HasPrefix(user, "system:serviceaccount:") }

// approvalCounts says whether approval a is of the gated Snapshot (this
// object with this content, see as.SnapshotIdentity) into in.Env, was written
// while the API server enforced who approves, and is one the gate g counts.
func approvalCounts(in gateInput, g *as.ApprovalGate, a as.PromotionApproval) bool {
	s := a.Spec
	if a.Namespace != in.Env.Namespace || s.Snapshot != in.Snapshot || s.Environment != in.Env.Name ||
		(s.Application != "" && s.Application != in.Application) || !a.DeletionTimestamp.IsZero() {
		return false
	}
	if !in.SnapshotID.Known() || !enforcedAt(in.Identity, a.CreationTimestamp.Time) || !mayApprove(g, s.Approver) {
		return false
	}
	if len(g.Users) == 0 && len(g.Groups) == 0 && isServiceAccount(s.Approver.User) {
		return false
	}
	if s.SnapshotIdentity.Known() {
		return s.SnapshotIdentity.Matches(in.SnapshotID)
	}
	// Named only: the Snapshot must have existed before the approval (an
	// earlier second: creation times are whole seconds).
	return in.SnapshotCreated.Before(a.CreationTimestamp.Time)
}

// countedApprovers are the approvers the gate counts, one per person (the
// alphabetically first user name of each), sorted.
func countedApprovers(in gateInput, g *as.ApprovalGate) []string {
	byPerson := map[string]string{}
	for _, a := range in.Approvals {
		if !approvalCounts(in, g, a) {
			continue
		}
		u := a.Spec.Approver.User
		if p, ok := byPerson[person(u)]; !ok || u < p {
			byPerson[person(u)] = u
		}
	}
	out := make([]string, 0, len(byPerson))
	for _, u := range byPerson {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// approvedBy is what a history entry records as the approvals of in: the
// approvers the Environment's gate counts, none when it asks for none, when
// they cannot count, and for a rollback (its gate, if any, counted the
// approvals of the Snapshot rolled back, not of the one deployed).
func approvedBy(in gateInput) []string {
	g := in.Env.Spec.Gates
	if g == nil || g.Approvals == nil || !in.Identity.Enforced() || in.Rollback {
		return nil
	}
	return countedApprovers(in, g.Approvals)
}
