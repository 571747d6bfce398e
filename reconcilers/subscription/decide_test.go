package subscription

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestPickTag(t *testing.T) {
	tags := []string{"latest", "1.0.0", "v1.2.0", "1.2.0", "1.10.1", "2.0.0", "1.11.0-rc.1", "main-20260101", "main-20260301", "main-2026030", "feature-x"}
	for _, tc := range []struct {
		name string
		img  as.ImageSubscription
		want string
		ok   bool
	}{
		{"highest in range, numerically not lexically", as.ImageSubscription{Semver: ">=1.0.0 <2.0.0"}, "1.10.1", true},
		{"prereleases only when the range asks", as.ImageSubscription{Semver: ">=1.11.0-0 <1.12.0-0"}, "1.11.0-rc.1", true},
		{"no prerelease otherwise", as.ImageSubscription{Semver: ">=1.11.0 <1.12.0"}, "", false},
		{"a tilde range", as.ImageSubscription{Semver: "~1.2"}, "v1.2.0", true},
		{"nothing in range", as.ImageSubscription{Semver: ">=3"}, "", false},
		{"regex: the lexically last match", as.ImageSubscription{Regex: `^main-\d{8}$`}, "main-20260301", true},
		{"regex without a match", as.ImageSubscription{Regex: `^release-`}, "", false},
		{"a moving tag that exists", as.ImageSubscription{Tag: "latest"}, "latest", true},
		{"a moving tag that does not", as.ImageSubscription{Tag: "stable"}, "stable", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pickTag(&tc.img, tags)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.want, got)
			}
		})
	}
	// The registry's order does not change the pick.
	reversed := make([]string, len(tags))
	for i, tag := range tags {
		reversed[len(tags)-1-i] = tag
	}
	got, _ := pickTag(&as.ImageSubscription{Semver: "~1.2"}, reversed)
	assert.Equal(t, "v1.2.0", got)
}

func sub(components ...as.ComponentSubscription) *as.SnapshotSubscription {
	return &as.SnapshotSubscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app-sub", Generation: 1},
		Spec:       as.SnapshotSubscriptionSpec{Application: "app", Components: components},
	}
}

func TestValidateRefusesWhatNoPollCanResolve(t *testing.T) {
	img := func(i as.ImageSubscription) as.ComponentSubscription {
		if i.Repository == "" {
			i.Repository = "registry.example.com/team/app"
		}
		return as.ComponentSubscription{Name: "web", Image: &i}
	}
	git := func(g as.GitSubscription) as.ComponentSubscription {
		if g.URL == "" {
			g.URL = "https://git.example.com/team/app"
		}
		return as.ComponentSubscription{Name: "web", Git: &g}
	}
	for _, tc := range []struct {
		name string
		sub  *as.SnapshotSubscription
		msg  string // "" means valid
	}{
		{"a semver policy", sub(img(as.ImageSubscription{Semver: "^1.2"})), ""},
		{"a branch", sub(git(as.GitSubscription{Branch: "main"})), ""},
		{"nothing watched", sub(), "spec.components is empty"},
		{"twice the same component", sub(img(as.ImageSubscription{Tag: "latest"}), img(as.ImageSubscription{Tag: "v1"})), "listed twice"},
		{"neither image nor git", sub(as.ComponentSubscription{Name: "web"}), "set image, git or both"},
		{"two tag policies", sub(img(as.ImageSubscription{Tag: "latest", Regex: "x"})), "exactly one of image.semver"},
		{"no tag policy", sub(img(as.ImageSubscription{})), "exactly one of image.semver"},
		{"a range that is not one", sub(img(as.ImageSubscription{Semver: "one point two"})), "is not a version range"},
		{"an expression that is not one", sub(img(as.ImageSubscription{Regex: "(("})), "not a regular expression"},
		{"another namespace's registry Secret", sub(img(as.ImageSubscription{Tag: "latest", CredentialsSecret: "other-team/regcred"})), "names a Secret of another namespace"},
		{"another namespace's git Secret", sub(git(as.GitSubscription{Branch: "main", CredentialsSecret: "kube-system/creds"})), "names a Secret of another namespace"},
		{"a Secret name no Secret has", sub(img(as.ImageSubscription{Tag: "latest", CredentialsSecret: "Reg Cred"})), "is not the name of a Secret"},
		{"a git URL of another scheme", sub(git(as.GitSubscription{URL: "file:///etc", Branch: "main"})), "git.url must be"},
		{"credentials in the git URL", sub(git(as.GitSubscription{URL: "https://u:p@git.example.com/x", Branch: "main"})), "git.url must be"},
		{"git credentials over http", sub(git(as.GitSubscription{URL: "http://git.example.com/x", Branch: "main", CredentialsSecret: "creds"})), "only sent over https"},
		{"branch and tag", sub(git(as.GitSubscription{Branch: "main", Tag: "v1"})), "exactly one of git.branch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := validate(tc.sub)
			if tc.msg == "" {
				assert.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			assert.Equal(t, as.SubscriptionReasonInvalidSpec, r.Reason)
			assert.Contains(t, r.Message, tc.msg)
		})
	}
	withWebhook := sub(img(as.ImageSubscription{Tag: "latest"}))
	withWebhook.Spec.Webhook = &as.SubscriptionWebhook{SecretName: "other/hook"}
	require.NotNil(t, validate(withWebhook))
	assert.Contains(t, validate(withWebhook).Message, "webhook.secretName")
}

func TestDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { m := metav1.NewTime(t0.Add(d)); return &m }
	polled := func(st as.SnapshotSubscriptionStatus) *as.SnapshotSubscription {
		s := sub()
		st.ObservedGeneration = 1
		s.Status = st
		return s
	}
	for _, tc := range []struct {
		name string
		sub  *as.SnapshotSubscription
		now  time.Duration
		due  bool
		next time.Duration
	}{
		{"never polled", sub(), 0, true, 0},
		{"a new generation", func() *as.SnapshotSubscription {
			s := polled(as.SnapshotSubscriptionStatus{LastPollTime: at(0), NextPollTime: at(5 * time.Minute)})
			s.Generation = 2
			return s
		}(), time.Second, true, time.Second},
		{"before the next poll", polled(as.SnapshotSubscriptionStatus{LastPollTime: at(0), NextPollTime: at(5 * time.Minute)}), time.Minute, false, 5 * time.Minute},
		{"at the next poll", polled(as.SnapshotSubscriptionStatus{LastPollTime: at(0), NextPollTime: at(5 * time.Minute)}), 5 * time.Minute, true, 5 * time.Minute},
		{"a push after the poll: WebhookGap after it", polled(as.SnapshotSubscriptionStatus{LastPollTime: at(0), NextPollTime: at(5 * time.Minute), PollRequestedAt: at(time.Second)}), 2 * time.Second, false, WebhookGap},
		{"a push, the gap passed", polled(as.SnapshotSubscriptionStatus{LastPollTime: at(0), NextPollTime: at(5 * time.Minute), PollRequestedAt: at(time.Second)}), WebhookGap, true, WebhookGap},
		{"a push before the last poll is done with", polled(as.SnapshotSubscriptionStatus{LastPollTime: at(time.Minute), NextPollTime: at(6 * time.Minute), PollRequestedAt: at(0)}), 2 * time.Minute, false, 6 * time.Minute},
		{"no next time recorded: the interval", polled(as.SnapshotSubscriptionStatus{LastPollTime: at(0)}), time.Minute, false, DefaultInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, next := due(t0.Add(tc.now), tc.sub)
			assert.Equal(t, tc.due, ok)
			assert.Equal(t, t0.Add(tc.next), next)
		})
	}
}

func TestIntervalAndBackoff(t *testing.T) {
	s := sub()
	assert.Equal(t, DefaultInterval, interval(s))
	s.Spec.Interval = &metav1.Duration{Duration: time.Second}
	assert.Equal(t, MinInterval, interval(s), "raised to the floor")
	s.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	assert.Equal(t, time.Hour, interval(s))

	var got []time.Duration
	for f := int32(1); f <= 6; f++ {
		got = append(got, backoff(f, 2*time.Minute))
	}
	assert.Equal(t, []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute}, got)
}

func TestSnapshotForPinsWhatWasFoundAndKeepsTheRest(t *testing.T) {
	s := sub(
		as.ComponentSubscription{Name: "web", Image: &as.ImageSubscription{Repository: "r.example.com/web", Tag: "latest"}},
		as.ComponentSubscription{Name: "api", Git: &as.GitSubscription{URL: "https://git.example.com/api", Branch: "main"}},
	)
	comp := func(name, image string, src *as.GitSource) as.Component {
		c := as.Component{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: as.ComponentSpec{Application: "app", ContainerImage: image}}
		c.Spec.Source.GitSource = src
		return c
	}
	components := []as.Component{
		comp("web", "r.example.com/web:old", nil),
		comp("api", "r.example.com/api:v3", &as.GitSource{URL: "https://git.example.com/api", Context: "svc", Revision: "main"}),
		comp("db", "r.example.com/db:15", nil),
	}
	rev := strings.Repeat("a", 40)
	resolved := map[string]found{
		"web": {Name: "web", Tag: "latest", Image: "r.example.com/web@sha256:" + strings.Repeat("1", 64)},
		"api": {Name: "api", Revision: rev},
	}
	snap, refusal := snapshotFor(s, components, resolved)
	require.Nil(t, refusal)
	assert.Equal(t, "app", snap.Spec.Application)
	assert.Equal(t, []as.SnapshotComponent{
		{Name: "api", ContainerImage: "r.example.com/api:v3", Source: &as.ComponentSource{GitSource: &as.GitSource{URL: "https://git.example.com/api", Revision: rev, Context: "svc"}}},
		{Name: "db", ContainerImage: "r.example.com/db:15"},
		{Name: "web", ContainerImage: "r.example.com/web@sha256:" + strings.Repeat("1", 64)},
	}, snap.Spec.Components)
	assert.Equal(t, "app-sub", snap.Annotations[as.AnnotationSubscription])
	assert.Equal(t, snapshotName("app-sub", snap.ContentDigest()), snap.Name)

	// The name is the content's: the same content, in any order, the same name;
	// another digest, another name.
	reordered := []as.Component{components[2], components[0], components[1]}
	again, _ := snapshotFor(s, reordered, resolved)
	assert.Equal(t, snap.Name, again.Name)
	resolved["web"] = found{Name: "web", Tag: "latest", Image: "r.example.com/web@sha256:" + strings.Repeat("2", 64)}
	other, _ := snapshotFor(s, components, resolved)
	assert.NotEqual(t, snap.Name, other.Name)

	// A component with no image anywhere cannot be in a Snapshot.
	_, refusal = snapshotFor(s, append(components, comp("worker", "", nil)), resolved)
	require.NotNil(t, refusal)
	assert.Contains(t, refusal.Message, `"worker" has no containerImage`)
}

func TestSnapshotNameFitsAndEndsWell(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	assert.Equal(t, "app-sub-abababababab", snapshotName("app-sub", digest))
	long := strings.Repeat("a", 239) + "-" + strings.Repeat("b", 13)
	n := snapshotName(long, digest)
	assert.LessOrEqual(t, len(n), 253)
	assert.NotContains(t, n, "--")
}
