//go:build !unit

package subscription_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/subscription"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	within    = 30 * time.Second
	hookToken = "hook-3c8e51f0a7"
)

var ctx = context.Background()

func hostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// push writes a new random image to repo:tag of the registry, with pushes
// as real as any (blobs, then the manifest), and returns its digest.
func push(t *testing.T, srv *httptest.Server, repo, tag string) string {
	t.Helper()
	ref, err := name.NewTag(hostOf(srv) + "/" + repo + ":" + tag)
	require.NoError(t, err)
	img, err := random.Image(512, 1)
	require.NoError(t, err)
	var opts []remote.Option
	if srv == private {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: regUser, Password: regPass}))
	}
	require.NoError(t, remote.Write(ref, img, opts...))
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

// tenant makes a namespace with Application "app" and its Components
// (images example.com/<name>:initial).
func tenant(t *testing.T, components ...string) string {
	t.Helper()
	ns := stack.Tenant(t, k8s).Name
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: as.ApplicationSpec{DisplayName: "app"}}))
	for _, c := range components {
		require.NoError(t, k8s.Create(ctx, &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c},
			Spec: as.ComponentSpec{ComponentName: c, Application: "app", ContainerImage: "example.com/" + c + ":initial"}}))
	}
	return ns
}

// subscribe creates SnapshotSubscription "subs" of Application "app" with
// a webhook whose token is hookToken.
func subscribe(t *testing.T, ns string, components ...as.ComponentSubscription) *as.SnapshotSubscription {
	t.Helper()
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"},
		Data: map[string][]byte{subscription.WebhookTokenKey: []byte(hookToken)}}))
	sub := &as.SnapshotSubscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "subs"},
		Spec: as.SnapshotSubscriptionSpec{Application: "app", Components: components, Webhook: &as.SubscriptionWebhook{SecretName: "hook"}}}
	require.NoError(t, k8s.Create(ctx, sub))
	return sub
}

func snapshots(t *testing.T, ns string) []as.Snapshot {
	t.Helper()
	var list as.SnapshotList
	require.NoError(t, k8s.List(ctx, &list, client.InNamespace(ns)))
	return list.Items
}

// polled waits for a poll after the one at since (any poll when nil).
func polled(t *testing.T, sub *as.SnapshotSubscription, since *metav1.Time) *as.SnapshotSubscription {
	t.Helper()
	return stack.WaitFor(t, k8s, sub, within, "polled", func(s *as.SnapshotSubscription) bool {
		return s.Status.LastPollTime != nil && (since == nil || s.Status.LastPollTime.After(since.Time))
	})
}

// resolved waits for SourcesResolved with reason.
func resolved(t *testing.T, sub *as.SnapshotSubscription, status metav1.ConditionStatus, reason string) *as.SnapshotSubscription {
	t.Helper()
	return stack.WaitFor(t, k8s, sub, within, "SourcesResolved "+reason, func(s *as.SnapshotSubscription) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, as.SubscriptionConditionSourcesResolved)
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == s.Generation
	})
}

// hook posts to the sidecar's webhook for sub with header h: value.
func hook(t *testing.T, sub *as.SnapshotSubscription, body []byte, h, value string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, webhookURL+subscription.WebhookPath+sub.Namespace+"/"+sub.Name, bytes.NewReader(body))
	require.NoError(t, err)
	if h != "" {
		req.Header.Set(h, value)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// pollNow asks for a poll through the webhook and waits for it.
func pollNow(t *testing.T, sub *as.SnapshotSubscription) *as.SnapshotSubscription {
	t.Helper()
	before := polled(t, sub, nil)
	require.Equal(t, http.StatusAccepted, hook(t, sub, nil, "Authorization", "Bearer "+hookToken))
	return polled(t, sub, before.Status.LastPollTime)
}

func image(repo string, policy as.ImageSubscription) *as.ImageSubscription {
	policy.Repository = repo
	return &policy
}

func TestSemverRangePicksTheHighestVersionInRange(t *testing.T) {
	ns := tenant(t, "web", "db")
	repo := "team-" + ns + "/web"
	want := map[string]string{}
	for _, tag := range []string{"1.0.0", "v1.4.2", "1.10.0", "2.0.0", "1.11.0-rc.1", "latest"} {
		want[tag] = push(t, open, repo, tag)
	}
	sub := subscribe(t, ns, as.ComponentSubscription{Name: "web", Image: image(hostOf(open)+"/"+repo, as.ImageSubscription{Semver: ">=1.0.0 <2.0.0"})})

	got := resolved(t, sub, metav1.ConditionTrue, as.SubscriptionReasonResolved)
	require.Len(t, got.Status.Components, 1)
	assert.Equal(t, "1.10.0", got.Status.Components[0].Tag)
	pinned := hostOf(open) + "/" + repo + "@" + want["1.10.0"]
	assert.Equal(t, pinned, got.Status.Components[0].Image)

	snaps := snapshots(t, ns)
	require.Len(t, snaps, 1)
	snap := snaps[0]
	assert.Equal(t, got.Status.LastSnapshot, snap.Name)
	assert.Equal(t, snap.ContentDigest(), got.Status.LastSnapshotDigest)
	assert.Equal(t, "app", snap.Spec.Application)
	assert.Equal(t, []as.SnapshotComponent{
		{Name: "db", ContainerImage: "example.com/db:initial"},
		{Name: "web", ContainerImage: pinned},
	}, snap.Spec.Components, "every component, the watched one pinned by digest")
	assert.Equal(t, "subs", snap.Annotations[as.AnnotationSubscription])
	require.NotNil(t, got.Status.NextPollTime)
	assert.Equal(t, subscription.DefaultInterval, got.Status.NextPollTime.Sub(got.Status.LastPollTime.Time))
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
}

func TestRegexPicksTheLastMatchingTag(t *testing.T) {
	ns := tenant(t, "web")
	repo := "team-" + ns + "/web"
	digests := map[string]string{}
	for _, tag := range []string{"main-20260101", "main-20260301", "zz-feature", "main-2026"} {
		digests[tag] = push(t, open, repo, tag)
	}
	sub := subscribe(t, ns, as.ComponentSubscription{Name: "web", Image: image(hostOf(open)+"/"+repo, as.ImageSubscription{Regex: `^main-\d{8}$`})})
	got := resolved(t, sub, metav1.ConditionTrue, as.SubscriptionReasonResolved)
	assert.Equal(t, "main-20260301", got.Status.Components[0].Tag)
	snaps := snapshots(t, ns)
	require.Len(t, snaps, 1)
	assert.Equal(t, hostOf(open)+"/"+repo+"@"+digests["main-20260301"], snaps[0].Spec.Components[0].ContainerImage)

	// No tag matches another policy: refused, a Warning Event, no Snapshot more.
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Components[0].Image.Regex = `^release-`
	require.NoError(t, k8s.Update(ctx, sub))
	refused := resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonNoMatchingTag)
	stack.WaitForEvent(t, k8s, refused, corev1.EventTypeWarning, as.SubscriptionReasonNoMatchingTag, `"^release-"`, within)
	assert.Equal(t, int32(1), refused.Status.ConsecutiveFailures)
	assert.Equal(t, subscription.RetryBase, refused.Status.NextPollTime.Sub(refused.Status.LastPollTime.Time), "backs off, sooner than the interval")
	assert.Len(t, snapshots(t, ns), 1)
}

func TestMovingTagRepushedMakesANewSnapshotAndNothingNewMakesNone(t *testing.T) {
	ns := tenant(t, "web")
	repo := "team-" + ns + "/web"
	first := push(t, open, repo, "latest")
	sub := subscribe(t, ns, as.ComponentSubscription{Name: "web", Image: image(hostOf(open)+"/"+repo, as.ImageSubscription{Tag: "latest"})})
	got := resolved(t, sub, metav1.ConditionTrue, as.SubscriptionReasonResolved)
	require.Len(t, snapshots(t, ns), 1)
	firstSnapshot := got.Status.LastSnapshot

	// Nothing new: a poll, and no Snapshot.
	got = pollNow(t, sub)
	assert.Len(t, snapshots(t, ns), 1, "the same digest makes no Snapshot")
	assert.Equal(t, firstSnapshot, got.Status.LastSnapshot)

	// The tag moves: the next poll makes one Snapshot, of the new digest.
	second := push(t, open, repo, "latest")
	require.NotEqual(t, first, second)
	got = pollNow(t, sub)
	snaps := snapshots(t, ns)
	require.Len(t, snaps, 2)
	assert.NotEqual(t, firstSnapshot, got.Status.LastSnapshot)
	made := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: got.Status.LastSnapshot}, made))
	assert.Equal(t, hostOf(open)+"/"+repo+"@"+second, made.Spec.Components[0].ContainerImage)
}

// Another replica, and this one after a restart that lost its status write,
// poll the same content: one Snapshot, found rather than made again.
func TestRestartAndSecondReplicaMakeOneSnapshot(t *testing.T) {
	ns := tenant(t, "web")
	repo := "team-" + ns + "/web"
	push(t, open, repo, "1.0.0")
	replica := func() *subscription.Reconciler {
		return &subscription.Reconciler{Client: k8s, APIReader: k8s, ArgoNamespace: argoNS, Recorder: record.NewFakeRecorder(100),
			Egress: &egress.Policy{AllowRanges: []netip.Prefix{netip.MustParsePrefix(stack.StackLoopback)}}}
	}
	sub := subscribe(t, ns, as.ComponentSubscription{Name: "web", Image: image(hostOf(open)+"/"+repo, as.ImageSubscription{Semver: "1.x"})})
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sub)}
	// Two more replicas race the sidecar's reconciler for the first poll.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := replica().Reconcile(ctx, req)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	got := resolved(t, sub, metav1.ConditionTrue, as.SubscriptionReasonResolved)
	require.Len(t, snapshots(t, ns), 1)
	made := got.Status.LastSnapshot

	// A restart that lost the status write: no record of the Snapshot.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sub), got); err != nil {
			return err
		}
		got.Status.LastSnapshot, got.Status.LastSnapshotDigest, got.Status.LastSnapshotTime, got.Status.LastPollTime = "", "", nil, nil
		return k8s.Status().Update(ctx, got)
	}))
	_, err := replica().Reconcile(ctx, req)
	require.NoError(t, err)
	after := polled(t, sub, nil)
	assert.Len(t, snapshots(t, ns), 1, "the Snapshot was found, not made again")
	assert.Equal(t, made, after.Status.LastSnapshot)
}

func TestWebhookWithABadTokenIsRefusedAndPollsNothing(t *testing.T) {
	ns := tenant(t, "web")
	repo := "team-" + ns + "/web"
	push(t, open, repo, "latest")
	sub := subscribe(t, ns, as.ComponentSubscription{Name: "web", Image: image(hostOf(open)+"/"+repo, as.ImageSubscription{Tag: "latest"})})
	before := polled(t, sub, nil)

	body := []byte(`{"push_data":{"tag":"evil"},"repository":{"repo_name":"elsewhere/x"}}`)
	sign := func(key string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write(body)
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	for what, h := range map[string][2]string{
		"no token":          {"", ""},
		"a wrong bearer":    {"Authorization", "Bearer " + hookToken + "x"},
		"a prefix of it":    {"Authorization", "Bearer " + hookToken[:5]},
		"basic, not bearer": {"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+hookToken))},
		"a wrong HMAC":      {"X-Hub-Signature-256", sign("not-the-token")},
		"an HMAC not hex":   {"X-Hub-Signature-256", "sha256=zz"},
	} {
		assert.Equal(t, http.StatusUnauthorized, hook(t, sub, body, h[0], h[1]), what)
	}
	other := sub.DeepCopy()
	other.Name = "no-such-subscription"
	assert.Equal(t, http.StatusUnauthorized, hook(t, other, body, "Authorization", "Bearer "+hookToken), "the same answer for a subscription that does not exist")
	resp, err := http.Get(webhookURL + subscription.WebhookPath + ns + "/subs")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	// Past the gap a push would have made: no poll was asked for, none made.
	time.Sleep(subscription.WebhookGap + 2*time.Second)
	now := &as.SnapshotSubscription{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), now))
	assert.Nil(t, now.Status.PollRequestedAt)
	assert.Equal(t, before.Status.LastPollTime, now.Status.LastPollTime)

	// The HMAC of the body under the token: a poll.
	assert.Equal(t, http.StatusAccepted, hook(t, sub, body, "X-Hub-Signature-256", sign(hookToken)))
	after := polled(t, sub, before.Status.LastPollTime)
	assert.Equal(t, before.Status.Components, after.Status.Components, "the push's content is not believed: the registry is")
	assert.Len(t, snapshots(t, ns), 1)
}

func TestCredentialsComeOnlyFromTheSubscriptionsNamespace(t *testing.T) {
	ns := tenant(t, "web")
	neighbour := tenant(t)
	repo := "team-" + ns + "/web"
	digest := push(t, private, repo, "v1.0.0")
	dockerConfig := func(namespace string) *corev1.Secret {
		auth := base64.StdEncoding.EncodeToString([]byte(regUser + ":" + regPass))
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, hostOf(private), auth))}}
	}
	// The neighbour has working credentials; the tenant has none.
	require.NoError(t, k8s.Create(ctx, dockerConfig(neighbour)))

	sub := subscribe(t, ns, as.ComponentSubscription{Name: "web",
		Image: image(hostOf(private)+"/"+repo, as.ImageSubscription{Semver: "^1", CredentialsSecret: neighbour + "/regcred"})})
	refused := resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonInvalidSpec)
	assert.Contains(t, meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message, "names a Secret of another namespace")
	stack.WaitForEvent(t, k8s, refused, corev1.EventTypeWarning, as.SubscriptionReasonInvalidSpec, "another namespace", within)

	// The neighbour's Secret's name alone: looked for here only.
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Components[0].Image.CredentialsSecret = "regcred"
	require.NoError(t, k8s.Update(ctx, sub))
	refused = resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonSecretNotFound)
	assert.Contains(t, meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message, fmt.Sprintf("namespace %q", ns))

	// Without credentials the registry refuses; its own words are not repeated.
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Components[0].Image.CredentialsSecret = ""
	require.NoError(t, k8s.Update(ctx, sub))
	refused = resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonRegistryFailed)
	msg := meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message
	assert.Contains(t, msg, "refused the credentials (HTTP 401)")
	assert.NotContains(t, msg, "secret detail")
	assert.Empty(t, snapshots(t, ns))

	// Its own Secret: the image, pinned. No credential in the status.
	require.NoError(t, k8s.Create(ctx, dockerConfig(ns)))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Components[0].Image.CredentialsSecret = "regcred"
	require.NoError(t, k8s.Update(ctx, sub))
	got := resolved(t, sub, metav1.ConditionTrue, as.SubscriptionReasonResolved)
	assert.Equal(t, hostOf(private)+"/"+repo+"@"+digest, got.Status.Components[0].Image)
	assert.NotContains(t, fmt.Sprintf("%+v", got.Status), regPass)
	assert.Len(t, snapshots(t, ns), 1)
}

// The suite's egress policy allows 127.0.0.1 only: a registry on the cloud
// metadata address, or a real one on another loopback address, is refused
// before anything is sent.
func TestRegistryOnAnInternalAddressIsRefusedByEgress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	hits := make(chan string, 10)
	internal := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.URL.Path
		ggcrregistry.New().ServeHTTP(w, r)
	}))
	internal.Listener.Close()
	internal.Listener = ln
	internal.Start()
	defer internal.Close()

	for what, repo := range map[string]string{
		"metadata":         "169.254.169.254/latest/meta-data",
		"another loopback": hostOf(internal) + "/team/web",
	} {
		t.Run(what, func(t *testing.T) {
			ns := tenant(t, "web")
			sub := subscribe(t, ns, as.ComponentSubscription{Name: "web", Image: image(repo, as.ImageSubscription{Tag: "latest"})})
			refused := resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonEgressRefused)
			msg := meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message
			assert.Contains(t, msg, "which the platform does not let the GitOps Service connect to")
			stack.WaitForEvent(t, k8s, refused, corev1.EventTypeWarning, as.SubscriptionReasonEgressRefused, "", within)
			assert.Empty(t, snapshots(t, ns))
		})
	}
	assert.Empty(t, hits, "nothing reached the internal registry")
}

func TestGitBranchAndTagRevisions(t *testing.T) {
	ns := tenant(t, "api", "web")
	repo, err := stack.NewGitRepo(gitRoot, "api-"+ns)
	require.NoError(t, err)
	first, err := repo.Commit(map[string]string{"main.go": "package main\n"}, "first")
	require.NoError(t, err)
	url, err := git.RepoURL(repo)
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"},
		Data: map[string][]byte{"username": []byte(gitUser), "password": []byte(gitToken)}}))
	webRepo := "team-" + ns + "/web"
	web := push(t, open, webRepo, "stable")

	sub := subscribe(t, ns,
		as.ComponentSubscription{Name: "api", Git: &as.GitSubscription{URL: url, Branch: "main", CredentialsSecret: "git"}},
		as.ComponentSubscription{Name: "web", Image: image(hostOf(open)+"/"+webRepo, as.ImageSubscription{Tag: "stable"}),
			Git: &as.GitSubscription{URL: url, Branch: "main", CredentialsSecret: "git"}},
	)
	got := resolved(t, sub, metav1.ConditionTrue, as.SubscriptionReasonResolved)
	snap := &as.Snapshot{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: got.Status.LastSnapshot}, snap))
	assert.Equal(t, []as.SnapshotComponent{
		{Name: "api", ContainerImage: "example.com/api:initial", Source: &as.ComponentSource{GitSource: &as.GitSource{URL: url, Revision: first}}},
		{Name: "web", ContainerImage: hostOf(open) + "/" + webRepo + "@" + web, Source: &as.ComponentSource{GitSource: &as.GitSource{URL: url, Revision: first}}},
	}, snap.Spec.Components)

	// A new commit on the branch: a new Snapshot with it.
	second, err := repo.Commit(map[string]string{"main.go": "package main // 2\n"}, "second")
	require.NoError(t, err)
	got = pollNow(t, sub)
	require.Len(t, snapshots(t, ns), 2)
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: got.Status.LastSnapshot}, snap))
	assert.Equal(t, second, snap.Spec.Components[0].Source.GitSource.Revision)

	// An annotated tag: the commit it names, not the tag object.
	out, err := exec.Command("git", "--git-dir", repo.Dir, "tag", "-a", "v1.0.0", "-m", "release", first).CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Components[0].Git = &as.GitSubscription{URL: url, Tag: "v1.0.0", CredentialsSecret: "git"}
	require.NoError(t, k8s.Update(ctx, sub))
	got = stack.WaitFor(t, k8s, sub, within, "resolved the tag", func(s *as.SnapshotSubscription) bool {
		return s.Status.ObservedGeneration == s.Generation && len(s.Status.Components) == 2 && s.Status.Components[0].Revision == first
	})
	assert.Equal(t, first, got.Status.Components[0].Revision)

	// A branch that does not exist, and wrong credentials: refused.
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Components[0].Git = &as.GitSubscription{URL: url, Branch: "nope", CredentialsSecret: "git"}
	require.NoError(t, k8s.Update(ctx, sub))
	refused := resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonGitFailed)
	assert.Contains(t, meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message, "has no branch nope")
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong"},
		Data: map[string][]byte{"username": []byte(gitUser), "password": []byte("wrong")}}))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Components[0].Git = &as.GitSubscription{URL: url, Branch: "main", CredentialsSecret: "wrong"}
	require.NoError(t, k8s.Update(ctx, sub))
	refused = resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonGitFailed)
	assert.Contains(t, meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message, "refused the credentials (HTTP 401)")
	assert.Len(t, snapshots(t, ns), 3, "the tag's content was new once; refusals make none")
}

func TestBadReferencesAreRefused(t *testing.T) {
	ns := tenant(t, "web")
	repo := "team-" + ns + "/web"
	push(t, open, repo, "latest")
	sub := subscribe(t, ns, as.ComponentSubscription{Name: "nope", Image: image(hostOf(open)+"/"+repo, as.ImageSubscription{Tag: "latest"})})
	resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonComponentNotFound)

	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Application = "other"
	sub.Spec.Components[0].Name = "web"
	require.NoError(t, k8s.Update(ctx, sub))
	resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonApplicationNotFound)

	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	sub.Spec.Application = "app"
	sub.Spec.Components[0].Image.Tag = "missing"
	require.NoError(t, k8s.Update(ctx, sub))
	refused := resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonRegistryFailed)
	assert.Contains(t, meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message, "HTTP 404")
	assert.Empty(t, snapshots(t, ns))
}

// A Component whose name a Snapshot's component cannot have (a dot): the API
// server refuses the Snapshot, and the subscription says so rather than
// backing off in silence.
func TestASnapshotTheAPIServerRefusesIsRefused(t *testing.T) {
	ns := tenant(t, "web", "web.v2")
	repo := "team-" + ns + "/web"
	push(t, open, repo, "latest")
	sub := subscribe(t, ns, as.ComponentSubscription{Name: "web", Image: image(hostOf(open)+"/"+repo, as.ImageSubscription{Tag: "latest"})})
	refused := resolved(t, sub, metav1.ConditionFalse, as.SubscriptionReasonInvalidSpec)
	assert.Contains(t, meta.FindStatusCondition(refused.Status.Conditions, as.SubscriptionConditionSourcesResolved).Message, "is not valid")
	assert.Empty(t, snapshots(t, ns))
}
