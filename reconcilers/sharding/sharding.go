// Package sharding spreads tenants over several Argo CD instances: which
// tenant namespaces this sidecar serves (Shard.Decide, from the namespace's
// label and annotation), and every controller's queue filtered to them
// (Sharded). Moving the mark between instances is reconcilers/shard's.
package sharding

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// The platform admin labels a tenant namespace with the instance that serves it; the serving sidecar marks the
// namespace with the annotation while it holds objects for the tenant in its
// Argo CD namespace, so a new instance takes a moved tenant over only once
// the old one has released it (docs/several-argocd-instances.md).
const (
	// LabelArgoCDInstance names the instance (a sidecar's --argocd-instance)
	// that serves the namespace. Only the platform admin sets it: tenants
	// cannot edit their Namespace.
	LabelArgoCDInstance = "gitops-service.io/argocd-instance"
	// AnnotationServedBy is written by the serving sidecar (claim) and removed
	// by it once everything it made for the tenant is gone (release).
	AnnotationServedBy = "gitops-service.io/served-by"
)

// Action is what a sidecar does about one namespace.
type Action int

const (
	// Ignore: the namespace is another instance's, or nobody's.
	Ignore Action = iota
	// Serve: ours; every reconciler acts on it.
	Serve
	// Claim: ours by its label, held by nobody: mark it ours first.
	Claim
	// Wait: ours by its label, but another instance still holds it.
	Wait
	// Release: we hold it but it is no longer ours: delete what we made.
	Release
)

// Shard says which tenant namespaces this sidecar serves. A nil *Shard
// serves every namespace (one Argo CD instance: no label, no annotation).
type Shard struct {
	// Instance is this sidecar's instance name (--argocd-instance).
	Instance string
	// ServeUnlabelled: namespaces without the label are ours too.
	ServeUnlabelled bool
	// Reader reads Namespaces (the manager's cache).
	Reader client.Reader
	Scheme *runtime.Scheme

	mu     sync.Mutex
	queues []*shardQueue
	served map[string]bool
}

// Decide is the action for a namespace with these labels and annotations.
func (s *Shard) Decide(labels, annotations map[string]string) Action {
	want, labelled := labels[LabelArgoCDInstance]
	mine := want == s.Instance || (!labelled && s.ServeUnlabelled)
	holder := annotations[AnnotationServedBy]
	switch {
	case mine && holder == s.Instance:
		return Serve
	case mine && holder == "":
		return Claim
	case mine:
		return Wait
	case holder == s.Instance:
		return Release
	}
	return Ignore
}

// Serves says whether we serve namespace ns now, from the cache. A namespace
// the cache does not show is not served: its requests come again when it is
// (Replay).
func (s *Shard) Serves(ctx context.Context, ns string) bool {
	if s == nil {
		return true
	}
	obj := &corev1.Namespace{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: ns}, obj); err != nil {
		return false
	}
	return s.Decide(obj.Labels, obj.Annotations) == Serve
}

// Replay records whether namespace ns is served; when it has just become
// served, every controller's queue gets a request for each of its objects in
// ns, since their events were dropped while it was not.
func (s *Shard) Replay(ctx context.Context, ns string, served bool) {
	s.mu.Lock()
	if s.served == nil {
		s.served = map[string]bool{}
	}
	was := s.served[ns]
	s.served[ns] = served
	queues := append([]*shardQueue(nil), s.queues...)
	s.mu.Unlock()
	if !served || was {
		return
	}
	for _, q := range queues {
		for _, req := range q.requests(ctx, ns) {
			q.Add(req)
		}
	}
}

type shardKey struct{}

// WithShard hands the shard to the reconcilers' SetupWithManager (through its
// ctx), so each adds it with one line: Sharded.
func WithShard(ctx context.Context, s *Shard) context.Context {
	return context.WithValue(ctx, shardKey{}, s)
}

// Sharded is a controller's options with its queue filtered by the shard of
// ctx: a request for a namespace we do not serve is dropped when it is added
// (a watch event, a requeue) and again when it would be worked on, so no
// reconcile runs for another instance's tenant. kind is the controller's
// object (requests are keyed by its namespace), or a Namespace (keyed by
// name). Without a shard, opts as they are.
func Sharded(ctx context.Context, kind client.Object, opts controller.Options) controller.Options {
	s, _ := ctx.Value(shardKey{}).(*Shard)
	if s == nil {
		return opts
	}
	opts.NewQueue = func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := &shardQueue{
			TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name}),
			shard:                      s, kind: kind,
		}
		s.mu.Lock()
		s.queues = append(s.queues, q)
		s.mu.Unlock()
		return q
	}
	return opts
}

// shardQueue is a controller's queue that holds only requests for
// namespaces the shard serves.
type shardQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	shard *Shard
	kind  client.Object
}

func (q *shardQueue) namespaceOf(req reconcile.Request) string {
	if _, ok := q.kind.(*corev1.Namespace); ok {
		return req.Name
	}
	return req.Namespace
}

func (q *shardQueue) ours(req reconcile.Request) bool {
	return q.shard.Serves(context.Background(), q.namespaceOf(req))
}

func (q *shardQueue) Add(req reconcile.Request) {
	if q.ours(req) {
		q.TypedRateLimitingInterface.Add(req)
	}
}

func (q *shardQueue) AddAfter(req reconcile.Request, d time.Duration) {
	if q.ours(req) {
		q.TypedRateLimitingInterface.AddAfter(req, d)
	}
}

func (q *shardQueue) AddRateLimited(req reconcile.Request) {
	if q.ours(req) {
		q.TypedRateLimitingInterface.AddRateLimited(req)
	}
}

// Get skips what was queued before the namespace stopped being ours.
func (q *shardQueue) Get() (reconcile.Request, bool) {
	for {
		req, shutdown := q.TypedRateLimitingInterface.Get()
		if shutdown || q.ours(req) {
			return req, shutdown
		}
		q.Forget(req)
		q.Done(req)
	}
}

// requests are the queue's requests for every object of its kind in ns.
func (q *shardQueue) requests(ctx context.Context, ns string) []reconcile.Request {
	if _, ok := q.kind.(*corev1.Namespace); ok {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ns}}}
	}
	gvk, err := apiutil.GVKForObject(q.kind, q.shard.Scheme)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "shard: the kind of a controller")
		return nil
	}
	gvk.Kind += "List"
	obj, err := q.shard.Scheme.New(gvk)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "shard: the list kind of a controller")
		return nil
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return nil
	}
	return kernel.Listed(ctx, q.shard.Reader, list, func(client.Object) bool { return true }, client.InNamespace(ns))
}
