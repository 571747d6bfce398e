package subscription

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Intervals of polling.
const (
	// DefaultInterval: a subscription that sets none is polled this often.
	DefaultInterval = 5 * time.Minute
	// MinInterval: a shorter interval is raised to it (every poll lists tags
	// from someone's registry).
	MinInterval = time.Minute
	// RetryBase: the first retry after a failed poll; each further failure
	// doubles it, up to the interval.
	RetryBase = 15 * time.Second
	// WebhookGap: pushes in a burst make one poll at most this often.
	WebhookGap = 5 * time.Second
)

// interval is the subscription's polling interval, with the floor.
func interval(sub *as.SnapshotSubscription) time.Duration {
	if sub.Spec.Interval == nil {
		return DefaultInterval
	}
	return max(sub.Spec.Interval.Duration, MinInterval)
}

// backoff is how long after the failures-th failed poll in a row the next
// one comes: RetryBase, doubled per failure, never past the interval.
func backoff(failures int32, every time.Duration) time.Duration {
	d := RetryBase
	for i := int32(1); i < failures && d < every; i++ {
		d *= 2
	}
	return min(d, every)
}

// due says whether the subscription is polled now; when not, at when. A new
// generation (or no poll yet) is polled at once; a webhook push that came
// after the last poll (or in its second: times are kept to the second) is
// polled WebhookGap after it; otherwise the next poll time decides.
func due(now time.Time, sub *as.SnapshotSubscription) (bool, time.Time) {
	st := sub.Status
	if st.LastPollTime == nil || st.ObservedGeneration != sub.Generation {
		return true, now
	}
	last := st.LastPollTime.Time
	next := last.Add(interval(sub))
	if st.NextPollTime != nil {
		next = st.NextPollTime.Time
	}
	if st.PollRequestedAt != nil && !st.PollRequestedAt.Time.Before(last) {
		next = minTime(next, last.Add(WebhookGap))
	}
	if !now.Before(next) {
		return true, now
	}
	return false, next
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// validate refuses what no poll can resolve: names of another namespace's
// Secrets, a range or expression that does not parse, a URL that is not one.
func validate(sub *as.SnapshotSubscription) *kernel.Refusal {
	invalid := func(format string, args ...any) *kernel.Refusal {
		return kernel.Refuse(as.SubscriptionReasonInvalidSpec, format, args...)
	}
	if len(sub.Spec.Components) == 0 {
		return invalid("spec.components is empty: name at least one Component to watch")
	}
	seen := map[string]bool{}
	for _, c := range sub.Spec.Components {
		if seen[c.Name] {
			return invalid("component %q is listed twice", c.Name)
		}
		seen[c.Name] = true
		if c.Image == nil && c.Git == nil {
			return invalid("component %q: set image, git or both", c.Name)
		}
		if img := c.Image; img != nil {
			if r := secretName(c.Name, "image.credentialsSecret", img.CredentialsSecret); r != nil {
				return r
			}
			set := 0
			for _, v := range []string{img.Semver, img.Regex, img.Tag} {
				if v != "" {
					set++
				}
			}
			if set != 1 {
				return invalid("component %q: set exactly one of image.semver, image.regex and image.tag", c.Name)
			}
			if img.Semver != "" {
				if _, err := semver.NewConstraint(img.Semver); err != nil {
					return invalid("component %q: image.semver %q is not a version range", c.Name, img.Semver)
				}
			}
			if img.Regex != "" {
				if _, err := regexp.Compile(img.Regex); err != nil {
					return invalid("component %q: image.regex is not a regular expression (RE2)", c.Name)
				}
			}
		}
		if g := c.Git; g != nil {
			if r := secretName(c.Name, "git.credentialsSecret", g.CredentialsSecret); r != nil {
				return r
			}
			u, err := url.Parse(g.URL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
				return invalid("component %q: git.url must be an https:// (or http://) URL without credentials in it", c.Name)
			}
			if u.Scheme != "https" && g.CredentialsSecret != "" {
				return invalid("component %q: git credentials are only sent over https", c.Name)
			}
			if (g.Branch == "") == (g.Tag == "") {
				return invalid("component %q: set exactly one of git.branch and git.tag", c.Name)
			}
		}
	}
	if w := sub.Spec.Webhook; w != nil {
		if r := secretName("", "webhook.secretName", w.SecretName); r != nil {
			return r
		}
	}
	return nil
}

// secretName refuses a Secret name that is not one of this namespace's: a
// Secret is only ever read from the subscription's own namespace, so
// "namespace/name" (or any name no Secret can have) is a mistake to point out.
func secretName(component, field, name string) *kernel.Refusal {
	if name == "" || len(validation.IsDNS1123Subdomain(name)) == 0 {
		return nil
	}
	where := field
	if component != "" {
		where = fmt.Sprintf("component %q: %s", component, field)
	}
	if strings.Contains(name, "/") {
		return kernel.Refuse(as.SubscriptionReasonInvalidSpec,
			"%s %q names a Secret of another namespace: Secrets are only read from the subscription's own namespace; give the name of a Secret there", where, name)
	}
	return kernel.Refuse(as.SubscriptionReasonInvalidSpec, "%s %q is not the name of a Secret", where, name)
}

// pickTag is the tag the policy picks among tags: the highest semantic
// version in the range, or the last (lexically) of those the expression
// matches. ok is false when none qualifies. validate has parsed both.
func pickTag(img *as.ImageSubscription, tags []string) (tag string, ok bool) {
	switch {
	case img.Semver != "":
		c, err := semver.NewConstraint(img.Semver)
		if err != nil {
			return "", false
		}
		var best *semver.Version
		for _, t := range tags {
			v, err := semver.NewVersion(t)
			if err != nil || !c.Check(v) {
				continue
			}
			// Equal versions (1.2.0 and v1.2.0): the lexically larger tag, so
			// the pick does not depend on the registry's order.
			if best == nil || v.GreaterThan(best) || (v.Equal(best) && t > tag) {
				best, tag = v, t
			}
		}
		return tag, best != nil
	case img.Regex != "":
		re, err := regexp.Compile(img.Regex)
		if err != nil {
			return "", false
		}
		for _, t := range tags {
			if re.MatchString(t) && t > tag {
				tag = t
			}
		}
		return tag, tag != ""
	default:
		return img.Tag, slices.Contains(tags, img.Tag)
	}
}

// found is what one poll resolved for one Component.
type found = as.SubscribedComponentStatus

// snapshotFor is the Snapshot of the Application's components (every one,
// by name) with what the poll found for the watched ones: the image pinned
// by digest, the git revision as the source's. An unwatched component keeps
// its Component's image and source. A component without an image is refused:
// a Snapshot names one for each.
func snapshotFor(sub *as.SnapshotSubscription, components []as.Component, resolved map[string]found) (*as.Snapshot, *kernel.Refusal) {
	watched := map[string]as.ComponentSubscription{}
	for _, c := range sub.Spec.Components {
		watched[c.Name] = c
	}
	sorted := slices.Clone(components)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	snap := &as.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: sub.Namespace, Annotations: map[string]string{as.AnnotationSubscription: sub.Name}},
		Spec:       as.SnapshotSpec{Application: sub.Spec.Application},
	}
	var what []string
	for _, comp := range sorted {
		sc := as.SnapshotComponent{Name: comp.Name, ContainerImage: comp.Spec.ContainerImage}
		if g := comp.Spec.Source.GitSource; g != nil {
			src := *g
			sc.Source = &as.ComponentSource{GitSource: &src}
		}
		f, ok := resolved[comp.Name]
		if w := watched[comp.Name]; ok && w.Image != nil {
			sc.ContainerImage = f.Image
			what = append(what, comp.Name+" "+f.Tag)
		}
		if w := watched[comp.Name]; ok && w.Git != nil {
			src := as.GitSource{URL: w.Git.URL, Revision: f.Revision}
			if g := comp.Spec.Source.GitSource; g != nil && g.URL == w.Git.URL {
				src.Context = g.Context
			}
			sc.Source = &as.ComponentSource{GitSource: &src}
			what = append(what, comp.Name+" "+shortRevision(f.Revision))
		}
		if sc.ContainerImage == "" {
			return nil, kernel.Refuse(as.SubscriptionReasonInvalidSpec,
				"Component %q has no containerImage and the subscription does not watch its image: a Snapshot names an image for every component", comp.Name)
		}
		snap.Spec.Components = append(snap.Spec.Components, sc)
	}
	snap.Spec.DisplayName = truncate("subscription "+sub.Name+": "+strings.Join(what, ", "), 253)
	snap.Name = snapshotName(sub.Name, snap.ContentDigest())
	return snap, nil
}

// snapshotName is derived from the content: two replicas, or a restart
// between a create and its status write, make the same name, and the second
// Create finds it (AlreadyExists) instead of making a copy.
func snapshotName(subscription, digest string) string {
	sum := strings.TrimPrefix(digest, "sha256:")[:12]
	return strings.TrimRight(truncate(subscription, 253-len(sum)-1), "-.") + "-" + sum
}

func shortRevision(rev string) string { return truncate(rev, 12) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
