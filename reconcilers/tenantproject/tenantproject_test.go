package tenantproject

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// MadeFor trusts labels only in the tenant's own project (issue 21).
func TestMadeFor(t *testing.T) {
	app := func(kind string, mutate func(*argov1alpha1.Application)) *argov1alpha1.Application {
		l, a := ownership.Meta(kind, "jane", "web", "uid-web")
		out := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: a},
			Spec: argov1alpha1.ApplicationSpec{Project: argocd.ProjectName("uid-jane")}}
		if mutate != nil {
			mutate(out)
		}
		return out
	}
	for _, kind := range []string{ownership.KindGitOpsDeployment, ownership.KindBinding} {
		got, owner, ok := MadeFor(app(kind, nil), "jane", "uid-jane")
		assert.True(t, ok, kind)
		assert.Equal(t, kind, got)
		assert.Equal(t, types.NamespacedName{Namespace: "jane", Name: "web"}, owner)
	}
	for name, tc := range map[string]struct {
		kind    string
		mutate  func(*argov1alpha1.Application)
		ns, uid string
	}{
		"project default":                {ownership.KindGitOpsDeployment, func(a *argov1alpha1.Application) { a.Spec.Project = "default" }, "jane", "uid-jane"},
		"another tenant's project":       {ownership.KindBinding, func(a *argov1alpha1.Application) { a.Spec.Project = argocd.ProjectName("uid-joe") }, "jane", "uid-jane"},
		"the namespace recreated":        {ownership.KindGitOpsDeployment, nil, "jane", "uid-jane-2"},
		"labelled for another tenant":    {ownership.KindGitOpsDeployment, nil, "joe", "uid-jane"},
		"owner name of another tenant":   {ownership.KindGitOpsDeployment, func(a *argov1alpha1.Application) { a.Annotations[ownership.AnnotationOwnerName] = "joe/web" }, "jane", "uid-jane"},
		"not managed by us":              {ownership.KindGitOpsDeployment, func(a *argov1alpha1.Application) { a.Labels[ownership.LabelManagedBy] = "x" }, "jane", "uid-jane"},
		"an owner kind we do not deploy": {ownership.KindTenant, nil, "jane", "uid-jane"},
		"no owner UID":                   {ownership.KindBinding, func(a *argov1alpha1.Application) { delete(a.Labels, ownership.LabelOwnerUID) }, "jane", "uid-jane"},
		"no namespace UID":               {ownership.KindBinding, func(a *argov1alpha1.Application) { a.Spec.Project = argocd.ProjectName("") }, "jane", ""},
	} {
		_, _, ok := MadeFor(app(tc.kind, tc.mutate), tc.ns, tc.uid)
		assert.False(t, ok, name)
	}
	apps := []argov1alpha1.Application{*app(ownership.KindGitOpsDeployment, nil),
		*app(ownership.KindGitOpsDeployment, func(a *argov1alpha1.Application) { a.Spec.Project = "default" })}
	assert.Len(t, Made(apps, "jane", "uid-jane"), 1, "only the one in the tenant's project")
}
