package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

// isolationCase is one bad or hostile input. setup may create objects (in the
// tenant's or the neighbour's namespace); object returns the CR under test;
// condition returns whether the CR shows the expected refusal.
type isolationCase struct {
	name      string
	setup     func(t *testing.T, tenant, neighbour string)
	object    func(tenant, neighbour string) client.Object
	condition func(obj client.Object) bool
}

// errorOccurred matches a GitOpsDeployment (or SyncRun) whose ErrorOccurred
// condition is True with msg in its message.
func errorOccurred(msg string) func(client.Object) bool {
	return func(obj client.Object) bool {
		var conds []v1.GitOpsDeploymentCondition
		switch o := obj.(type) {
		case *v1.GitOpsDeployment:
			conds = o.Status.Conditions
		case *v1.GitOpsDeploymentSyncRun:
			conds = o.Status.Conditions
		}
		for _, c := range conds {
			if c.Type == v1.GitOpsDeploymentConditionErrorOccurred && c.Status == v1.GitOpsConditionStatusTrue && strings.Contains(c.Message, msg) {
				return true
			}
		}
		return false
	}
}

func badDeployment(name string, mut func(gd *v1.GitOpsDeployment, tenant, neighbour string)) func(string, string) client.Object {
	return func(tenant, neighbour string) client.Object {
		gd := &v1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name},
			Spec: v1.GitOpsDeploymentSpec{
				Source: v1.ApplicationSource{RepoURL: "https://git.example.com/tenant/apps.git", Path: "app"},
				Type:   v1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
		mut(gd, tenant, neighbour)
		return gd
	}
}

func managedEnvironment(ns, name, secret string) *v1.GitOpsDeploymentManagedEnvironment {
	return &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://127.0.0.1:1", ClusterCredentialsSecret: secret},
	}
}

// isolationCases are filled by each kind's file (init-free: a func per kind).
func gitopsDeploymentIsolationCases() []isolationCase {
	destination := func(ns func(tenant, neighbour string) string) func(*v1.GitOpsDeployment, string, string) {
		return func(gd *v1.GitOpsDeployment, tenant, neighbour string) {
			gd.Spec.Destination.Namespace = ns(tenant, neighbour)
		}
	}
	return []isolationCase{
		{name: "deployment to kube-system", object: badDeployment("to-kube-system", destination(func(_, _ string) string { return "kube-system" })),
			condition: errorOccurred(v1.ErrMsgEnvironmentNeeded)},
		{name: "deployment to default", object: badDeployment("to-default", destination(func(_, _ string) string { return "default" })),
			condition: errorOccurred(v1.ErrMsgEnvironmentNeeded)},
		{name: "deployment to the Argo CD namespace", object: badDeployment("to-argocd", destination(func(_, _ string) string { return "argocd" })),
			condition: errorOccurred(v1.ErrMsgEnvironmentNeeded)},
		{name: "deployment to the neighbour's namespace", object: badDeployment("to-neighbour", destination(func(_, n string) string { return n })),
			condition: errorOccurred(v1.ErrMsgEnvironmentNeeded)},
		{name: "deployment to a namespace that does not exist", object: badDeployment("to-nowhere", destination(func(_, _ string) string { return "no-such-namespace" })),
			condition: errorOccurred(v1.ErrMsgEnvironmentNeeded)},
		{name: "environment that does not exist", object: badDeployment("env-missing", func(gd *v1.GitOpsDeployment, _, _ string) {
			gd.Spec.Destination.Environment = "missing"
		}), condition: errorOccurred(v1.ErrMsgManagedEnvUnresolved)},
		{name: "environment that exists only in the neighbour's namespace",
			setup: func(t *testing.T, _, neighbour string) {
				require.NoError(t, k8s.Create(context.Background(), managedEnvironment(neighbour, "theirs", "theirs-secret")))
			},
			object: badDeployment("env-theirs", func(gd *v1.GitOpsDeployment, _, _ string) {
				gd.Spec.Destination = v1.ApplicationDestination{Environment: "theirs", Namespace: "anything"}
			}), condition: errorOccurred(v1.ErrMsgManagedEnvUnresolved)},
		{name: "environment of our own that is not connected",
			setup: func(t *testing.T, tenant, _ string) {
				require.NoError(t, k8s.Create(context.Background(), managedEnvironment(tenant, "unconnected", "no-such-secret")))
			},
			object: badDeployment("env-unconnected", func(gd *v1.GitOpsDeployment, _, _ string) {
				gd.Spec.Destination.Environment = "unconnected"
			}), condition: errorOccurred(v1.ErrMsgManagedEnvUnresolved)},
		{name: "empty path", object: badDeployment("path-empty", func(gd *v1.GitOpsDeployment, _, _ string) { gd.Spec.Source.Path = "" }),
			condition: errorOccurred(v1.ErrMsgPathEmpty)},
		{name: "root path", object: badDeployment("path-root", func(gd *v1.GitOpsDeployment, _, _ string) { gd.Spec.Source.Path = "/" }),
			condition: errorOccurred(v1.ErrMsgPathRoot)},
		{name: "path leaving the repository", object: badDeployment("path-parent", func(gd *v1.GitOpsDeployment, _, _ string) { gd.Spec.Source.Path = "../../etc" }),
			condition: errorOccurred("must stay inside the repository")},
		{name: "path leaving the repository midway", object: badDeployment("path-mid", func(gd *v1.GitOpsDeployment, _, _ string) { gd.Spec.Source.Path = "apps/../../x" }),
			condition: errorOccurred("must stay inside the repository")},
		{name: "sync option other than CreateNamespace", object: badDeployment("opt-replace", func(gd *v1.GitOpsDeployment, _, _ string) {
			gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{"Replace=true"}}
		}), condition: errorOccurred("unsupported sync option")},
		{name: "sync option smuggling a second option", object: badDeployment("opt-smuggle", func(gd *v1.GitOpsDeployment, _, _ string) {
			gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{"CreateNamespace=true,ServerSideApply=true"}}
		}), condition: errorOccurred("unsupported sync option")},
		{name: "over-long name with a foreign namespace",
			object:    badDeployment(strings.Repeat("n", 253), destination(func(_, _ string) string { return "kube-public" })),
			condition: errorOccurred(v1.ErrMsgEnvironmentNeeded)},
		{name: "dotted name with a foreign namespace",
			object:    badDeployment("my.app.v2", destination(func(_, n string) string { return n })),
			condition: errorOccurred(v1.ErrMsgEnvironmentNeeded)},
	}
}

// TestTenantIsolationMatrix creates every hostile input at once, then checks
// that each got its condition and that nothing was written in the Argo CD
// namespace on its behalf.
func TestTenantIsolationMatrix(t *testing.T) {
	cases := isolationCases()
	require.GreaterOrEqual(t, len(cases), 30)
	type created struct {
		c      isolationCase
		obj    client.Object
		tenant string
	}
	var all []created
	for _, c := range cases {
		tenant, neighbour := tenantNamespace(t), tenantNamespace(t)
		if c.setup != nil {
			c.setup(t, tenant, neighbour)
		}
		obj := c.object(tenant, neighbour)
		require.NoError(t, k8s.Create(context.Background(), obj), c.name)
		all = append(all, created{c: c, obj: obj, tenant: tenant})
	}
	for _, cr := range all {
		t.Run(cr.c.name, func(t *testing.T) {
			got := cr.obj.DeepCopyObject().(client.Object)
			require.Eventually(t, func() bool {
				return k8s.Get(context.Background(), client.ObjectKeyFromObject(cr.obj), got) == nil && cr.c.condition(got)
			}, deployWait, poll, "no refusal condition; last seen: %+v", got)
			assertNothingWrittenFor(t, got, cr.tenant)
			assertWarningEvent(t, got)
		})
	}
}

// assertNothingWrittenFor checks that no Argo CD object exists for obj: no
// Application or Secret owned by it, and no AppProject for a tenant that has
// nothing valid.
func assertNothingWrittenFor(t *testing.T, obj client.Object, tenant string) {
	t.Helper()
	owner := client.MatchingLabels{ownership.LabelOwnerUID: string(obj.GetUID())}
	inArgo := client.InNamespace(argo.Namespace)
	var apps argov1alpha1.ApplicationList
	require.NoError(t, k8s.List(context.Background(), &apps, inArgo, owner))
	assert.Empty(t, apps.Items, "an Application was written")
	var secrets corev1.SecretList
	require.NoError(t, k8s.List(context.Background(), &secrets, inArgo, owner))
	assert.Empty(t, secrets.Items, "a Secret was written")
	var projects argov1alpha1.AppProjectList
	require.NoError(t, k8s.List(context.Background(), &projects, inArgo, client.MatchingLabels{ownership.LabelTenantNS: tenant}))
	assert.Empty(t, projects.Items, "an AppProject was written for a tenant with nothing valid")
}

func assertWarningEvent(t *testing.T, obj client.Object) {
	t.Helper()
	assertEvent(t, obj, corev1.EventTypeWarning, "")
}

// assertEvent waits for an Event of type typ about obj, with reason unless empty.
func assertEvent(t *testing.T, obj client.Object, typ, reason string) {
	t.Helper()
	stack.WaitForEvent(t, k8s, obj, typ, reason, "", 10*time.Second)
}

// isolationCases gathers the cases of every kind.
func isolationCases() []isolationCase {
	cases := append(gitopsDeploymentIsolationCases(), managedEnvironmentIsolationCases()...)
	return append(cases, repositoryCredentialsIsolationCases()...)
}

// Symlinks that leave the repository (issue 13's isolation matrix: the cases
// only Argo CD's repo-server can refuse, since the sidecar never reads a
// repository). Each repository has a harmless ConfigMap beside the symlink;
// the deployment must show Argo CD's refusal as a ComparisonError and deploy
// nothing, and its Application stays in the tenant's project and namespace.
func TestSymlinksOutOfTheRepositoryAreRefused(t *testing.T) {
	ns := tenantNamespace(t)
	for i, c := range []struct {
		name, path, link, target string
	}{
		{"file to /etc/passwd", "apps", "apps/passwd.yaml", "/etc/passwd"},
		{"directory to /var/run/secrets", "apps", "apps/secrets", "/var/run/secrets"},
		{"relative link climbing out", "apps", "apps/up", "../../../.."},
		{"the path itself a link to /etc", "leak", "leak", "/etc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cm := fmt.Sprintf("symlink-%d", i)
			repo, _ := gitRepo(t, map[string]string{"apps/cm.yaml": configMap(cm, "x")})
			require.NoError(t, os.Symlink(c.target, filepath.Join(repo.Work, c.link)))
			_, err := repo.Commit(map[string]string{}, "add a symlink out of the repository")
			require.NoError(t, err)
			gd := deploy(t, ns, cm, repo.URL, c.path, v1.GitOpsDeploymentSpecTypeAutomated, nil)
			waitStatus(t, gd, "ComparisonError naming the symlink", func(gd *v1.GitOpsDeployment) bool {
				for _, cond := range gd.Status.Conditions {
					if cond.Type == v1.GitOpsDeploymentConditionComparisonError && cond.Status == v1.GitOpsConditionStatusTrue &&
						strings.Contains(cond.Message, "symlink") {
						return true
					}
				}
				return false
			})
			_, err = getConfigMap(ns, cm)
			assert.True(t, apierrors.IsNotFound(err), "a repository with a symlink out of it was deployed: %v", err)
			app := &argov1alpha1.Application{}
			require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argo.Namespace, Name: argocd.ApplicationName(string(gd.UID))}, app))
			tenant := &corev1.Namespace{}
			require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Name: ns}, tenant))
			assert.Equal(t, argocd.ProjectName(string(tenant.UID)), app.Spec.Project)
			assert.Equal(t, ns, app.Spec.Destination.Namespace)
		})
	}
}
