package v1alpha1

import "sort"

// EnvironmentGraph is the digraph of one namespace's Environments along
// spec.parentEnvironment: the one reading of it for the reconcilers, the UI
// and the CLI. An Environment whose parent is empty, itself or not among them
// is a root. A parent cycle has no root; walks still reach its members, once.
// +kubebuilder:object:generate=false
type EnvironmentGraph struct {
	names    []string // sorted
	byName   map[string]*Environment
	children map[string][]string // sorted
}

// EnvironmentStep is one Environment of a walk and its depth: the number of
// its ancestors before it in the walk (0 for a root or where a cycle is entered).
// +kubebuilder:object:generate=false
type EnvironmentStep struct {
	Name  string
	Depth int
}

// NewEnvironmentGraph reads the digraph of envs (one namespace's); it keeps
// pointers into envs.
func NewEnvironmentGraph(envs []Environment) *EnvironmentGraph {
	g := &EnvironmentGraph{byName: map[string]*Environment{}, children: map[string][]string{}}
	for i := range envs {
		g.byName[envs[i].Name] = &envs[i]
		g.names = append(g.names, envs[i].Name)
	}
	sort.Strings(g.names)
	for _, name := range g.names {
		if p := g.byName[name].Spec.ParentEnvironment; p != "" && p != name {
			g.children[p] = append(g.children[p], name)
		}
	}
	return g
}

// Environment is the named Environment, or nil.
func (g *EnvironmentGraph) Environment(name string) *Environment { return g.byName[name] }

// Parent is the name of the Environment's parent in the graph, "" for a root.
func (g *EnvironmentGraph) Parent(name string) string {
	e := g.byName[name]
	if e == nil {
		return ""
	}
	if p := e.Spec.ParentEnvironment; p != name && g.byName[p] != nil {
		return p
	}
	return ""
}

// Children are the Environments that name as their parent (not themselves),
// by name. name need not be among them (a cache may not show it yet); the
// walks only visit the children of Environments they reach.
func (g *EnvironmentGraph) Children(name string) []string { return g.children[name] }

// Roots are the Environments without a parent in the graph, by name.
func (g *EnvironmentGraph) Roots() []string {
	var out []string
	for _, name := range g.names {
		if g.Parent(name) == "" {
			out = append(out, name)
		}
	}
	return out
}

// BreadthFirst walks level by level from the roots (children grouped by
// parent, by name), then enters each cycle at its member first by name.
func (g *EnvironmentGraph) BreadthFirst() []EnvironmentStep {
	var out []EnvironmentStep
	seen := map[string]bool{}
	walk := func(level []string) {
		for depth := 0; len(level) > 0; depth++ {
			var next []string
			for _, name := range level {
				if !seen[name] {
					seen[name] = true
					out = append(out, EnvironmentStep{Name: name, Depth: depth})
					next = append(next, g.children[name]...)
				}
			}
			level = next
		}
	}
	walk(g.Roots())
	for _, name := range g.names {
		walk([]string{name})
	}
	return out
}

// DepthFirst walks each root's subtree before the next root's, parents before
// children (by name), then enters each cycle at its member first by name.
func (g *EnvironmentGraph) DepthFirst() []EnvironmentStep {
	var out []EnvironmentStep
	seen := map[string]bool{}
	var walk func(name string, depth int)
	walk = func(name string, depth int) {
		if seen[name] {
			return
		}
		seen[name] = true
		out = append(out, EnvironmentStep{Name: name, Depth: depth})
		for _, child := range g.children[name] {
			walk(child, depth+1)
		}
	}
	for _, name := range g.Roots() {
		walk(name, 0)
	}
	for _, name := range g.names {
		walk(name, 0)
	}
	return out
}
