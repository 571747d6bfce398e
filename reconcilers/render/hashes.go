package render

import (
	"context"
	"fmt"

	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonRenderFailed: a component does not render now.
const ReasonRenderFailed = "RenderFailed"

// Hashes renders every component of application's Snapshot snapshot for
// Environment env of namespace ns, as a promotion would apply it, and
// returns each component's render hash by name. A render of a source at one
// commit with the same parameters is taken from the Cache (a branch is
// resolved by the repo-server first). Bad input, and a component that does
// not render, are *kernel.Refusal; the repo-server's unavailability is an
// error.
func (r *Renderer) Hashes(ctx context.Context, ns, application, snapshot, env string) (map[string]string, error) {
	t, err := r.Resolve(ctx, ns, application, snapshot, env)
	if err != nil {
		return nil, err
	}
	_, disc, err := RemoteClients(t.Config)
	if err != nil {
		return nil, kernel.Refuse(ReasonInvalid, "the cluster of Environment %q: %v", env, err)
	}
	s, err := r.ReadSettings(disc)
	if err != nil {
		return nil, err
	}
	conn, repo, err := r.Repo.NewRepoServerClient()
	if err != nil {
		return nil, fmt.Errorf("connecting to the repo-server: %w", err)
	}
	defer func() { _ = conn.Close() }()
	out := map[string]string{}
	for _, p := range t.Params {
		app, err := GeneratedApplication(r.ArgoNamespace, t.Binding, p)
		if err != nil {
			return nil, kernel.Refuse(ReasonRenderFailed, "component %s: %v", p.Component, err)
		}
		req, err := r.request(ctx, app, t.Project, s)
		if err != nil {
			return nil, kernel.Refuse(ReasonRenderFailed, "component %s: %v", p.Component, err)
		}
		key := ""
		if res, err := repo.ResolveRevision(ctx, &apiclient.ResolveRevisionRequest{Repo: req.Repo, App: app, AmbiguousRevision: req.Revision}); err == nil {
			// Unresolved: rendered without the cache.
			key, _ = cacheKey(req, res.Revision)
		}
		if h, ok := r.Cache.get(key); ok {
			out[p.Component] = h
			continue
		}
		_, h, err := r.generate(ctx, repo, req)
		if unavailable(err) {
			return nil, fmt.Errorf("the repo-server: %w", err)
		}
		if err != nil {
			return nil, kernel.Refuse(ReasonRenderFailed, "component %s does not render: %v", p.Component, err)
		}
		r.Cache.put(key, h)
		out[p.Component] = h
	}
	return out, nil
}
