package isolation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

const (
	wait = 45 * time.Second
	tick = 200 * time.Millisecond
)

// tenantEnv is where one case runs: a fresh tenant namespace of its own, and
// the shared, well-behaved neighbour.
type tenantEnv struct {
	NS        string
	Neighbour string
}

// hostileCase is one hostile or bad input. Setup creates what the CR needs
// (in the tenant's namespace); Object is the CR under test, which must end
// with the condition Want, or be rejected by the API server.
type hostileCase struct {
	Kind string
	Name string
	// Namespace, when set, is where the CR goes instead of a fresh tenant
	// namespace (the namespaces that are never tenants).
	Namespace string
	Setup     func(t *testing.T, e tenantEnv)
	Object    func(e tenantEnv) client.Object
	Want      want
}

// want is the refusal: a condition of type Type with Status, Reason (any when
// empty) and a message containing Msg.
type want struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
	Msg    string
}

func errorOccurred(reason, msg string) want {
	return want{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: reason, Msg: msg}
}

func (w want) String() string {
	return fmt.Sprintf("%s=%s reason %q message containing %q", w.Type, w.Status, w.Reason, w.Msg)
}

// conditionsOf returns the conditions a CR of any kind reports its refusals in.
func conditionsOf(obj client.Object) []metav1.Condition {
	gitops := func(in []v1.GitOpsDeploymentCondition) []metav1.Condition {
		var out []metav1.Condition
		for _, c := range in {
			out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: string(c.Reason), Message: c.Message})
		}
		return out
	}
	switch o := obj.(type) {
	case *v1.GitOpsDeployment:
		return gitops(o.Status.Conditions)
	case *v1.GitOpsDeploymentSyncRun:
		return gitops(o.Status.Conditions)
	case *v1.GitOpsDeploymentManagedEnvironment:
		return o.Status.Conditions
	case *v1.GitOpsDeploymentRepositoryCredentials:
		return o.Status.Conditions
	case *as.Environment:
		return o.Status.Conditions
	case *as.SnapshotEnvironmentBinding:
		return o.Status.BindingConditions
	case *as.PromotionRun:
		return o.Status.Conditions
	case *as.PromotionPreview:
		return o.Status.Conditions
	case *as.DeploymentTargetClaim:
		return o.Status.Conditions
	case *as.DeploymentTarget:
		return o.Status.Conditions
	case *as.SnapshotSubscription:
		return o.Status.Conditions
	}
	panic(fmt.Sprintf("no conditions for %T", obj))
}

func (w want) matches(obj client.Object) bool {
	c := meta.FindStatusCondition(conditionsOf(obj), w.Type)
	return c != nil && c.Status == w.Status && (w.Reason == "" || c.Reason == w.Reason) && strings.Contains(c.Message, w.Msg)
}

// allCases gathers the cases of every kind.
func allCases() []hostileCase {
	var all []hostileCase
	for _, kind := range [][]hostileCase{
		neverTenantCases(), deploymentCases(), syncRunCases(), repositoryCredentialsCases(), managedEnvironmentCases(), infraCases(),
		environmentCases(), bindingCases(), promotionRunCases(), deploymentTargetCases(), templateCases(), reviewCases(), previewCases(),
		probeCases(), subscriptionCases(), notificationCases(),
	} {
		all = append(all, kind...)
	}
	return all
}

// TestIsolationMatrix creates every hostile CR (each in a tenant namespace of
// its own), then checks that each got its refusal, that nothing was written
// for it, and that no Argo CD object of the sidecar gives any tenant more than
// its namespace.
func TestIsolationMatrix(t *testing.T) {
	ctx := context.Background()
	plantNeighbour(t)
	cases := allCases()
	type created struct {
		c   hostileCase
		obj client.Object
	}
	var all []created
	rejected := map[string]int{}
	names := map[string]bool{}
	for i, c := range cases {
		require.False(t, names[c.Kind+"/"+c.Name], "two cases named %s/%s", c.Kind, c.Name)
		names[c.Kind+"/"+c.Name] = true
		e := tenantEnv{NS: c.Namespace, Neighbour: neighbourNS}
		if e.NS == "" {
			e.NS = fmt.Sprintf("iso-%03d", i)
			require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.NS}}))
		}
		if c.Setup != nil {
			c.Setup(t, e)
		}
		obj := c.Object(e)
		if err := k8s.Create(ctx, obj); err != nil {
			// Refused by the API server (the CRD's schema): also a refusal.
			require.True(t, apierrors.IsInvalid(err), "%s/%s: create failed for another reason: %v", c.Kind, c.Name, err)
			rejected[c.Kind]++
			continue
		}
		all = append(all, created{c: c, obj: obj})
	}
	perKind := map[string]int{}
	for _, c := range cases {
		perKind[c.Kind]++
	}
	t.Run("cases", func(t *testing.T) {
		for _, cr := range all {
			t.Run(cr.c.Kind+"/"+cr.c.Name, func(t *testing.T) {
				t.Parallel()
				got := cr.obj.DeepCopyObject().(client.Object)
				key := client.ObjectKeyFromObject(cr.obj)
				if !assert.Eventually(t, func() bool {
					return k8s.Get(ctx, key, got) == nil && cr.c.Want.matches(got)
				}, wait, tick, "no refusal %s", cr.c.Want) {
					t.Logf("last seen conditions: %+v", conditionsOf(got))
					return
				}
				assertNothingWrittenFor(t, got)
				for _, c := range conditionsOf(got) {
					assert.NotContains(t, c.Message, canaryMark, "a credential reached the status")
				}
			})
		}
	})
	t.Run("fence", func(t *testing.T) { assertFence(t) })
	var kinds []string
	for k := range perKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var summary []string
	for _, k := range kinds {
		summary = append(summary, fmt.Sprintf("%s %d (%d rejected by the API server)", k, perKind[k], rejected[k]))
	}
	t.Logf("isolation matrix: %d hostile cases: %s", len(cases), strings.Join(summary, ", "))
	require.GreaterOrEqual(t, len(cases), 200)
}

// assertNothingWrittenFor checks that no Argo CD object is owned by obj.
func assertNothingWrittenFor(t *testing.T, obj client.Object) {
	t.Helper()
	owner := client.MatchingLabels{ownership.LabelOwnerUID: string(obj.GetUID())}
	for _, list := range []client.ObjectList{&argov1alpha1.ApplicationList{}, &argov1alpha1.ApplicationSetList{}, &corev1.SecretList{}} {
		require.NoError(t, k8s.List(context.Background(), list, client.InNamespace(argoNS), owner))
		assert.Zero(t, meta.LenList(list), "%T written for a refused %T", list, obj)
	}
}

// tenantFacts are what the fence of one tenant is checked against.
type tenantFacts struct {
	uid     string
	project string
	// environments are the UIDs of the tenant's ManagedEnvironments: the only
	// remote clusters its objects may name.
	environments map[string]bool
}

var (
	factsMu sync.Mutex
	facts   = map[string]*tenantFacts{}
)

func factsOf(t *testing.T, ns string) *tenantFacts {
	t.Helper()
	factsMu.Lock()
	defer factsMu.Unlock()
	if f := facts[ns]; f != nil {
		return f
	}
	n := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Name: ns}, n))
	f := &tenantFacts{uid: string(n.UID), project: argocd.ProjectName(string(n.UID)), environments: map[string]bool{}}
	var envs v1.GitOpsDeploymentManagedEnvironmentList
	require.NoError(t, k8s.List(context.Background(), &envs, client.InNamespace(ns)))
	for _, e := range envs.Items {
		f.environments[string(e.UID)] = true
	}
	facts[ns] = f
	return f
}

// checkDestination fails unless (server, namespace) is the tenant's own
// namespace on this cluster, or a cluster of one of its own ManagedEnvironments.
func checkDestination(t *testing.T, what, tenant, server, namespace string) {
	t.Helper()
	assert.NotContains(t, []string{"", "*"}, server, "%s: destination server", what)
	assert.NotEqual(t, "*", namespace, "%s: destination namespace", what)
	if server == argocd.LocalServer {
		assert.Equal(t, tenant, namespace, "%s: a destination on this cluster outside the tenant's namespace", what)
		return
	}
	_, uid, ok := strings.Cut(server, "?managedEnvironment=")
	assert.True(t, ok && factsOf(t, tenant).environments[uid], "%s: destination %s is not a ManagedEnvironment of tenant %s", what, server, tenant)
}

// assertFence checks every Argo CD object the sidecar wrote: it belongs to a
// tenant (never to a namespace that is never one), names only that tenant's
// AppProject, and that project reaches only the tenant's namespace and its own
// ManagedEnvironments' clusters.
func assertFence(t *testing.T) {
	ctx := context.Background()
	ours := client.MatchingLabels{ownership.LabelManagedBy: ownership.ManagedByValue}
	inArgo := client.InNamespace(argoNS)
	tenantOf := func(o client.Object) string {
		ns := o.GetLabels()[ownership.LabelTenantNS]
		assert.NotEmpty(t, ns, "%T %s has no tenant", o, o.GetName())
		assert.NotContains(t, neverTenants, ns, "%T %s was written for namespace %s, which is never a tenant", o, o.GetName(), ns)
		return ns
	}
	checked := map[string]int{}
	// usable are the AppProjects the sidecar made: every object of ours names one.
	usable := map[string]bool{}

	var projects argov1alpha1.AppProjectList
	require.NoError(t, k8s.List(ctx, &projects, inArgo, ours))
	for _, p := range projects.Items {
		ns := tenantOf(&p)
		if ns == "" {
			continue
		}
		what := "AppProject " + p.Name
		if p.Labels[ownership.LabelOwnerUID] != factsOf(t, ns).uid {
			// A squatter the cases planted with our labels: never used (below).
			checked["look-alike AppProject"]++
			continue
		}
		assert.Equal(t, factsOf(t, ns).project, p.Name, what)
		usable[p.Name] = true
		assert.NotEmpty(t, p.Spec.Destinations, what)
		for _, d := range p.Spec.Destinations {
			checkDestination(t, what, ns, d.Server, d.Namespace)
		}
		assert.Empty(t, p.Spec.ClusterResourceWhitelist, "%s lets the tenant write cluster-scoped resources", what)
		assert.Empty(t, p.Spec.SourceNamespaces, "%s takes Applications from other namespaces", what)
		for _, repo := range p.Spec.SourceRepos {
			assert.Empty(t, argocd.CheckRepoURL(repo, false), "%s lists a repository a tenant may not use", what)
		}
		checked["AppProject"]++
	}
	var apps argov1alpha1.ApplicationList
	require.NoError(t, k8s.List(ctx, &apps, inArgo, ours))
	for _, a := range apps.Items {
		ns := tenantOf(&a)
		if ns == "" {
			continue
		}
		what := "Application " + a.Name
		checkFenced(t, what, ns, usable, a.Spec.Project, a.Spec.Destination.Server, a.Spec.Destination.Namespace, a.Spec.Source)
		checked["Application"]++
	}
	// An ApplicationSet's project and destination come from our generator: ask
	// it what it would answer Argo CD for the set's binding.
	var sets argov1alpha1.ApplicationSetList
	require.NoError(t, k8s.List(ctx, &sets, inArgo, ours))
	for _, set := range sets.Items {
		ns := tenantOf(&set)
		if ns == "" {
			continue
		}
		what := "ApplicationSet " + set.Name
		assert.Equal(t, "{{.project}}", set.Spec.Template.Spec.Project, what)
		var sebs as.SnapshotEnvironmentBindingList
		require.NoError(t, k8s.List(ctx, &sebs, client.InNamespace(ns)))
		i := slices.IndexFunc(sebs.Items, func(s as.SnapshotEnvironmentBinding) bool {
			return string(s.UID) == set.Labels[ownership.LabelOwnerUID]
		})
		if !assert.GreaterOrEqual(t, i, 0, "%s has no binding in %s", what, ns) {
			continue
		}
		params, err := answer(ctx, &sebs.Items[i])
		require.NoError(t, err, what)
		for _, p := range params {
			checkFenced(t, what, ns, usable, p.Project, p.DestinationServer, p.DestinationNamespace,
				&argov1alpha1.ApplicationSource{RepoURL: p.RepoURL, Path: p.Path, TargetRevision: p.TargetRevision})
		}
		checked["ApplicationSet"]++
	}
	var secrets corev1.SecretList
	require.NoError(t, k8s.List(ctx, &secrets, inArgo, ours))
	for _, s := range secrets.Items {
		ns := tenantOf(&s)
		if ns == "" {
			continue
		}
		what := "Secret " + s.Name
		typ := s.Labels["argocd.argoproj.io/secret-type"]
		if typ != "cluster" && typ != "repository" {
			continue
		}
		assert.Equal(t, factsOf(t, ns).project, string(s.Data["project"]), "%s (%s) is not scoped to the tenant's project", what, typ)
		if typ == "cluster" {
			checkDestination(t, what, ns, string(s.Data["server"]), ns)
		}
		checked["Secret "+typ]++
	}
	t.Logf("fence checked: %v", checked)
	// The neighbour's valid objects are there, so the checks above ran on something.
	assert.NotZero(t, checked["AppProject"])
	assert.NotZero(t, checked["Application"])
	assert.NotZero(t, checked["Secret cluster"])
}

// answer is what the plugin generator tells Argo CD for seb (nothing when its
// inputs are refused).
func answer(ctx context.Context, seb *as.SnapshotEnvironmentBinding) ([]argocd.GeneratorParams, error) {
	in, err := binding.Resolve(ctx, k8s, k8s, argoNS, seb)
	var refused *kernel.Refusal
	if errors.As(err, &refused) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	params, err := binding.Params(in)
	if errors.As(err, &refused) {
		return nil, nil
	}
	return params, err
}

// create makes obj or fails the test.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, k8s.Create(context.Background(), obj), "%T %s", obj, obj.GetName())
}

// createWithStatus makes obj and then writes its status (a subresource).
func createWithStatus(t *testing.T, obj client.Object, status func()) {
	t.Helper()
	create(t, obj)
	status()
	require.NoError(t, k8s.Status().Update(context.Background(), obj), "%T %s status", obj, obj.GetName())
}

// longName is a DNS-1123 subdomain of exactly n characters starting with prefix.
func longName(prefix string, n int) string {
	return prefix + strings.Repeat("x", n-len(prefix))
}

// canaryMark is in every credential the cases hand out: it must never show.
const canaryMark = "CANARY"

func canary(purpose string) string { return canaryMark + "-" + purpose + "-0123456789abcdef" }

func om(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// checkFenced asserts what an Application (or the generator's answer for one)
// gives tenant ns: its own project, a destination of its own, and a source the
// sidecar would accept (src nil: the Application has no single source).
func checkFenced(t *testing.T, what, ns string, usable map[string]bool, project, server, namespace string, src *argov1alpha1.ApplicationSource) {
	t.Helper()
	assert.Equal(t, factsOf(t, ns).project, project, what)
	assert.True(t, usable[project], "%s names an AppProject the sidecar did not make", what)
	checkDestination(t, what, ns, server, namespace)
	if src != nil {
		assert.Empty(t, argocd.CheckRepoURL(src.RepoURL, false), what)
		assert.Empty(t, argocd.CheckPath(src.Path), what)
		assert.Empty(t, argocd.CheckRevision(src.TargetRevision), what)
	}
}
