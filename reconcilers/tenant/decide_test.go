package tenant

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Which of a tenant's projects may go (grace period over), and how long
// until the next one may.
func TestExpired(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const grace = 30 * time.Second
	project := func(uid string, age time.Duration, mut func(*argov1alpha1.AppProject)) argov1alpha1.AppProject {
		p := argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{
			Name: argocd.ProjectName(uid), Labels: map[string]string{ownership.LabelOwnerUID: uid},
			CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if mut != nil {
			mut(&p)
		}
		return p
	}
	deleting := func(p *argov1alpha1.AppProject) { p.DeletionTimestamp = &metav1.Time{Time: now} }
	misnamed := func(p *argov1alpha1.AppProject) { p.Name = "someone-elses" }
	cases := []struct {
		name     string
		projects []argov1alpha1.AppProject
		want     []string
		wait     time.Duration
	}{
		{name: "none"},
		{name: "old: goes", projects: []argov1alpha1.AppProject{project("a", time.Minute, nil)}, want: []string{argocd.ProjectName("a")}},
		{name: "exactly at the grace period: goes", projects: []argov1alpha1.AppProject{project("a", grace, nil)}, want: []string{argocd.ProjectName("a")}},
		{name: "young: waits the rest of its grace", projects: []argov1alpha1.AppProject{project("a", 10*time.Second, nil)}, wait: 20 * time.Second},
		{name: "the longest wait of several", projects: []argov1alpha1.AppProject{
			project("a", 25*time.Second, nil), project("b", 5*time.Second, nil), project("c", time.Hour, nil)},
			want: []string{argocd.ProjectName("c")}, wait: 25 * time.Second},
		{name: "being deleted: left alone", projects: []argov1alpha1.AppProject{project("a", time.Hour, deleting)}},
		{name: "not named for its label: never ours to delete", projects: []argov1alpha1.AppProject{project("a", time.Hour, misnamed)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unused, wait := expired(tc.projects, grace, now)
			var names []string
			for _, p := range unused {
				names = append(names, p.Name)
			}
			assert.Equal(t, tc.want, names)
			assert.Equal(t, tc.wait, wait)
		})
	}
}
