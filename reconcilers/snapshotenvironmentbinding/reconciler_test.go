//go:build !unit

package snapshotenvironmentbinding_test

import (
	"context"
	"k8s.io/client-go/util/retry"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/snapshotenvironmentbinding"
)

const (
	wait = 30 * time.Second
	tick = 100 * time.Millisecond
)

// binding makes a tenant with everything a binding needs, and the binding.
func binding(t *testing.T) *as.SnapshotEnvironmentBinding {
	t.Helper()
	ctx := context.Background()
	ns := "tenant-" + rand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: meta("shop"), Spec: as.ApplicationSpec{DisplayName: "Shop"}}))
	comp := &as.Component{ObjectMeta: meta("web"), Spec: as.ComponentSpec{ComponentName: "web", Application: "shop", ContainerImage: "quay.io/x/web:0"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: "https://git.example.test/gitops.git", Branch: "main", Context: "components/web/base"}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: meta("dev")}))
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: meta("snap"), Spec: as.SnapshotSpec{Application: "shop",
		Components: []as.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/x/web:1"}}}}))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: meta("shop-dev"),
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap"}}
	require.NoError(t, k8s.Create(ctx, seb))
	return seb
}

func applicationSet(t *testing.T, seb *as.SnapshotEnvironmentBinding) *argov1alpha1.ApplicationSet {
	t.Helper()
	set := &argov1alpha1.ApplicationSet{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationSetName(string(seb.UID))}, set) == nil
	}, wait, tick, "no ApplicationSet for %s", seb.Name)
	return set
}

const (
	refresh = "argocd.argoproj.io/application-set-refresh"
	retried = "managed-gitops.redhat.com/generation-retry"
)

// setGenerationError plays the applicationset-controller: it reports an error
// (keeping the refresh annotation, as Argo CD does when it fails), or success
// (taking the annotation away).
func setGenerationError(t *testing.T, set *argov1alpha1.ApplicationSet, msg string) {
	t.Helper()
	ctx := context.Background()
	status := argov1alpha1.ApplicationSetConditionStatusTrue
	if msg == "" {
		status = argov1alpha1.ApplicationSetConditionStatusFalse
	}
	// As Argo CD does it: the status first, then the refresh annotation taken
	// off (a pass that saw the old error may have set it meanwhile). The
	// reconciler writes the set too, so each write retries on a conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		set.Status.Conditions = []argov1alpha1.ApplicationSetCondition{{Type: argov1alpha1.ApplicationSetConditionErrorOccurred,
			Status: status, Message: msg, Reason: "ApplicationGenerationFromParamsError", LastTransitionTime: &metav1.Time{Time: time.Now()}}}
		return k8s.Status().Update(ctx, set)
	}))
	if msg == "" {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
				return err
			}
			delete(set.Annotations, refresh)
			return k8s.Update(ctx, set)
		}))
	}
}

// annotation waits until the set's annotation key satisfies ok and returns it.
func annotation(t *testing.T, set *argov1alpha1.ApplicationSet, key, what string, ok func(string) bool) string {
	t.Helper()
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(set), set) == nil && ok(set.Annotations[key])
	}, wait, tick, "ApplicationSet annotation %s never %s: %v", key, what, set.Annotations)
	return set.Annotations[key]
}

// waitReady waits for the binding's Ready condition with status and reason at its generation.
func waitReady(t *testing.T, seb *as.SnapshotEnvironmentBinding, status metav1.ConditionStatus, reason string) {
	t.Helper()
	got := &as.SnapshotEnvironmentBinding{}
	require.Eventually(t, func() bool {
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(seb), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.Conditions, "Ready")
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == got.Generation && got.Status.ObservedGeneration == got.Generation
	}, wait, tick, "the binding is not Ready %s/%s: %+v", status, reason, got.Status)
}

// Argo CD does not retry a generation that failed (e.g. the generator's token
// Secret was created after the binding) for 3 minutes: the binding says so and
// asks again every 10 s until it works.
func TestArgoCDGenerationErrorIsShownAndRetried(t *testing.T) {
	ctx := context.Background()
	seb := binding(t)
	set := applicationSet(t, seb)
	setGenerationError(t, set, `error getting plugin from generator: error fetching Secret: secret "gitops-service-generator" not found`)

	got := &as.SnapshotEnvironmentBinding{}
	require.Eventually(t, func() bool {
		if k8s.Get(ctx, client.ObjectKeyFromObject(seb), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.BindingConditions, as.BindingConditionErrorOccurred)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == as.BindingReasonErrorGeneratingGitOpsDeployment &&
			strings.Contains(c.Message, `Argo CD cannot generate the Applications: error getting plugin from generator`)
	}, wait, tick, "the binding does not show Argo CD's error: %+v", got.Status)
	waitReady(t, seb, metav1.ConditionFalse, as.BindingReasonErrorGeneratingGitOpsDeployment)
	annotation(t, set, refresh, "set", func(v string) bool { return v == "true" })
	first := annotation(t, set, retried, "set", func(v string) bool { return v != "" })

	// Still failing: asked again (a new retry stamp).
	annotation(t, set, retried, "renewed", func(v string) bool { return v != first })

	// It works now: the error goes, and nobody asks any more.
	setGenerationError(t, set, "")
	require.Eventually(t, func() bool {
		if k8s.Get(ctx, client.ObjectKeyFromObject(seb), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.BindingConditions, as.BindingConditionErrorOccurred)
		return c != nil && c.Status == metav1.ConditionFalse
	}, wait, tick, "the binding kept Argo CD's error: %+v", got.Status)
	waitReady(t, seb, metav1.ConditionUnknown, "Progressing")
	// The last stamp is the one of the last pass that saw the error.
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(set), set))
	last := set.Annotations[retried]
	require.Never(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(set), set) == nil && (set.Annotations[refresh] != "" || set.Annotations[retried] != last)
	}, 12*time.Second, tick, "a working ApplicationSet was asked again")
}

// A new binding's ApplicationSet is written once, with its input's hash and
// no refresh request: Argo CD generates a new ApplicationSet by itself, and
// would generate it a second time on the request.
func TestNewApplicationSetIsWrittenOnce(t *testing.T) {
	ctx := context.Background()
	seb := binding(t)
	set := applicationSet(t, seb)
	require.NotEmpty(t, set.Annotations["managed-gitops.redhat.com/generator-input-hash"], "the new ApplicationSet has no input hash: %v", set.Annotations)
	require.NotContains(t, set.Annotations, refresh)
	created := set.ResourceVersion
	require.Never(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(set), set) == nil && set.ResourceVersion != created
	}, 5*time.Second, tick, "the new ApplicationSet was written again: %v", set.Annotations)
}

// An ApplicationSet under the binding's name that is not the binding's is a
// condition on the binding (and a Warning Event), and is never written.
func TestForeignApplicationSetIsACondition(t *testing.T) {
	ctx := context.Background()
	seb := binding(t)
	set := applicationSet(t, seb)
	set.Labels[ownership.LabelOwnerUID] = "someone-else"
	require.NoError(t, k8s.Update(ctx, set))
	foreignRV := set.ResourceVersion

	got := &as.SnapshotEnvironmentBinding{}
	require.Eventually(t, func() bool {
		if k8s.Get(ctx, client.ObjectKeyFromObject(seb), got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.BindingConditions, as.BindingConditionErrorOccurred)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "was not created by the GitOps Service")
	}, wait, tick, "the binding does not show the foreign ApplicationSet: %+v", got.Status)
	require.Equal(t, as.BindingReasonErrorOccurred, meta.FindStatusCondition(got.Status.BindingConditions, as.BindingConditionErrorOccurred).Reason, "the seed's reason")
	// Ready and the Warning Event name the failure.
	waitReady(t, seb, metav1.ConditionFalse, snapshotenvironmentbinding.ReasonApplicationSetNotOurs)
	require.Eventually(t, func() bool {
		var events corev1.EventList
		require.NoError(t, k8s.List(ctx, &events, client.InNamespace(seb.Namespace)))
		for _, e := range events.Items {
			if e.InvolvedObject.UID == seb.UID && e.Type == corev1.EventTypeWarning && e.Reason == snapshotenvironmentbinding.ReasonApplicationSetNotOurs {
				return true
			}
		}
		return false
	}, wait, tick, "no Warning Event %s", snapshotenvironmentbinding.ReasonApplicationSetNotOurs)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(set), set))
	require.Equal(t, foreignRV, set.ResourceVersion, "the foreign ApplicationSet was written")
}
