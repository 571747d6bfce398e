package tenantproject

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

func TestStale(t *testing.T) {
	project := func(uid string) *argov1alpha1.AppProject {
		return &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ownership.LabelOwnerUID: uid}}}
	}
	live := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "u1"}}
	deleting := live.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	recreated := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "u2"}}

	assert.False(t, Stale(project("u1"), live), "the live tenant's project")
	assert.True(t, Stale(project("u1"), nil), "the namespace is gone")
	assert.True(t, Stale(project("u1"), deleting), "the namespace is being deleted")
	assert.True(t, Stale(project("u1"), recreated), "a namespace of the same name, another UID")
	assert.True(t, Stale(project(""), live), "no owner UID: no tenant")
	assert.False(t, Stale(project("u2"), recreated), "the new tenant's project")
}
