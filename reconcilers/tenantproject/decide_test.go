package tenantproject

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSourceRepos(t *testing.T) {
	for name, tc := range map[string]struct {
		have, requested []string
		exists          bool
		used, pending   []string
		want            []string
		wantRecompute   bool
		wantAdded       []string
	}{
		"a caller adds to what the project allows, used or not": {
			have: []string{"a", "b"}, requested: []string{"c"}, exists: true,
			want: []string{"a", "b", "c"}, wantAdded: []string{"c"}},
		"a caller's repository already allowed adds nothing": {
			have: []string{"a", "b"}, requested: []string{"b"}, exists: true,
			want: []string{"a", "b"}},
		"a caller making the project: what is used, pending and requested": {
			requested: []string{"c", "c", ""}, used: []string{"a"}, pending: []string{"b"},
			want: []string{"a", "b", "c"}, wantRecompute: true, wantAdded: []string{"c"}},
		"a caller finding the project being deleted makes it anew": {
			have: []string{"old"}, requested: []string{"c"}, exists: false,
			want: []string{"c"}, wantRecompute: true, wantAdded: []string{"c"}},
		"the tenant's pass drops what is neither used nor pending": {
			have: []string{"a", "b", "gone"}, exists: true, used: []string{"a"}, pending: []string{"b"},
			want: []string{"a", "b"}, wantRecompute: true},
		"the tenant's pass with nothing used nor pending allows nothing": {
			have: []string{"a"}, exists: true,
			want: nil, wantRecompute: true},
		"the tenant's pass keeps a repository used by several": {
			have: []string{"a"}, exists: true, used: []string{"a", "a"},
			want: []string{"a"}, wantRecompute: true},
	} {
		assert.Equal(t, tc.wantRecompute, recompute(tc.exists, tc.requested), name)
		assert.Equal(t, tc.want, sourceRepos(tc.have, tc.requested, tc.exists, tc.used, tc.pending), name)
		assert.Equal(t, tc.wantAdded, added(tc.have, tc.requested, tc.exists), name)
	}
}

func TestPending(t *testing.T) {
	const grace = 30 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		added map[string]time.Duration // repository -> added this long before now
		used  []string
		want  []string
	}{
		"nothing pending":                      {used: []string{"a"}, want: []string{}},
		"kept until an Application uses it":    {added: map[string]time.Duration{"a": time.Second, "b": time.Second}, used: []string{"b"}, want: []string{"a"}},
		"kept within the grace":                {added: map[string]time.Duration{"a": grace - time.Millisecond}, want: []string{"a"}},
		"forgotten once the grace is over":     {added: map[string]time.Duration{"a": grace, "b": 0}, want: []string{"b"}},
		"sorted, whatever the order of adding": {added: map[string]time.Duration{"c": 0, "a": 0, "b": 0}, want: []string{"a", "b", "c"}},
	} {
		p := pending{}
		for r, ago := range tc.added {
			p.add([]string{r}, t0.Add(-ago))
		}
		p.settle(tc.used, t0, grace)
		assert.Equal(t, tc.want, p.list(), name)
	}
	// Adding again starts the grace again.
	p := pending{}
	p.add([]string{"a"}, t0)
	p.add([]string{"a"}, t0.Add(grace/2))
	p.settle(nil, t0.Add(grace), grace)
	assert.Equal(t, []string{"a"}, p.list())
}
