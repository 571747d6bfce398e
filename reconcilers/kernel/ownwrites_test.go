package kernel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

func TestOwnWrites(t *testing.T) {
	var w OwnWrites
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	other := types.NamespacedName{Namespace: "ns", Name: "b"}
	assert.False(t, w.Behind(key, "1"), "nothing written: the cache is not behind")
	w.Replaced(key, "1") // our write 1 -> 2
	w.Replaced(key, "2") // and 2 -> 3
	assert.True(t, w.Behind(key, "1"))
	assert.True(t, w.Behind(key, "2"))
	assert.False(t, w.Behind(other, "1"), "another object")
	assert.False(t, w.Behind(key, "3"), "our last write is cached")
	assert.False(t, w.Behind(key, "1"), "forgotten once the cache caught up")
	w.Replaced(key, "7")
	w.Forget(key)
	assert.False(t, w.Behind(key, "7"), "forgotten when gone")
}
