package argocd

import (
	"context"
	"errors"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	"github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/redis/go-redis/v9"

	"github.com/gitops-service/gitops-service/reconcilers/metrics"
)

// ResourceTrees reads an Application's resource tree: where Argo CD 3.x keeps
// per-resource health unless controller.resource.health.persist is "true"
// (the Application then says status.resourceHealthSource: appTree).
type ResourceTrees interface {
	// ResourceTree returns the tree of the Application name in the Argo CD
	// namespace; nil, nil when Argo CD has none (yet).
	ResourceTree(ctx context.Context, name string) (*argov1alpha1.ApplicationTree, error)
}

// RedisOptions locate the Redis of Argo CD's application controller.
type RedisOptions struct {
	// Addr is host:port, e.g. argocd-redis:6379.
	Addr string
	// Password is the `auth` key of Secret argocd-redis (Argo CD 2.11+); may be empty.
	Password string
	// Compression is what Argo CD writes with (REDIS_COMPRESSION): "gzip" (its default) or "none".
	Compression string
}

// RedisTrees reads resource trees from Argo CD's Redis with Argo CD's own cache
// code (the same key and encoding in 2.14 and 3.x), as argocd-server does.
type RedisTrees struct {
	cache *appstate.Cache
}

// NewRedisTrees returns a reader of Argo CD's Redis; it connects lazily.
func NewRedisTrees(o RedisOptions) (*RedisTrees, error) {
	if o.Addr == "" {
		return nil, errors.New("no Argo CD Redis address")
	}
	if o.Compression == "" {
		o.Compression = string(cacheutil.RedisCompressionGZip)
	}
	comp, err := cacheutil.CompressionTypeFromString(o.Compression)
	if err != nil {
		return nil, err
	}
	client := redis.NewClient(&redis.Options{Addr: o.Addr, Password: o.Password, DialTimeout: 5 * time.Second})
	// Expirations only matter for writes, which we never do.
	return &RedisTrees{cache: appstate.NewCache(cacheutil.NewCache(cacheutil.NewRedisCache(client, time.Hour, comp)), time.Hour)}, nil
}

// ResourceTree implements ResourceTrees.
func (t *RedisTrees) ResourceTree(_ context.Context, name string) (*argov1alpha1.ApplicationTree, error) {
	tree := &argov1alpha1.ApplicationTree{}
	err := t.cache.GetAppResourcesTree(name, tree)
	if errors.Is(err, appstate.ErrCacheMiss) {
		metrics.ArgoRedisReads.WithLabelValues("miss").Inc()
		return nil, nil
	}
	if err != nil {
		metrics.ArgoRedisReads.WithLabelValues("error").Inc()
		// The error names the address at most, never the password.
		return nil, fmt.Errorf("reading the resource tree of Application %s from Argo CD's Redis: %w", name, err)
	}
	metrics.ArgoRedisReads.WithLabelValues("hit").Inc()
	return tree, nil
}

// HealthInTree says whether Argo CD keeps the Application's per-resource health
// in its resource tree instead of status.resources (3.x default).
func HealthInTree(app *argov1alpha1.Application) bool {
	return app.Status.ResourceHealthSource == argov1alpha1.ResourceHealthLocationAppTree
}
