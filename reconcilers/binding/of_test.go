package binding

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func seb(name, app, env string, created int64) appstudiov1alpha1.SnapshotEnvironmentBinding {
	return appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.Unix(created, 0)},
		Spec:       appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: app, Environment: env},
	}
}

func TestOfIsTheOldestOfThePair(t *testing.T) {
	list := []appstudiov1alpha1.SnapshotEnvironmentBinding{
		seb("young", "shop", "prod", 200), seb("other-env", "shop", "dev", 50), seb("other-app", "web", "prod", 50),
		seb("old-b", "shop", "prod", 100), seb("old-a", "shop", "prod", 100),
	}
	assert.Equal(t, "old-a", Of(list, "shop", "prod").Name, "the oldest; in one second, the name decides")
	assert.Equal(t, "other-env", Of(list, "shop", "dev").Name)
	assert.Nil(t, Of(list, "shop", "qa"))

	assert.Equal(t, "old-a", Duplicate(list, &list[0]).Name, "a younger one is a duplicate of the one that deploys")
	assert.Nil(t, Duplicate(list, &list[4]), "the one that deploys is none")
	fresh := seb("fresh", "shop", "qa", 300)
	assert.Nil(t, Duplicate(list, &fresh), "alone, even when the cache does not list it yet")
	early := seb("early", "shop", "prod", 10)
	assert.Nil(t, Duplicate(list, &early), "an older one the cache does not list yet is no duplicate")
}

func TestGeneratedName(t *testing.T) {
	assert.Equal(t, "shop-prod-generated-binding", GeneratedName("shop", "prod"))
}
