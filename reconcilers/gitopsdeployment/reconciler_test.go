//go:build !unit

package gitopsdeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/gitopsdeployment"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	wait = 20 * time.Second
	tick = stack.Tick
	repo = "https://git.example.com/jane/apps.git"
)

func tenant(t *testing.T) string { return stack.Tenant(t, k8s).Name }

func newDeployment(ns, name string, mut func(*v1.GitOpsDeployment)) *v1.GitOpsDeployment {
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: repo, Path: "guestbook"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	if mut != nil {
		mut(gd)
	}
	return gd
}

func create(t *testing.T, gd *v1.GitOpsDeployment) *v1.GitOpsDeployment {
	t.Helper()
	require.NoError(t, k8s.Create(context.Background(), gd))
	return gd
}

func appKey(gd *v1.GitOpsDeployment) types.NamespacedName {
	return types.NamespacedName{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}
}

func waitApp(t *testing.T, gd *v1.GitOpsDeployment, cond func(*argov1alpha1.Application) bool) *argov1alpha1.Application {
	t.Helper()
	app := &argov1alpha1.Application{}
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), appKey(gd), app) == nil && cond(app)
	}, wait, tick, "Application %s never reached the expected state", appKey(gd))
	return app
}

func waitGone(t *testing.T, obj client.Object) { stack.WaitGone(t, k8s, obj, wait) }

func waitCondition(t *testing.T, gd *v1.GitOpsDeployment, typ v1.GitOpsConditionType, status v1.GitOpsConditionStatus, msgPart string) *v1.GitOpsDeployment {
	t.Helper()
	got := &v1.GitOpsDeployment{}
	require.Eventually(t, func() bool {
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), got) != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == typ && c.Status == status && strings.Contains(c.Message, msgPart) {
				return true
			}
		}
		return false
	}, wait, tick, "GitOpsDeployment %s/%s never got condition %s=%s %q", gd.Namespace, gd.Name, typ, status, msgPart)
	return got
}

// assertNoApplication checks, for a while, that nothing was written for gd.
func assertNoApplication(t *testing.T, gd *v1.GitOpsDeployment) {
	t.Helper()
	var apps argov1alpha1.ApplicationList
	require.Never(t, func() bool {
		require.NoError(t, k8s.List(context.Background(), &apps, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelOwnerUID: string(gd.UID)}))
		return len(apps.Items) > 0
	}, 2*time.Second, 200*time.Millisecond, "an Application was written for an invalid GitOpsDeployment")
}

func TestCreatesApplicationAndTenantProject(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "guestbook", func(gd *v1.GitOpsDeployment) {
		gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
	}))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })

	assert.Equal(t, repo, app.Spec.Source.RepoURL)
	assert.Equal(t, "guestbook", app.Spec.Source.Path)
	assert.Equal(t, argocd.LocalServer, app.Spec.Destination.Server)
	assert.Equal(t, ns, app.Spec.Destination.Namespace, "default destination is the CR's own namespace")
	require.NotNil(t, app.Spec.SyncPolicy)
	require.NotNil(t, app.Spec.SyncPolicy.Automated)
	assert.True(t, app.Spec.SyncPolicy.Automated.Prune && app.Spec.SyncPolicy.Automated.SelfHeal)
	assert.Contains(t, app.Spec.SyncPolicy.SyncOptions, "CreateNamespace=true")
	assert.Equal(t, ns+"/guestbook", app.Annotations[ownership.AnnotationOwnerName])
	assert.Empty(t, app.Finalizers, "no cascade finalizer until the CR is deleted with ours")

	nsObj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, nsObj))
	assert.Equal(t, argocd.ProjectName(string(nsObj.UID)), app.Spec.Project)
	proj := &argov1alpha1.AppProject{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: app.Spec.Project}, proj))
	assert.Equal(t, []argov1alpha1.ApplicationDestination{{Server: argocd.LocalServer, Namespace: ns}}, proj.Spec.Destinations)
	assert.Equal(t, []string{repo}, proj.Spec.SourceRepos)
	assert.Empty(t, proj.Spec.ClusterResourceWhitelist)

	// No Event for a plain create: Events are for what a user must act on, and
	// at thousands of deployments each is an API write (see make bench).
	var events corev1.EventList
	require.NoError(t, k8s.List(context.Background(), &events, client.InNamespace(ns)))
	for _, e := range events.Items {
		assert.NotEqual(t, gd.UID, e.InvolvedObject.UID, "unexpected Event %s: %s", e.Reason, e.Message)
	}
}

func TestManualHasNoAutomatedSync(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "manual", func(gd *v1.GitOpsDeployment) { gd.Spec.Type = v1.GitOpsDeploymentSpecTypeManual }))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	assert.Nil(t, app.Spec.SyncPolicy)

	// Switching to automated updates the Application in place (same name).
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
	gd.Spec.Type = v1.GitOpsDeploymentSpecTypeAutomated
	require.NoError(t, k8s.Update(context.Background(), gd))
	waitApp(t, gd, func(a *argov1alpha1.Application) bool {
		return a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.Automated != nil
	})
}

func TestSpecChangesPropagate(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "changes", nil))
	waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
	gd.Spec.Source.Path = "other"
	gd.Spec.Source.TargetRevision = "release-1"
	gd.Spec.Source.RepoURL = "https://git.example.com/jane/other.git"
	require.NoError(t, k8s.Update(context.Background(), gd))
	waitApp(t, gd, func(a *argov1alpha1.Application) bool {
		return a.Spec.Source.Path == "other" && a.Spec.Source.TargetRevision == "release-1" && a.Spec.Source.RepoURL == "https://git.example.com/jane/other.git"
	})
	// The tenant's project follows the repositories its deployments use.
	nsObj := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, nsObj))
	require.Eventually(t, func() bool {
		proj := &argov1alpha1.AppProject{}
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: argocd.ProjectName(string(nsObj.UID))}, proj)
		return err == nil && len(proj.Spec.SourceRepos) == 1 && proj.Spec.SourceRepos[0] == "https://git.example.com/jane/other.git"
	}, wait, tick)
}

func TestBadInputGivesConditionAndNoApplication(t *testing.T) {
	cases := []struct {
		name   string
		mut    func(*v1.GitOpsDeployment)
		msg    string
		reason string // of the Warning Event and Ready; the condition's stays ErrorOccurred
	}{
		{"foreign namespace", func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Namespace = "kube-system" }, v1.ErrMsgEnvironmentNeeded, gitopsdeployment.ReasonInvalidDestination},
		{"missing environment", func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Environment = "does-not-exist" }, v1.ErrMsgManagedEnvUnresolved, gitopsdeployment.ReasonManagedEnvironmentNotFound},
		{"empty path", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.Path = "" }, v1.ErrMsgPathEmpty, gitopsdeployment.ReasonInvalidSource},
		{"root path", func(gd *v1.GitOpsDeployment) { gd.Spec.Source.Path = "/" }, v1.ErrMsgPathRoot, gitopsdeployment.ReasonInvalidSource},
		{"unsupported sync option", func(gd *v1.GitOpsDeployment) {
			gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{"ServerSideApply=true"}}
		}, "unsupported sync option", gitopsdeployment.ReasonInvalidSyncPolicy},
	}
	ns := tenant(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gd := create(t, newDeployment(ns, fmt.Sprintf("bad-%d", i), tc.mut))
			got := waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, tc.msg)
			assert.Equal(t, v1.GitOpsDeploymentReasonErrorOccurred, condition(got, v1.GitOpsDeploymentConditionErrorOccurred).Reason, "the seed's reason")
			ready := waitCondition(t, gd, kernel.ConditionReady, v1.GitOpsConditionStatusFalse, tc.msg)
			assert.Equal(t, ready.Generation, ready.Status.ObservedGeneration)
			assert.Equal(t, v1.GitOpsConditionReason(tc.reason), condition(ready, kernel.ConditionReady).Reason)
			assertNoApplication(t, gd)
			var events corev1.EventList
			require.Eventually(t, func() bool {
				require.NoError(t, k8s.List(context.Background(), &events, client.InNamespace(ns)))
				for _, e := range events.Items {
					if e.InvolvedObject.UID == gd.UID && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, tc.msg) {
						assert.Equal(t, tc.reason, e.Reason, "the Event names the failure")
						return true
					}
				}
				return false
			}, wait, tick, "no Warning Event for the bad input")
		})
	}

	t.Run("fixing the spec resolves the condition", func(t *testing.T) {
		gd := create(t, newDeployment(ns, "fixme", func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Namespace = "default" }))
		waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, v1.ErrMsgEnvironmentNeeded)
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
		gd.Spec.Destination.Namespace = ns
		require.NoError(t, k8s.Update(context.Background(), gd))
		got := waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusFalse, "")
		assert.Equal(t, v1.GitOpsConditionReason("ErrorOccurredResolved"), got.Status.Conditions[0].Reason)
		waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	})

	t.Run("the API server rejects a type outside the enum", func(t *testing.T) {
		err := k8s.Create(context.Background(), newDeployment(ns, "badtype", func(gd *v1.GitOpsDeployment) { gd.Spec.Type = "sometimes" }))
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "got %v", err)
	})
}

func TestNameCollisionIsNeverAdopted(t *testing.T) {
	ns := tenant(t)
	gd := newDeployment(ns, "collide", nil)
	gd.Spec.Source.Path = "" // keep the sidecar from writing until the squatter exists
	create(t, gd)
	waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, v1.ErrMsgPathEmpty)
	squatter := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID)), Labels: map[string]string{"team": "other"}},
		Spec: argov1alpha1.ApplicationSpec{
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://elsewhere.example.com/x.git", Path: "x"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: "elsewhere"},
			Project:     "default",
		},
	}
	require.NoError(t, k8s.Create(context.Background(), squatter))
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
	gd.Spec.Source.Path = "guestbook"
	require.NoError(t, k8s.Update(context.Background(), gd))
	waitCondition(t, gd, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, "was not created for GitOpsDeployment")
	got := &argov1alpha1.Application{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(squatter), got))
	assert.Equal(t, "https://elsewhere.example.com/x.git", got.Spec.Source.RepoURL, "someone else's Application was modified")

	// Deleting our CR must not delete the squatter either.
	require.NoError(t, k8s.Delete(context.Background(), gd))
	waitGone(t, gd)
	require.Never(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(squatter), got))
	}, 2*time.Second, 200*time.Millisecond, "someone else's Application was deleted")
}

func TestStatusMirroredFromApplication(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "mirror", nil))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })

	// Play Argo CD: report a sync with a comparison error.
	app.Status = argov1alpha1.ApplicationStatus{
		Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "abc123",
			ComparedTo: argov1alpha1.ComparedTo{Source: *app.Spec.Source, Destination: app.Spec.Destination}},
		Health:     argov1alpha1.HealthStatus{Status: "Healthy"},
		Resources:  []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "settings", Status: argov1alpha1.SyncStatusCodeSynced}},
		Conditions: []argov1alpha1.ApplicationCondition{{Type: "ComparisonError", Message: "rpc error: repository not found"}},
	}
	require.NoError(t, k8s.Update(context.Background(), app))

	got := waitCondition(t, gd, "ComparisonError", v1.GitOpsConditionStatusTrue, "repository not found")
	waitCondition(t, gd, kernel.ConditionReady, v1.GitOpsConditionStatusFalse, "repository not found")
	assert.Equal(t, v1.SyncStatusCodeSynced, got.Status.Sync.Status)
	assert.Equal(t, "abc123", got.Status.Sync.Revision)
	assert.Equal(t, v1.HealthStatusHealthy, got.Status.Health.Status)
	require.Len(t, got.Status.Resources, 1)
	assert.Equal(t, "settings", got.Status.Resources[0].Name)
	assert.Equal(t, "guestbook", got.Status.ReconciledState.Source.Path)
	assert.Equal(t, ns, got.Status.ReconciledState.Destination.Namespace)

	// The condition is resolved once Argo CD stops reporting it.
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(app), app))
	app.Status.Conditions = nil
	require.NoError(t, k8s.Update(context.Background(), app))
	got = waitCondition(t, gd, "ComparisonError", v1.GitOpsConditionStatusFalse, "")
	waitCondition(t, gd, kernel.ConditionReady, v1.GitOpsConditionStatusTrue, "Synced and Healthy")
	for _, c := range got.Status.Conditions {
		if c.Type == "ComparisonError" {
			assert.Equal(t, v1.GitOpsConditionReason("ComparisonErrorResolved"), c.Reason)
		}
	}

	// An unchanged state is not written again: nudge a reconcile and compare versions.
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(app), app))
	appRV := app.ResourceVersion
	gd.Annotations = map[string]string{"nudge": "1"}
	require.NoError(t, k8s.Update(context.Background(), gd))
	nudgedRV := gd.ResourceVersion
	time.Sleep(2 * time.Second)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), gd))
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(app), app))
	assert.Equal(t, nudgedRV, gd.ResourceVersion, "a no-op reconcile wrote the GitOpsDeployment")
	assert.Equal(t, appRV, app.ResourceVersion, "a no-op reconcile wrote the Application")
}

// A status someone else edits is put back at once, not at the Application's
// next change; our own status writes do not wake the reconciler.
func TestStatusEditedByOthersIsPutBack(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "edited", nil))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	app.Status = argov1alpha1.ApplicationStatus{Health: argov1alpha1.HealthStatus{Status: "Healthy"},
		Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "abc123"}}
	require.NoError(t, k8s.Update(ctx, app))
	healthy := func(gd *v1.GitOpsDeployment) bool { return gd.Status.Health.Status == v1.HealthStatusHealthy }
	gd = stack.WaitFor(t, k8s, gd, wait, "was Healthy", healthy)

	gd.Status.Health.Status = v1.HealthStatusDegraded
	gd.Status.Sync.Revision = "forged"
	require.NoError(t, k8s.Status().Update(ctx, gd))
	gd = stack.WaitFor(t, k8s, gd, 10*time.Second, "was put back", func(gd *v1.GitOpsDeployment) bool {
		return healthy(gd) && gd.Status.Sync.Revision == "abc123"
	})

	// Quiet once put back: nothing of ours wakes it to write again.
	rv := gd.ResourceVersion
	time.Sleep(2 * time.Second)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(gd), gd))
	assert.Equal(t, rv, gd.ResourceVersion)
}

func TestDeleteWithoutFinalizerLeavesResources(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "plain", nil))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	require.NoError(t, k8s.Delete(context.Background(), gd))
	waitGone(t, app)
	// It went without Argo CD's cascade finalizer: had it been added, the
	// Application would be stuck (no Argo CD controller runs here).
}

func TestDeleteWithFinalizerCascades(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "cascade", func(gd *v1.GitOpsDeployment) {
		gd.Finalizers = []string{v1.FinalizerResourcesFinalizer}
	}))
	waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	require.NoError(t, k8s.Delete(context.Background(), gd))

	// The Application is deleted with Argo CD's cascade finalizer...
	app := waitApp(t, gd, func(a *argov1alpha1.Application) bool {
		return !a.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(a, argov1alpha1.ResourcesFinalizerName)
	})
	// ...and the GitOpsDeployment stays while Argo CD deletes the resources.
	require.Never(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), &v1.GitOpsDeployment{}))
	}, 3*time.Second, 200*time.Millisecond, "GitOpsDeployment went before its Application")

	// Play Argo CD: resources deleted, finalizer removed.
	controllerutil.RemoveFinalizer(app, argov1alpha1.ResourcesFinalizerName)
	require.NoError(t, k8s.Update(context.Background(), app))
	waitGone(t, app)
	waitGone(t, gd)
}

func TestRecreateWithSameNameReplacesApplication(t *testing.T) {
	ns := tenant(t)
	first := create(t, newDeployment(ns, "again", nil))
	oldApp := waitApp(t, first, func(*argov1alpha1.Application) bool { return true })
	// Delete and recreate at once: the sidecar may see only the new object.
	require.NoError(t, k8s.Delete(context.Background(), first))
	second := create(t, newDeployment(ns, "again", nil))
	require.NotEqual(t, first.UID, second.UID)
	waitApp(t, second, func(*argov1alpha1.Application) bool { return true })
	waitGone(t, oldApp)
}

func TestTenantProjectRemovedWithLastDeployment(t *testing.T) {
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "only", nil))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })
	proj := &argov1alpha1.AppProject{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: app.Spec.Project}, proj))

	other := tenant(t)
	gd2 := create(t, newDeployment(other, "neighbour", nil))
	app2 := waitApp(t, gd2, func(*argov1alpha1.Application) bool { return true })
	assert.NotEqual(t, app.Spec.Project, app2.Spec.Project, "tenants share no AppProject")

	require.NoError(t, k8s.Delete(context.Background(), gd))
	waitGone(t, app)
	waitGone(t, proj)
	// The neighbour's project is untouched.
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argoNS, Name: app2.Spec.Project}, &argov1alpha1.AppProject{}))
}

// TestKeepsFieldsItDoesNotOwn: what others write into our Application (a
// label, an annotation, spec fields we never set, Argo CD's status and
// operation, and a field our Argo CD types do not know when the CRD keeps it)
// survives our writes; fields we stop setting go; an idle resync writes nothing.
func TestKeepsFieldsItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	gd := create(t, newDeployment(ns, "others", nil))
	app := waitApp(t, gd, func(*argov1alpha1.Application) bool { return true })

	// Someone else (an admin, Argo CD) writes fields of their own.
	theirs := []byte(`{"metadata":{"labels":{"team":"payments"},"annotations":{"notes.example.com/runbook":"https://wiki/x"}},
		"spec":{"info":[{"name":"owner","value":"ops"}],"revisionHistoryLimit":3,"syncPolicy":{"automated":{"enabled":true}}},
		"status":{"health":{"status":"Healthy"},"sync":{"status":"Synced","revision":"abc123"}}}`)
	require.NoError(t, k8s.Patch(ctx, app, client.RawPatch(types.MergePatchType, theirs), client.FieldOwner("someone-else")))
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("Application"))
	require.NoError(t, k8s.Get(ctx, appKey(gd), raw))
	_, crdKeepsEnabled, _ := unstructured.NestedBool(raw.Object, "spec", "syncPolicy", "automated", "enabled")

	// Our spec changes: we write, and only our fields. (Merge patches: the
	// sidecar writes the status meanwhile.)
	require.NoError(t, k8s.Patch(ctx, gd, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"source":{"path":"moved"}}}`))))
	app = waitApp(t, gd, func(a *argov1alpha1.Application) bool { return a.Spec.Source.Path == "moved" })
	assert.Equal(t, "payments", app.Labels["team"], "someone else's label was dropped")
	assert.Equal(t, "https://wiki/x", app.Annotations["notes.example.com/runbook"], "someone else's annotation was dropped")
	assert.Equal(t, []argov1alpha1.Info{{Name: "owner", Value: "ops"}}, app.Spec.Info, "spec.info, which we do not set, was dropped")
	require.NotNil(t, app.Spec.RevisionHistoryLimit)
	assert.Equal(t, int64(3), *app.Spec.RevisionHistoryLimit)
	assert.Equal(t, argov1alpha1.SyncStatusCodeSynced, app.Status.Sync.Status, "the Application's status was rewritten")
	assert.Equal(t, "abc123", app.Status.Sync.Revision)
	require.NoError(t, k8s.Get(ctx, appKey(gd), raw))
	if crdKeepsEnabled { // Argo CD 3.x's CRD; 2.14's prunes the field
		enabled, found, _ := unstructured.NestedBool(raw.Object, "spec", "syncPolicy", "automated", "enabled")
		assert.True(t, found && enabled, "syncPolicy.automated.enabled (unknown to our types) was dropped")
	}

	// Someone edits a field of ours: it is put back, theirs stay.
	app.Spec.Source.Path = "edited"
	require.NoError(t, k8s.Update(ctx, app, client.FieldOwner("someone-else")))
	app = waitApp(t, gd, func(a *argov1alpha1.Application) bool { return a.Spec.Source.Path == "moved" })
	assert.Equal(t, "payments", app.Labels["team"])

	// An idle resync writes nothing.
	appRV := app.ResourceVersion
	require.NoError(t, k8s.Patch(ctx, gd, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"nudge":"1"}}}`))))
	time.Sleep(2 * time.Second)
	require.NoError(t, k8s.Get(ctx, appKey(gd), app))
	assert.Equal(t, appRV, app.ResourceVersion, "an idle reconcile wrote the Application")

	// A field we stop setting goes: switched to manual, no automated sync.
	flip := create(t, newDeployment(ns, "flip", nil))
	waitApp(t, flip, func(a *argov1alpha1.Application) bool {
		return a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.Automated != nil
	})
	require.NoError(t, k8s.Patch(ctx, flip, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"type":"manual"}}`))))
	waitApp(t, flip, func(a *argov1alpha1.Application) bool {
		return a.Spec.SyncPolicy == nil || a.Spec.SyncPolicy.Automated == nil
	})
}

// condition is obj's condition of type t (the zero one when it has none).
func condition(gd *v1.GitOpsDeployment, t v1.GitOpsConditionType) v1.GitOpsDeploymentCondition {
	for _, c := range gd.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.GitOpsDeploymentCondition{}
}
