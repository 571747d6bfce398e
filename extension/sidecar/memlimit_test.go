package sidecar

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGCPercent(t *testing.T) {
	for name, tc := range map[string]struct {
		env     string
		percent int
		want    int
		ok      bool
	}{
		"the default":          {"", DefaultGCPercent, DefaultGCPercent, true},
		"the flag":             {"", 80, 80, true},
		"GOGC wins":            {"100", 50, 0, false},
		"GOGC=off wins":        {"off", 50, 0, false},
		"0 sets none":          {"", 0, 0, false},
		"a negative sets none": {"", -1, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := gcPercent(tc.env, tc.percent)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.ok, ok)
		})
	}
}

func TestContainerLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		explicit, env, cgroup string
		want                  int64
		from                  string
	}{
		"nothing known":             {"", "", "", 0, ""},
		"cgroup v2 without a limit": {"", "", "max\n", 0, ""},
		"cgroup v1 without a limit": {"", "", "9223372036854771712\n", 0, ""},
		"cgroup v2":                 {"", "", "805306368\n", 768 << 20, "cgroup"},
		"the Deployment's env":      {"", "805306368", "max", 768 << 20, EnvMemoryLimit},
		"the flag first":            {"320Mi", "805306368", "805306368", 320 << 20, "flag"},
		"a bad flag is skipped":     {"lots", "805306368", "", 768 << 20, EnvMemoryLimit},
		"a zero env is none":        {"", "0", "", 0, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, from := containerLimit(tc.explicit, tc.env, tc.cgroup)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.from, from)
		})
	}
}

func TestSoftLimit(t *testing.T) {
	assert.Equal(t, int64(768<<20)*9/10, softLimit(768<<20, 90), "90% of 768 MiB")
	assert.Equal(t, int64(0), softLimit(0, 90))
	assert.Equal(t, int64(0), softLimit(768<<20, 0))
	assert.Equal(t, int64(0), softLimit(768<<20, 101))
	assert.Equal(t, int64(768<<20), softLimit(768<<20, 100))
}

func TestStripApplication(t *testing.T) {
	app := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd"}}},
		Spec:       argov1alpha1.ApplicationSpec{Project: "p"},
		Status: argov1alpha1.ApplicationStatus{History: argov1alpha1.RevisionHistories{{ID: 1, Revision: "abc"}},
			Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced}},
	}
	out, err := stripApplication(app)
	assert.NoError(t, err)
	got := out.(*argov1alpha1.Application)
	assert.Nil(t, got.ManagedFields)
	assert.Nil(t, got.Status.History)
	assert.Equal(t, "p", got.Spec.Project, "what is read stays")
	assert.Equal(t, argov1alpha1.SyncStatusCodeSynced, got.Status.Sync.Status)

	// Any other object only loses its managedFields.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	out, err = stripApplication(ns)
	assert.NoError(t, err)
	assert.Nil(t, out.(*corev1.Namespace).ManagedFields)
}
