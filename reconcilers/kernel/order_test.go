package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func TestOlder(t *testing.T) {
	obj := func(name string, sec int64) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}
	}
	cases := map[string]struct {
		a, b *metav1.ObjectMeta
		want bool
	}{
		"created earlier":           {obj("z", 1), obj("a", 2), true},
		"created later":             {obj("a", 2), obj("z", 1), false},
		"same second, smaller name": {obj("a", 1), obj("b", 1), true},
		"same second, larger name":  {obj("b", 1), obj("a", 1), false},
		"itself":                    {obj("a", 1), obj("a", 1), false},
		"the epoch before anything": {obj("b", 0), obj("a", 1), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, kernel.Older(tc.a, tc.b))
		})
	}
}
