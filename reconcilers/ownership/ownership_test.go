package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestOwner(t *testing.T) {
	obj := func(mutate func(l, a map[string]string)) *metav1.ObjectMeta {
		l, a := Meta(KindBinding, "jane", "b1", "uid-1")
		if mutate != nil {
			mutate(l, a)
		}
		return &metav1.ObjectMeta{Labels: l, Annotations: a}
	}
	owner, ok := Owner(obj(nil), KindBinding)
	assert.True(t, ok)
	assert.Equal(t, types.NamespacedName{Namespace: "jane", Name: "b1"}, owner)
	for name, mutate := range map[string]func(l, a map[string]string){
		"another tenant's name": func(_, a map[string]string) { a[AnnotationOwnerName] = "joe/b1" },
		"not ours":              func(l, _ map[string]string) { l[LabelManagedBy] = "someone" },
		"no uid":                func(l, _ map[string]string) { delete(l, LabelOwnerUID) },
		"no name":               func(_, a map[string]string) { a[AnnotationOwnerName] = "jane/" },
		"no slash":              func(_, a map[string]string) { a[AnnotationOwnerName] = "jane" },
	} {
		_, ok := Owner(obj(mutate), KindBinding)
		assert.False(t, ok, name)
	}
	_, ok = Owner(obj(nil), KindGitOpsDeployment)
	assert.False(t, ok, "another kind")
}
