package uiproxy

import (
	"net/http"
	"net/url"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/ui-proxy/api"
)

// promotionPath reads the tenant's Environments, the application's bindings
// and their Snapshots, all from the binding's own namespace only.
func (s *Server) promotionPath(r *http.Request, ns string, current *as.SnapshotEnvironmentBinding) ([]EnvironmentState, error) {
	ctx, in := r.Context(), client.InNamespace(ns)
	var envs as.EnvironmentList
	if err := s.Client.List(ctx, &envs, in); err != nil {
		return nil, err
	}
	var bindings as.SnapshotEnvironmentBindingList
	if err := s.Client.List(ctx, &bindings, in); err != nil {
		return nil, err
	}
	var snaps as.SnapshotList
	if err := s.Client.List(ctx, &snaps, in); err != nil {
		return nil, err
	}
	return buildPath(envs.Items, bindings.Items, snaps.Items, current), nil
}

// buildPath lays the Environments out parents first (the graph's breadth
// first walk: roots, including those under a missing parent, then a parent
// cycle's members) with the application's binding in each:
// the current one where it is, else the oldest, as PromotionRuns choose.
func buildPath(envs []as.Environment, bindings []as.SnapshotEnvironmentBinding, snaps []as.Snapshot,
	current *as.SnapshotEnvironmentBinding) []EnvironmentState {
	byEnv := map[string]*as.SnapshotEnvironmentBinding{}
	for i := range bindings {
		b := &bindings[i]
		if b.Spec.Application != current.Spec.Application {
			continue
		}
		have, ok := byEnv[b.Spec.Environment]
		switch {
		case !ok:
			byEnv[b.Spec.Environment] = b
		case have.UID == current.UID:
		case b.UID == current.UID || b.CreationTimestamp.Before(&have.CreationTimestamp):
			byEnv[b.Spec.Environment] = b
		}
	}
	snapshots := map[string]*as.Snapshot{}
	for i := range snaps {
		snapshots[snaps[i].Name] = &snaps[i]
	}

	var out []EnvironmentState
	index := map[string]int{}
	g := as.NewEnvironmentGraph(envs)
	for _, step := range g.BreadthFirst() {
		index[step.Name] = len(out)
		out = append(out, environmentState(g.Environment(step.Name), step.Depth, byEnv[step.Name], snapshots, current))
	}
	for i := range out {
		if p, ok := index[out[i].Parent]; ok && out[i].Binding != "" && out[p].Binding != "" {
			out[i].Changed = changedImages(out[p].Components, out[i].Components)
		}
	}
	return out
}

func environmentState(e *as.Environment, depth int, b *as.SnapshotEnvironmentBinding, snapshots map[string]*as.Snapshot,
	current *as.SnapshotEnvironmentBinding) EnvironmentState {
	st := EnvironmentState{Name: e.Name, DisplayName: e.Spec.DisplayName, Parent: e.Spec.ParentEnvironment,
		Strategy: string(e.Spec.DeploymentStrategy), Depth: depth, Current: e.Name == current.Spec.Environment, Gates: e.Spec.Gates}
	if b == nil {
		return st
	}
	st.Binding, st.Snapshot = b.Name, b.Spec.Snapshot
	images := map[string]string{}
	if snap := snapshots[b.Spec.Snapshot]; snap != nil && snap.Spec.Application == b.Spec.Application {
		for _, c := range snap.Spec.Components {
			images[c.Name] = c.ContainerImage
		}
	}
	seen := map[string]bool{}
	for _, c := range b.Status.GitOpsDeployments {
		seen[c.ComponentName] = true
		st.Components = append(st.Components, ComponentState{Name: c.ComponentName, Sync: c.GitOpsDeploymentSyncStatus,
			Health: c.GitOpsDeploymentHealthStatus, Commit: c.GitOpsDeploymentCommitID, Image: images[c.ComponentName]})
	}
	// Components not deployed yet still show the image they are to run.
	for _, c := range b.Spec.Components {
		if !seen[c.Name] {
			seen[c.Name] = true
			st.Components = append(st.Components, ComponentState{Name: c.Name, Image: images[c.Name]})
		}
	}
	sort.Slice(st.Components, func(i, j int) bool { return st.Components[i].Name < st.Components[j].Name })
	return st
}

// changedImages are the components whose image differs between two
// Environments, or that only one of them runs.
func changedImages(parent, child []ComponentState) []string {
	img := map[string]string{}
	for _, c := range parent {
		img[c.Name] = c.Image
	}
	var out []string
	for _, c := range child {
		if p, ok := img[c.Name]; !ok || p != c.Image {
			out = append(out, c.Name)
		}
		delete(img, c.Name)
	}
	for name := range img {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// syncRuns are the deployment's latest SyncRuns in its namespace.
func (s *Server) syncRuns(r *http.Request, ns, deployment string) ([]SyncRun, error) {
	var list v1.GitOpsDeploymentSyncRunList
	if err := s.Client.List(r.Context(), &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	newestFirst(list.Items, func(sr *v1.GitOpsDeploymentSyncRun) *metav1.Time { return &sr.CreationTimestamp })
	var out []SyncRun
	for _, sr := range list.Items {
		if sr.Spec.GitopsDeploymentName != deployment || len(out) == maxSyncRuns {
			continue
		}
		out = append(out, api.SyncRunOf(&sr))
	}
	return out, nil
}

// withoutUserInfo drops user:password@ from a URL: never shown in the UI.
func withoutUserInfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// newestFirst sorts items by creation time, newest first.
func newestFirst[T any](items []T, created func(*T) *metav1.Time) {
	sort.SliceStable(items, func(i, j int) bool { return created(&items[j]).Before(created(&items[i])) })
}
