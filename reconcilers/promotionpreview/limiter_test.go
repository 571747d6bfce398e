package promotionpreview

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a Limiter's clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) tick(d time.Duration) { c.t = c.t.Add(d) }
func newLimiter(c *clock, per, total int) *Limiter {
	return &Limiter{PerTenant: per, Total: total, Now: c.now}
}

func TestLimiterBounds(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLimiter(c, 2, 3)
	assert.True(t, l.TryAcquire("a"))
	assert.True(t, l.TryAcquire("a"))
	assert.False(t, l.TryAcquire("a"), "per namespace")
	assert.True(t, l.TryAcquire("b"))
	assert.False(t, l.TryAcquire("c"), "in all")
	l.Release("b")
	assert.True(t, l.TryAcquire("c"))
}

// Issue 33: one tenant with four namespaces held all 8 places. A namespace
// that waits with none running now gets the next free place before any
// namespace that already has one, however often that one asks.
func TestLimiterIsFairAcrossNamespaces(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLimiter(c, 2, 8)
	for i := 1; i <= 4; i++ {
		ns := fmt.Sprintf("big-%d", i)
		require.True(t, l.TryAcquire(ns))
		require.True(t, l.TryAcquire(ns))
	}
	assert.False(t, l.TryAcquire("small"), "all 8 places taken")
	c.tick(time.Second)
	l.Release("big-1")
	// big-1 (one running) asks first and again: the place is small's.
	for range 3 {
		assert.False(t, l.TryAcquire("big-1"), "a namespace with one running goes after one with none")
		c.tick(500 * time.Millisecond)
	}
	assert.True(t, l.TryAcquire("small"))
	// Nobody with fewer waits: big-1 gets the next place.
	l.Release("big-2")
	assert.True(t, l.TryAcquire("big-1"))
}

// Among namespaces with as many running, the one waiting longest goes first.
func TestLimiterServesTheLongestWaiting(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLimiter(c, 1, 1)
	require.True(t, l.TryAcquire("holder"))
	assert.False(t, l.TryAcquire("first"))
	c.tick(time.Second)
	assert.False(t, l.TryAcquire("second"))
	l.Release("holder")
	assert.False(t, l.TryAcquire("second"), "first waited longer")
	assert.False(t, l.TryAcquire("holder"), "holder asks again: it queues behind")
	assert.True(t, l.TryAcquire("first"))
	l.Release("first")
	assert.True(t, l.TryAcquire("second"))
}

// A namespace that stopped asking (its preview deleted) does not hold the
// queue for long.
func TestLimiterForgetsStaleWaiters(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLimiter(c, 2, 2)
	require.True(t, l.TryAcquire("a"))
	require.True(t, l.TryAcquire("a"))
	assert.False(t, l.TryAcquire("gone"))
	l.Release("a")
	assert.False(t, l.TryAcquire("a"), "gone still waits")
	c.tick(staleWait + time.Second)
	assert.True(t, l.TryAcquire("a"), "gone stopped asking")
}

// A waiting namespace already at its own limit does not hold back others.
func TestLimiterIgnoresWaitersAtTheirLimit(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLimiter(c, 1, 3)
	require.True(t, l.TryAcquire("a"))
	assert.False(t, l.TryAcquire("a"), "a at its limit waits")
	assert.True(t, l.TryAcquire("b"))
	assert.True(t, l.TryAcquire("c"))
}
