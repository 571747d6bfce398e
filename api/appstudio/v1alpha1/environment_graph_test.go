package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// envs makes Environments from "name<parent" pairs ("name" alone: no parent).
func envs(specs ...[2]string) []as.Environment {
	var out []as.Environment
	for _, s := range specs {
		out = append(out, as.Environment{ObjectMeta: metav1.ObjectMeta{Name: s[0]}, Spec: as.EnvironmentSpec{ParentEnvironment: s[1]}})
	}
	return out
}

func steps(names []string, depths ...int) []as.EnvironmentStep {
	var out []as.EnvironmentStep
	for i, n := range names {
		out = append(out, as.EnvironmentStep{Name: n, Depth: depths[i]})
	}
	return out
}

func TestEnvironmentGraph(t *testing.T) {
	cases := map[string]struct {
		envs         []as.Environment
		roots        []string
		children     map[string][]string
		parents      map[string]string
		breadthFirst []as.EnvironmentStep
		depthFirst   []as.EnvironmentStep
	}{
		"empty": {},
		"a chain given out of order": {
			envs:         envs([2]string{"prod", "staging"}, [2]string{"dev", ""}, [2]string{"staging", "dev"}),
			roots:        []string{"dev"},
			children:     map[string][]string{"dev": {"staging"}, "staging": {"prod"}, "prod": nil},
			parents:      map[string]string{"dev": "", "staging": "dev", "prod": "staging"},
			breadthFirst: steps([]string{"dev", "staging", "prod"}, 0, 1, 2),
			depthFirst:   steps([]string{"dev", "staging", "prod"}, 0, 1, 2),
		},
		"a tree: breadth first groups by level, depth first by subtree; children by name": {
			envs: envs([2]string{"dev", ""}, [2]string{"stage-b", "dev"}, [2]string{"stage-a", "dev"},
				[2]string{"prod-b", "stage-b"}, [2]string{"prod-a", "stage-a"}),
			roots:        []string{"dev"},
			children:     map[string][]string{"dev": {"stage-a", "stage-b"}},
			breadthFirst: steps([]string{"dev", "stage-a", "stage-b", "prod-a", "prod-b"}, 0, 1, 1, 2, 2),
			depthFirst:   steps([]string{"dev", "stage-a", "prod-a", "stage-b", "prod-b"}, 0, 1, 2, 1, 2),
		},
		"a missing parent, a self parent and a two-cycle": {
			envs: envs([2]string{"prod", "staging"}, [2]string{"qa", "dev"}, [2]string{"staging", "dev"}, [2]string{"dev", ""},
				[2]string{"orphan", "gone"}, [2]string{"x", "y"}, [2]string{"y", "x"}, [2]string{"self", "self"}),
			roots:        []string{"dev", "orphan", "self"},
			children:     map[string][]string{"dev": {"qa", "staging"}, "x": {"y"}, "y": {"x"}, "self": nil, "gone": {"orphan"}},
			parents:      map[string]string{"orphan": "", "self": "", "x": "y", "y": "x", "unknown": ""},
			breadthFirst: steps([]string{"dev", "orphan", "self", "qa", "staging", "prod", "x", "y"}, 0, 0, 0, 1, 1, 2, 0, 1),
			depthFirst:   steps([]string{"dev", "qa", "staging", "prod", "orphan", "self", "x", "y"}, 0, 1, 1, 2, 0, 0, 0, 1),
		},
		"a cycle below nothing and a root beside it": {
			envs:         envs([2]string{"c", "a"}, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"z", ""}),
			roots:        []string{"z"},
			breadthFirst: steps([]string{"z", "a", "c", "b"}, 0, 0, 1, 2),
			depthFirst:   steps([]string{"z", "a", "c", "b"}, 0, 0, 1, 2),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := as.NewEnvironmentGraph(tc.envs)
			assert.Equal(t, tc.roots, g.Roots())
			for env, want := range tc.children {
				assert.Equal(t, want, g.Children(env), "children of %s", env)
			}
			for env, want := range tc.parents {
				assert.Equal(t, want, g.Parent(env), "parent of %s", env)
			}
			assert.Equal(t, tc.breadthFirst, g.BreadthFirst())
			assert.Equal(t, tc.depthFirst, g.DepthFirst())
			for _, e := range tc.envs {
				assert.Same(t, &tc.envs[indexOf(tc.envs, e.Name)], g.Environment(e.Name))
			}
			assert.Nil(t, g.Environment("nowhere"))
		})
	}
}

func indexOf(envs []as.Environment, name string) int {
	for i := range envs {
		if envs[i].Name == name {
			return i
		}
	}
	return -1
}
