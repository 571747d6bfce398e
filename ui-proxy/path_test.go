package uiproxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func env(name, parent string) as.Environment {
	return as.Environment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: as.EnvironmentSpec{ParentEnvironment: parent}}
}

func names(path []EnvironmentState) (out []string) {
	for _, e := range path {
		out = append(out, e.Name)
	}
	return out
}

// Parents before children, level by level; a cycle or a missing parent still
// shows every Environment once.
func TestBuildPathOrder(t *testing.T) {
	cur := &as.SnapshotEnvironmentBinding{Spec: as.SnapshotEnvironmentBindingSpec{Application: "a", Environment: "dev"}}
	path := buildPath([]as.Environment{env("prod", "staging"), env("qa", "dev"), env("staging", "dev"), env("dev", ""),
		env("orphan", "gone"), env("x", "y"), env("y", "x"), env("self", "self")}, nil, nil, cur)
	assert.Equal(t, []string{"dev", "orphan", "self", "qa", "staging", "prod", "x", "y"}, names(path))
	assert.Equal(t, []int{0, 0, 0, 1, 1, 2, 0, 1}, []int{path[0].Depth, path[1].Depth, path[2].Depth, path[3].Depth, path[4].Depth,
		path[5].Depth, path[6].Depth, path[7].Depth})
	assert.True(t, path[0].Current)
}

// The current binding wins in its Environment, else the oldest; another
// application's bindings and Snapshots are not used.
func TestBuildPathBindings(t *testing.T) {
	old, young := metav1.Unix(100, 0), metav1.Unix(200, 0)
	b := func(name, app, envName, snap string, created metav1.Time) as.SnapshotEnvironmentBinding {
		return as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: created},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: app, Environment: envName, Snapshot: snap,
				Components: []as.BindingComponent{{Name: "web"}}}}
	}
	bindings := []as.SnapshotEnvironmentBinding{
		b("dev-young", "a", "dev", "s2", young), b("dev-old", "a", "dev", "s1", old),
		b("stage-young", "a", "staging", "s2", young), b("stage-old", "a", "staging", "s1", old),
		b("other-app", "b", "prod", "s1", old),
	}
	snaps := []as.Snapshot{
		{ObjectMeta: metav1.ObjectMeta{Name: "s1"}, Spec: as.SnapshotSpec{Application: "a", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "web:1"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "s2"}, Spec: as.SnapshotSpec{Application: "a", Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "web:2"}}}},
	}
	cur := &bindings[0]
	path := buildPath([]as.Environment{env("dev", ""), env("staging", "dev"), env("prod", "staging")}, bindings, snaps, cur)
	assert.Equal(t, "dev-young", path[0].Binding, "the current binding")
	assert.Equal(t, "stage-old", path[1].Binding, "the oldest")
	assert.Empty(t, path[2].Binding, "another application's binding")
	assert.Equal(t, []ComponentState{{Name: "web", Image: "web:2"}}, path[0].Components)
	assert.Equal(t, []string{"web"}, path[1].Changed)
	assert.Empty(t, path[0].Changed)
}

func TestChangedImages(t *testing.T) {
	parent := []ComponentState{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}, {Name: "gone", Image: "g:1"}}
	child := []ComponentState{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:2"}, {Name: "new", Image: "n:1"}}
	assert.Equal(t, []string{"b", "gone", "new"}, changedImages(parent, child))
	assert.Empty(t, changedImages(parent, parent))
}

func TestWithoutUserInfo(t *testing.T) {
	assert.Equal(t, "https://git.example.test/r.git", withoutUserInfo("https://u:p@git.example.test/r.git"))
	assert.Equal(t, "git@github.com:o/r.git", withoutUserInfo("git@github.com:o/r.git"))
}
