package shard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithoutPruning(t *testing.T) {
	for name, c := range map[string]struct{ in, want []string }{
		"none":                                {nil, nil},
		"Argo CD's resources finalizer":       {[]string{"resources-finalizer.argocd.argoproj.io"}, nil},
		"its background and foreground forms": {[]string{"resources-finalizer.argocd.argoproj.io/background", "resources-finalizer.argocd.argoproj.io/foreground"}, nil},
		"others are kept":                     {[]string{"example.com/keep", "resources-finalizer.argocd.argoproj.io", "post-delete-finalizer.argocd.argoproj.io"}, []string{"example.com/keep"}},
		"post-delete hooks do not run":        {[]string{"post-delete-finalizer.argocd.argoproj.io", "post-delete-finalizer.argocd.argoproj.io/cleanup"}, nil},
		"a look-alike is kept":                {[]string{"resources-finalizer.argocd.argoproj.io-not"}, []string{"resources-finalizer.argocd.argoproj.io-not"}},
	} {
		assert.Equal(t, c.want, withoutPruning(c.in), name)
	}
}
