package kernel

import "testing"

func TestShardDecide(t *testing.T) {
	label := func(v string) map[string]string { return map[string]string{LabelArgoCDInstance: v} }
	held := func(v string) map[string]string { return map[string]string{AnnotationServedBy: v} }
	cases := []struct {
		name            string
		serveUnlabelled bool
		labels, annots  map[string]string
		want            ShardAction
	}{
		{"labelled ours, held by us", false, label("a"), held("a"), ShardServe},
		{"labelled ours, held by nobody: claim", false, label("a"), nil, ShardClaim},
		{"labelled ours, still held by the old instance: wait", false, label("a"), held("b"), ShardWait},
		{"moved away, held by us: release", false, label("b"), held("a"), ShardRelease},
		{"another's, held by it", false, label("b"), held("b"), ShardIgnore},
		{"another's, held by nobody yet", false, label("b"), nil, ShardIgnore},
		{"unlabelled, we are not the default", false, nil, nil, ShardIgnore},
		{"unlabelled, we are the default: claim", true, nil, nil, ShardClaim},
		{"unlabelled, we are the default and hold it", true, nil, held("a"), ShardServe},
		{"labelled away from the default: release", true, label("b"), held("a"), ShardRelease},
		{"unlabelled, held by another default: wait", true, nil, held("b"), ShardWait},
		{"unlabelled, no default, we still hold it: release", false, nil, held("a"), ShardRelease},
		// An empty label is a label: served by no instance (the "none" of a move).
		{"empty label is nobody's, even for the default", true, label(""), held("a"), ShardRelease},
	}
	for _, c := range cases {
		s := &Shard{Instance: "a", ServeUnlabelled: c.serveUnlabelled}
		if got := s.Decide(c.labels, c.annots); got != c.want {
			t.Errorf("%s: Decide = %v, want %v", c.name, got, c.want)
		}
	}
}
