package sharding

import "testing"

func TestShardDecide(t *testing.T) {
	label := func(v string) map[string]string { return map[string]string{LabelArgoCDInstance: v} }
	held := func(v string) map[string]string { return map[string]string{AnnotationServedBy: v} }
	cases := []struct {
		name            string
		serveUnlabelled bool
		labels, annots  map[string]string
		want            Action
	}{
		{"labelled ours, held by us", false, label("a"), held("a"), Serve},
		{"labelled ours, held by nobody: claim", false, label("a"), nil, Claim},
		{"labelled ours, still held by the old instance: wait", false, label("a"), held("b"), Wait},
		{"moved away, held by us: release", false, label("b"), held("a"), Release},
		{"another's, held by it", false, label("b"), held("b"), Ignore},
		{"another's, held by nobody yet", false, label("b"), nil, Ignore},
		{"unlabelled, we are not the default", false, nil, nil, Ignore},
		{"unlabelled, we are the default: claim", true, nil, nil, Claim},
		{"unlabelled, we are the default and hold it", true, nil, held("a"), Serve},
		{"labelled away from the default: release", true, label("b"), held("a"), Release},
		{"unlabelled, held by another default: wait", true, nil, held("b"), Wait},
		{"unlabelled, no default, we still hold it: release", false, nil, held("a"), Release},
		// An empty label is a label: served by no instance (the "none" of a move).
		{"empty label is nobody's, even for the default", true, label(""), held("a"), Release},
	}
	for _, c := range cases {
		s := &Shard{Instance: "a", ServeUnlabelled: c.serveUnlabelled}
		if got := s.Decide(c.labels, c.annots); got != c.want {
			t.Errorf("%s: Decide = %v, want %v", c.name, got, c.want)
		}
	}
}
