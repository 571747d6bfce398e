package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// kubeBackend is the way in with the user's kubeconfig: the API server
// checks every request against their RBAC, as for kubectl.
type kubeBackend struct {
	client.WithWatch
	rest *rest.Config
	// namespace is -n's (or the context's); "" with -A.
	namespace string
	// argocdNamespace is where the GitOps Service's metrics Service is.
	argocdNamespace string
}

func (k *kubeBackend) objects(ctx context.Context, selector string) ([]v1.GitOpsDeployment, []as.SnapshotEnvironmentBinding, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, nil, usageError("-l %s: %v", selector, err)
	}
	opts := []client.ListOption{client.InNamespace(k.namespace), client.MatchingLabelsSelector{Selector: sel}}
	var gds v1.GitOpsDeploymentList
	if err := k.List(ctx, &gds, opts...); err != nil {
		return nil, nil, explain(err, "GitOpsDeployments", k.namespace)
	}
	var sebs as.SnapshotEnvironmentBindingList
	if err := k.List(ctx, &sebs, opts...); err != nil {
		return nil, nil, explain(err, "SnapshotEnvironmentBindings", k.namespace)
	}
	return gds.Items, sebs.Items, nil
}

func (k *kubeBackend) find(ctx context.Context, name string, deploymentOnly bool) (client.Object, error) {
	key := client.ObjectKey{Namespace: k.namespace, Name: name}
	gd := &v1.GitOpsDeployment{}
	err := k.Get(ctx, key, gd)
	if err == nil {
		return gd, nil
	}
	if deploymentOnly {
		return nil, explain(err, fmt.Sprintf("GitOpsDeployment %q", name), k.namespace)
	}
	if apierrors.IsNotFound(err) {
		seb := &as.SnapshotEnvironmentBinding{}
		if err = k.Get(ctx, key, seb); err == nil {
			return seb, nil
		}
	}
	return nil, explain(err, fmt.Sprintf("GitOpsDeployment or SnapshotEnvironmentBinding %q", name), k.namespace)
}

func (k *kubeBackend) sync(ctx context.Context, gd *v1.GitOpsDeployment, revision string) (*v1.GitOpsDeploymentSyncRun, error) {
	run := &v1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: gd.Namespace, GenerateName: gd.Name + "-sync-"},
		Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: gd.Name, RevisionID: revision},
	}
	if err := k.Create(ctx, run); err != nil {
		return nil, explain(err, "the GitOpsDeploymentSyncRun", k.namespace)
	}
	return run, nil
}

func (k *kubeBackend) snapshot(ctx context.Context, name string) (*as.Snapshot, error) {
	snap := &as.Snapshot{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: name}, snap); err != nil {
		return nil, explain(err, fmt.Sprintf("Snapshot %q", name), k.namespace)
	}
	return snap, nil
}

func (k *kubeBackend) promote(ctx context.Context, snapshot, to, autoFrom string) (*as.PromotionRun, error) {
	snap, err := k.snapshot(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	me, err := k.requester(ctx)
	if err != nil {
		return nil, err
	}
	run := as.NewPromotion(k.namespace, snap.Spec.Application, snap.Name, to, autoFrom, me)
	if err := k.Create(ctx, run); err != nil {
		return nil, explain(err, "the PromotionRun", k.namespace)
	}
	return run, nil
}

func (k *kubeBackend) preview(ctx context.Context, snapshot, to string) (*as.PromotionPreview, error) {
	snap, err := k.snapshot(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	pp := &as.PromotionPreview{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.namespace, GenerateName: snap.Name + "-preview-"},
		Spec:       as.PromotionPreviewSpec{Snapshot: snap.Name, Application: snap.Spec.Application, TargetEnvironment: to, AllEnvironments: to == ""},
	}
	if err := k.Create(ctx, pp); err != nil {
		return nil, explain(err, "the PromotionPreview", k.namespace)
	}
	return pp, nil
}

func (k *kubeBackend) rollback(ctx context.Context, application, env string) (*as.PromotionRun, error) {
	var sebs as.SnapshotEnvironmentBindingList
	if err := k.List(ctx, &sebs, client.InNamespace(k.namespace)); err != nil {
		return nil, explain(err, "SnapshotEnvironmentBindings", k.namespace)
	}
	var seb *as.SnapshotEnvironmentBinding
	for i := range sebs.Items {
		b := &sebs.Items[i]
		// The oldest binding of the pair deploys (as the sidecar picks it).
		if b.Spec.Application == application && b.Spec.Environment == env &&
			(seb == nil || b.CreationTimestamp.Before(&seb.CreationTimestamp) ||
				(b.CreationTimestamp.Equal(&seb.CreationTimestamp) && b.Name < seb.Name)) {
			seb = b
		}
	}
	if seb == nil {
		return nil, noBinding(application, env)
	}
	me, err := k.requester(ctx)
	if err != nil {
		return nil, err
	}
	run := as.NewRollback(k.namespace, application, env, seb.Spec.Snapshot, me)
	if err := k.Create(ctx, run); err != nil {
		return nil, explain(err, "the PromotionRun", k.namespace)
	}
	return run, nil
}

func (k *kubeBackend) promotionRuns(ctx context.Context, seb *as.SnapshotEnvironmentBinding) ([]as.PromotionRun, error) {
	var list as.PromotionRunList
	if err := k.List(ctx, &list, client.InNamespace(seb.Namespace)); err != nil {
		return nil, explain(err, "PromotionRuns", seb.Namespace)
	}
	out := slices.DeleteFunc(list.Items, func(r as.PromotionRun) bool { return r.Spec.Application != seb.Spec.Application })
	slices.SortStableFunc(out, func(a, b as.PromotionRun) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	return out, nil
}

func (k *kubeBackend) histories(ctx context.Context, env, application string) ([]as.PromotionHistory, error) {
	var list as.PromotionHistoryList
	if err := k.List(ctx, &list, client.InNamespace(k.namespace)); err != nil {
		return nil, explain(err, "PromotionHistories", k.namespace)
	}
	var out []as.PromotionHistory
	for _, h := range list.Items {
		if h.Spec.Environment == env && (application == "" || h.Spec.Application == application) {
			out = append(out, h)
		}
	}
	return out, nil
}

func (k *kubeBackend) release(ctx context.Context, h *as.PromotionHistory) (*as.PromotionHistory, error) {
	h = h.DeepCopy()
	patch := client.MergeFrom(h.DeepCopy())
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	if now.Before(&h.Status.Hold.Since) {
		now = h.Status.Hold.Since // our clock behind the server's: release this hold all the same
	}
	h.Spec.ReleasedAt = &now
	if err := k.Patch(ctx, h, patch); err != nil {
		return nil, explain(err, "the PromotionHistory", k.namespace)
	}
	return h, nil
}

func (k *kubeBackend) environments(ctx context.Context, selector string) ([]as.Environment, []as.SnapshotEnvironmentBinding, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, nil, usageError("-l %s: %v", selector, err)
	}
	var envs as.EnvironmentList
	if err := k.List(ctx, &envs, client.InNamespace(k.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, nil, explain(err, "Environments", k.namespace)
	}
	var sebs as.SnapshotEnvironmentBindingList
	if err := k.List(ctx, &sebs, client.InNamespace(k.namespace)); err != nil {
		return nil, nil, explain(err, "SnapshotEnvironmentBindings", k.namespace)
	}
	return envs.Items, sebs.Items, nil
}

func (k *kubeBackend) environment(ctx context.Context, name string) (*as.Environment, error) {
	env := &as.Environment{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: name}, env); err != nil {
		return nil, explain(err, fmt.Sprintf("Environment %q", name), k.namespace)
	}
	return env, nil
}

func (k *kubeBackend) approve(ctx context.Context, envName, snapshot, application, comment string) (*as.PromotionApproval, *as.ApprovalGate, bool, error) {
	env, err := k.environment(ctx, envName)
	if err != nil {
		return nil, nil, false, err
	}
	me, err := k.whoAmI(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	var gate *as.ApprovalGate
	if env.Spec.Gates != nil {
		gate = env.Spec.Gates.Approvals
	}
	snap, err := k.snapshot(ctx, snapshot)
	if err != nil {
		return nil, nil, false, err
	}
	a := approval(k.namespace, envName, snap, application, comment, me, gate)
	if err := k.Create(ctx, a); err != nil {
		return nil, nil, false, explain(err, "the PromotionApproval", k.namespace)
	}
	return a, gate, true, nil
}

func (k *kubeBackend) freeze(ctx context.Context, envName string, frozen bool, reason string) (*as.Environment, error) {
	me, err := k.whoAmI(ctx)
	if err != nil {
		return nil, err
	}
	env, err := k.environment(ctx, envName)
	if err != nil {
		return nil, err
	}
	// A merge patch of the freeze alone, on the version read: the other gates stay as they are.
	patch := client.MergeFromWithOptions(env.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if env.Spec.Gates == nil {
		env.Spec.Gates = &as.PromotionGates{}
	}
	env.Spec.Gates.Freeze = freezeSwitch(frozen, me.Username, reason, time.Now())
	if err := k.Patch(ctx, env, patch); err != nil {
		return nil, explain(err, fmt.Sprintf("Environment %q", envName), k.namespace)
	}
	return env, nil
}

// follow watches obj by name; it lists first, so a run that finished before
// the watch started is seen too.
func (k *kubeBackend) follow(ctx context.Context, obj client.Object, done func() bool) error {
	var list client.ObjectList
	switch obj.(type) {
	case *v1.GitOpsDeploymentSyncRun:
		list = &v1.GitOpsDeploymentSyncRunList{}
	case *as.PromotionRun:
		list = &as.PromotionRunList{}
	case *as.PromotionPreview:
		list = &as.PromotionPreviewList{}
	default:
		return fmt.Errorf("cannot follow a %T", obj)
	}
	ns := obj.GetNamespace()
	byName := fields.OneTermEqualSelector("metadata.name", obj.GetName()).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			l := list.DeepCopyObject().(client.ObjectList)
			return l, k.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &o})
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return k.Watch(ctx, list.DeepCopyObject().(client.ObjectList), &client.ListOptions{Namespace: ns, Raw: &o})
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, obj.DeepCopyObject().(client.Object), nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, &exitError{code: exitFailed, msg: fmt.Sprintf("%s was deleted while it ran", obj.GetName())}
		}
		copyInto(obj, ev.Object)
		return done(), nil
	})
	if err != nil && ctx.Err() == nil {
		return explain(err, "", k.namespace)
	}
	return err
}

// copyInto copies src into dst when both are the same kind of run.
func copyInto(dst client.Object, src runtime.Object) {
	switch d := dst.(type) {
	case *v1.GitOpsDeploymentSyncRun:
		if s, ok := src.(*v1.GitOpsDeploymentSyncRun); ok {
			s.DeepCopyInto(d)
		}
	case *as.PromotionRun:
		if s, ok := src.(*as.PromotionRun); ok {
			s.DeepCopyInto(d)
		}
	case *as.PromotionPreview:
		if s, ok := src.(*as.PromotionPreview); ok {
			s.DeepCopyInto(d)
		}
	}
}

// serviceVersion reads the sidecar's build_info metric through the API
// server's service proxy.
func (k *kubeBackend) serviceVersion(ctx context.Context) (*buildVersion, error) {
	cs, err := kubernetes.NewForConfig(k.rest)
	if err != nil {
		return nil, err
	}
	body, err := cs.CoreV1().Services(k.argocdNamespace).ProxyGet("https", metricsService, metricsPort, "/metrics", nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("its metrics (service %s/%s) are not reachable for you: %s", k.argocdNamespace, metricsService, firstLine(err.Error()))
	}
	return parseBuildInfo(body)
}

// names are the names of kind in the namespace, for shell completion.
func (k *kubeBackend) names(ctx context.Context, kind string) ([]string, error) {
	var out []string
	switch kind {
	case "deployments":
		var l v1.GitOpsDeploymentList
		if err := k.List(ctx, &l, client.InNamespace(k.namespace)); err != nil {
			return nil, err
		}
		for _, i := range l.Items {
			out = append(out, i.Name)
		}
	case "snapshots":
		var l as.SnapshotList
		if err := k.List(ctx, &l, client.InNamespace(k.namespace)); err != nil {
			return nil, err
		}
		for _, i := range l.Items {
			out = append(out, i.Name)
		}
	default:
		var l as.EnvironmentList
		if err := k.List(ctx, &l, client.InNamespace(k.namespace)); err != nil {
			return nil, err
		}
		for _, i := range l.Items {
			out = append(out, i.Name)
		}
	}
	return out, nil
}

// whoAmI is the identity the API server authenticates the kubeconfig as
// (a SelfSubjectReview, as `kubectl auth whoami`).
func (k *kubeBackend) whoAmI(ctx context.Context) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(k.rest)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, explain(err, "", k.namespace)
	}
	return r.Status.UserInfo, nil
}

// requester is who a PromotionRun we create says requested it: who the API
// server says we are (its admission policy checks it), without groups.
func (k *kubeBackend) requester(ctx context.Context) (*as.Requester, error) {
	me, err := k.whoAmI(ctx)
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
