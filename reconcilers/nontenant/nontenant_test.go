//go:build !unit

package nontenant_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/nontenant"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	argoNS    = stack.SuiteArgoNamespace
	sidecarNS = "gitops-service"
	adminNS   = "platform-tools"
	wait      = 20 * time.Second
	tick      = 100 * time.Millisecond
)

var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "nontenant", func(s *stack.Suite) error {
		k8s = s.Client
		for _, ns := range []string{sidecarNS, adminNS, "kube-system", "kube-public", "kube-node-lease"} {
			if err := k8s.Create(s.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		return nil
	}, func(o *sidecar.Options) {
		o.SidecarNamespace = sidecarNS
		o.NeverTenants = append([]string{adminNS}, nontenant.DefaultNeverTenants...)
	}))
}

// crs returns one CR of every kind the sidecar reconciles, valid and complete
// enough that in a tenant namespace each would be acted on.
func crs(ns string) []client.Object {
	om := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name + "-" + rand.String(5)}
	}
	return []client.Object{
		&v1.GitOpsDeployment{ObjectMeta: om("app-of-apps"), Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://git.example.com/evil/apps.git", Path: "apps"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		}},
		&v1.GitOpsDeploymentSyncRun{ObjectMeta: om("sync"), Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app-of-apps", RevisionID: "HEAD"}},
		&v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om("cluster"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "creds",
		}},
		&v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om("repo"), Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{
			Repository: "https://git.example.com/evil/apps.git", Secret: "repo-creds",
		}},
		&as.Environment{ObjectMeta: om("prod"), Spec: as.EnvironmentSpec{DisplayName: "prod", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}},
		&as.SnapshotEnvironmentBinding{ObjectMeta: om("binding"), Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "s1"}},
		&as.PromotionRun{ObjectMeta: om("promote"), Spec: as.PromotionRunSpec{Application: "shop", Snapshot: "s1",
			ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}},
	}
}

// refusal is the CR's refusal condition message, or "".
func refusal(obj client.Object) string {
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1.GitOpsDeployment:
		return gitOpsMessage(o.Status.Conditions)
	case *v1.GitOpsDeploymentSyncRun:
		return gitOpsMessage(o.Status.Conditions)
	case *v1.GitOpsDeploymentManagedEnvironment:
		if c := meta.FindStatusCondition(o.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded); c != nil && c.Status == metav1.ConditionFalse && c.Reason == nontenant.Reason {
			return c.Message
		}
		return ""
	case *v1.GitOpsDeploymentRepositoryCredentials:
		conds = o.Status.Conditions
	case *as.Environment:
		conds = o.Status.Conditions
	case *as.SnapshotEnvironmentBinding:
		conds = o.Status.BindingConditions
	case *as.PromotionRun:
		conds = o.Status.Conditions
	}
	if c := meta.FindStatusCondition(conds, "ErrorOccurred"); c != nil && c.Status == metav1.ConditionTrue && c.Reason == nontenant.Reason {
		return c.Message
	}
	return ""
}

func gitOpsMessage(conds []v1.GitOpsDeploymentCondition) string {
	for _, c := range conds {
		if c.Type == v1.GitOpsDeploymentConditionErrorOccurred && c.Status == v1.GitOpsConditionStatusTrue && string(c.Reason) == nontenant.Reason {
			return c.Message
		}
	}
	return ""
}

// ours lists every Argo CD object the sidecar wrote (managed-by label) for ns.
func ours(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	sel := client.MatchingLabels{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: ns}
	for _, list := range []client.ObjectList{&argov1alpha1.ApplicationList{}, &argov1alpha1.AppProjectList{}, &argov1alpha1.ApplicationSetList{}, &corev1.SecretList{}} {
		require.NoError(t, k8s.List(context.Background(), list, client.InNamespace(argoNS), sel))
		require.NoError(t, meta.EachListItem(list, func(o runtime.Object) error {
			out = append(out, fmt.Sprintf("%T %s", o, o.(client.Object).GetName()))
			return nil
		}))
	}
	return out
}

// Defect 1 of issue 13: a GitOpsDeployment in the Argo CD namespace got a
// tenant AppProject with that namespace as destination, from where an
// app-of-apps reached every namespace. No namespace that is never a tenant
// gets anything written, for any CR kind, and each CR says why.
func TestNeverTenantNamespacesAreRefusedForEveryKind(t *testing.T) {
	for _, ns := range []string{argoNS, sidecarNS, adminNS, "kube-system", "kube-public", "kube-node-lease"} {
		t.Run(ns, func(t *testing.T) {
			for _, obj := range crs(ns) {
				require.NoError(t, k8s.Create(context.Background(), obj), "%T", obj)
				key := client.ObjectKeyFromObject(obj)
				require.Eventually(t, func() bool {
					return k8s.Get(context.Background(), key, obj) == nil && refusal(obj) != ""
				}, wait, tick, "%T %s never got the refusal condition", obj, key)
				assert.Contains(t, refusal(obj), fmt.Sprintf("namespace %q is not a GitOps Service tenant", ns))
				stack.WaitForEvent(t, k8s, obj, corev1.EventTypeWarning, nontenant.Reason, "is not a GitOps Service tenant", wait)
			}
			assert.Never(t, func() bool { return len(ours(t, ns)) > 0 }, 2*time.Second, 200*time.Millisecond,
				"Argo CD objects were written for never-tenant namespace %s: %v", ns, ours(t, ns))
		})
	}
}

// The positive control: the same CRs in an ordinary namespace are not refused
// (the GitOpsDeployment gets its Application), so the refusal above is about
// the namespace and not about the objects.
func TestTenantNamespaceIsNotRefused(t *testing.T) {
	ns := "tenant-" + rand.String(6)
	require.NoError(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	objs := crs(ns)
	for _, obj := range objs {
		require.NoError(t, k8s.Create(context.Background(), obj))
	}
	gd := objs[0].(*v1.GitOpsDeployment)
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}, &argov1alpha1.Application{}) == nil
	}, wait, tick, "the tenant's GitOpsDeployment got no Application")
	for _, obj := range objs {
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
		assert.Empty(t, refusal(obj), "%T in a tenant namespace was refused", obj)
	}
}

// A CR with our finalizer in a refused namespace can still be deleted: nothing
// was written, so there is nothing to wait for.
func TestRefusedCRsCanBeDeletedWithOurFinalizers(t *testing.T) {
	for _, obj := range crs("kube-system")[:4] {
		obj.SetFinalizers([]string{v1.FinalizerResourcesFinalizer, v1.FinalizerManagedEnvironment, v1.FinalizerRepositoryCredentials})
		require.NoError(t, k8s.Create(context.Background(), obj))
		require.NoError(t, k8s.Delete(context.Background(), obj))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
		}, wait, tick, "%T %s kept waiting on our finalizers", obj, obj.GetName())
	}
}
