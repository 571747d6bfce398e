package isolation

import (
	"context"
	"fmt"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/repositorycredentials"
)

const (
	gitopsRepo = "https://git.example.com/tenant/gitops.git"
	// class is a DeploymentTargetClass whose provisioner this sidecar does not run.
	class      = "isolation-external"
	otherClass = "isolation-other"
)

// plantNeighbour makes the well-behaved tenant: one valid object of every
// kind, each named "theirs" (or theirs-<what>), for the cases to reach for.
func plantNeighbour(t *testing.T) {
	t.Helper()
	ns := neighbourNS
	kc, err := kube.KubeconfigFor(canary("neighbour-token"))
	require.NoError(t, err)
	for _, c := range []string{class, otherClass} {
		err := k8s.Create(context.Background(), &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: c},
			Spec: as.DeploymentTargetClassSpec{Provisioner: "example.com/external", ReclaimPolicy: as.ReclaimPolicyRetain}})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	create(t, &corev1.Secret{ObjectMeta: om(ns, "theirs-kubeconfig"), Type: v1.ManagedEnvironmentSecretType, StringData: map[string]string{"kubeconfig": string(kc)}})
	create(t, &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(ns, "theirs"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL: kube.Config.Host, ClusterCredentialsSecret: "theirs-kubeconfig"}})
	// A connected one too, so that a cluster Secret and a remote destination are fenced.
	create(t, &corev1.Secret{ObjectMeta: om(ns, "theirs-namespaced"), Type: v1.ManagedEnvironmentSecretType,
		StringData: map[string]string{"kubeconfig": namespacedKubeconfig(t, ns)}})
	create(t, &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(ns, "theirs-connected"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL: kube.Config.Host, ClusterCredentialsSecret: "theirs-namespaced", Namespaces: []string{ns}}})
	create(t, deployment(tenantEnv{NS: ns}, "theirs-remote", func(gd *v1.GitOpsDeployment) {
		gd.Spec.Destination = v1.ApplicationDestination{Environment: "theirs-connected", Namespace: ns}
	}))
	create(t, deployment(tenantEnv{NS: ns}, "theirs", func(gd *v1.GitOpsDeployment) { gd.Spec.Type = v1.GitOpsDeploymentSpecTypeManual }))
	create(t, &corev1.Secret{ObjectMeta: om(ns, "theirs-repo"), Type: v1.RepositoryCredentialSecretType, StringData: map[string]string{
		repositorycredentials.KeyURL: tenantRepo, repositorycredentials.KeyUsername: "them", repositorycredentials.KeyPassword: canary("neighbour-repo")}})
	create(t, &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om(ns, "theirs"), Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{
		Repository: tenantRepo, Secret: "theirs-repo"}})
	appStudioTenant(t, tenantEnv{NS: ns}, "theirs", nil)
	create(t, &as.SnapshotEnvironmentBinding{ObjectMeta: om(ns, "theirs"), Spec: as.SnapshotEnvironmentBindingSpec{
		Application: "theirs", Environment: "theirs", Snapshot: "theirs"}})
	create(t, &as.DeploymentTarget{ObjectMeta: om(ns, "theirs-target"), Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: class,
		KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{DefaultNamespace: ns, APIURL: kube.Config.Host, ClusterCredentialsSecret: "theirs-kubeconfig"}}})
	create(t, &as.DeploymentTargetClaim{ObjectMeta: om(ns, "theirs-claim"), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: class, TargetName: "theirs-target"}})
	// The neighbour's connected environment has its cluster Secret, and its
	// binding its ApplicationSet, before the hostile cases come.
	require.Eventually(t, func() bool {
		me := &v1.GitOpsDeploymentManagedEnvironment{}
		if k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "theirs-connected"}, me) != nil {
			return false
		}
		c := meta.FindStatusCondition(me.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
		return c != nil && c.Status == metav1.ConditionTrue
	}, wait, tick, "the neighbour's ManagedEnvironment never connected")
	require.Eventually(t, func() bool {
		var sets argov1alpha1.ApplicationSetList
		return k8s.List(context.Background(), &sets, client.InNamespace(argoNS), client.MatchingLabels{"managed-gitops.redhat.com/tenant-namespace": ns}) == nil && len(sets.Items) == 1
	}, wait, tick, "the neighbour's binding got no ApplicationSet")
}

// appStudioTenant makes what a binding of application app needs in e.NS: the
// Application, Component "<app>-web" (whose GitOps repository comp may change),
// a local Environment and a Snapshot, all named app.
func appStudioTenant(t *testing.T, e tenantEnv, app string, gitops func(*as.GitOpsStatus)) {
	t.Helper()
	create(t, &as.Application{ObjectMeta: om(e.NS, app), Spec: as.ApplicationSpec{DisplayName: app}})
	comp := app + "-web"
	if len(comp) > 63 { // a Component name is a DNS label
		comp = "web"
	}
	c := &as.Component{ObjectMeta: om(e.NS, comp), Spec: as.ComponentSpec{ComponentName: "web", Application: app, ContainerImage: "quay.io/x/web:0"}}
	createWithStatus(t, c, func() {
		c.Status.GitOps = as.GitOpsStatus{RepositoryURL: gitopsRepo, Branch: "main", Context: "components/web"}
		if gitops != nil {
			gitops(&c.Status.GitOps)
		}
	})
	env := app
	if len(env) > 63 { // an Environment name is a DNS label
		env = "env"
	}
	create(t, &as.Environment{ObjectMeta: om(e.NS, env), Spec: as.EnvironmentSpec{DisplayName: app, DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}})
	create(t, &as.Snapshot{ObjectMeta: om(e.NS, app), Spec: as.SnapshotSpec{Application: app,
		Components: []as.SnapshotComponent{{Name: comp, ContainerImage: "quay.io/x/web:1"}}}})
}

func environmentCases() []hostileCase {
	var out []hostileCase
	creds := func(apiURL, secret string) *as.UnstableEnvironmentConfiguration {
		return &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
			APIURL: apiURL, ClusterCredentialsSecret: secret, TargetNamespace: "prod"}}
	}
	environment := func(e tenantEnv, name string, mut func(*as.Environment)) client.Object {
		env := &as.Environment{ObjectMeta: om(e.NS, name), Spec: as.EnvironmentSpec{DisplayName: "prod", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated,
			UnstableConfigurationFields: creds(kube.Config.Host, "creds")}}
		if mut != nil {
			mut(env)
		}
		return env
	}
	kubeconfigSecret := func(typ corev1.SecretType, data map[string]string) func(*testing.T, tenantEnv) {
		return func(t *testing.T, e tenantEnv) {
			create(t, &corev1.Secret{ObjectMeta: om(e.NS, "creds"), Type: typ, StringData: data})
		}
	}
	goodKubeconfig := map[string]string{"kubeconfig": kubeconfigYAML("https://127.0.0.1:1", "    token: "+canary("env"), "")}
	add := func(name string, w want, setup func(*testing.T, tenantEnv), mut func(*as.Environment)) {
		out = append(out, hostileCase{Kind: "Environment", Name: name, Setup: setup,
			Object: func(e tenantEnv) client.Object { return environment(e, "prod", mut) }, Want: w})
	}
	for _, s := range []string{"theirs-kubeconfig", "../" + neighbourNS + "/theirs-kubeconfig", neighbourNS + "/theirs-kubeconfig"} {
		s := s
		add("credentials Secret "+s, errorOccurred(as.EnvironmentReasonSecretNotFound, ""), nil,
			func(env *as.Environment) { env.Spec.UnstableConfigurationFields.ClusterCredentialsSecret = s })
	}
	for _, typ := range []corev1.SecretType{corev1.SecretTypeOpaque, v1.RepositoryCredentialSecretType} {
		add("credentials Secret of type "+string(typ), errorOccurred(as.EnvironmentReasonInvalidSecretType, ""), kubeconfigSecret(typ, goodKubeconfig), nil)
	}
	add("credentials Secret without a kubeconfig", errorOccurred(as.EnvironmentReasonMissingKubeConfigField, ""),
		kubeconfigSecret(v1.ManagedEnvironmentSecretType, map[string]string{"token": canary("env-token")}), nil)
	for name, url := range map[string]string{
		"apiURL over plain http":  "http://127.0.0.1:6443",
		"apiURL with a query":     "https://127.0.0.1:6443?server=https://10.0.0.1",
		"apiURL with credentials": "https://admin:" + canary("env-url") + "@127.0.0.1:6443",
		"apiURL file://":          "file:///var/run/secrets",
	} {
		url := url
		add(name, errorOccurred(as.EnvironmentReasonUnsupportedAPIURL, ""), kubeconfigSecret(v1.ManagedEnvironmentSecretType, goodKubeconfig),
			func(env *as.Environment) { env.Spec.UnstableConfigurationFields.APIURL = url })
	}
	add("credentials without apiURL", errorOccurred(as.EnvironmentReasonInvalidEnvironment, ""), nil,
		func(env *as.Environment) { env.Spec.UnstableConfigurationFields.APIURL = "" })
	add("credentials without a Secret", errorOccurred(as.EnvironmentReasonInvalidEnvironment, ""), nil,
		func(env *as.Environment) { env.Spec.UnstableConfigurationFields.ClusterCredentialsSecret = "" })
	add("both a claim and credentials", errorOccurred(as.EnvironmentReasonInvalidEnvironment, ""), nil,
		func(env *as.Environment) { env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "claim" })
	for _, claim := range []string{"theirs-claim", "../" + neighbourNS + "/theirs-claim"} {
		claim := claim
		add("claim "+claim, errorOccurred(as.EnvironmentReasonDeploymentTargetClaimNotFound, ""), nil, func(env *as.Environment) {
			env.Spec.UnstableConfigurationFields = nil
			env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = claim
		})
	}
	// A claim of our own that waits for the neighbour's target: the
	// Environment waits too, and writes nothing.
	add("claim waiting for the neighbour's target",
		want{Type: as.EnvironmentConditionErrorOccurred, Status: metav1.ConditionFalse, Reason: as.EnvironmentReasonDeploymentTargetClaimNotBound},
		func(t *testing.T, e tenantEnv) {
			create(t, &as.DeploymentTargetClaim{ObjectMeta: om(e.NS, "claim"), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: class, TargetName: "theirs-target"}})
		}, func(env *as.Environment) {
			env.Spec.UnstableConfigurationFields = nil
			env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "claim"
		})
	// A bound claim whose target points at the neighbour's Secret, or at an http apiURL.
	for name, c := range map[string]struct {
		apiURL, secret string
		w              want
	}{
		"bound target with the neighbour's Secret": {kube.Config.Host, "theirs-kubeconfig", errorOccurred(as.EnvironmentReasonSecretNotFound, "")},
		"bound target with an http apiURL":         {"http://127.0.0.1:6443", "creds", errorOccurred(as.EnvironmentReasonUnsupportedAPIURL, "")},
	} {
		c := c
		add(name, c.w, func(t *testing.T, e tenantEnv) {
			boundClaim(t, e, c.apiURL, c.secret)
		}, func(env *as.Environment) {
			env.Spec.UnstableConfigurationFields = nil
			env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "claim"
		})
	}
	// The ManagedEnvironment the Environment would write is taken by one we did not make.
	add("squatted ManagedEnvironment name", errorOccurred(as.EnvironmentReasonNameCollision, ""), func(t *testing.T, e tenantEnv) {
		kubeconfigSecret(v1.ManagedEnvironmentSecretType, goodKubeconfig)(t, e)
		create(t, &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(e.NS, "managed-environment-prod"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL: "https://127.0.0.1:2", ClusterCredentialsSecret: "creds"}})
	}, nil)
	out = append(out, hostileCase{Kind: "Environment", Name: "253-character name with the neighbour's Secret",
		Object: func(e tenantEnv) client.Object {
			return environment(e, longName("prod-", 253), func(env *as.Environment) {
				env.Spec.UnstableConfigurationFields.ClusterCredentialsSecret = "theirs-kubeconfig"
			})
		}, Want: errorOccurred(as.EnvironmentReasonSecretNotFound, "")})
	return out
}

// boundClaim makes DeploymentTarget "target" (class, apiURL, secret) and claim
// "claim" naming it in e.NS, and waits until the binder bound them.
func boundClaim(t *testing.T, e tenantEnv, apiURL, secret string) {
	t.Helper()
	create(t, &as.DeploymentTarget{ObjectMeta: om(e.NS, "target"), Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: class,
		KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{DefaultNamespace: e.NS, APIURL: apiURL, ClusterCredentialsSecret: secret}}})
	claim := &as.DeploymentTargetClaim{ObjectMeta: om(e.NS, "claim"), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: class, TargetName: "target"}}
	create(t, claim)
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(claim), claim) == nil && claim.Status.Phase == as.DeploymentTargetClaimPhaseBound
	}, wait, tick, "claim %s/claim never Bound", e.NS)
}

func bindingCases() []hostileCase {
	var out []hostileCase
	binding := func(e tenantEnv, name string, mut func(*as.SnapshotEnvironmentBinding)) client.Object {
		seb := &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, name), Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "shop", Snapshot: "shop"}}
		if mut != nil {
			mut(seb)
		}
		return seb
	}
	add := func(name string, w want, setup func(*testing.T, tenantEnv), mut func(*as.SnapshotEnvironmentBinding)) {
		if setup == nil {
			setup = func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, "shop", nil) }
		}
		out = append(out, hostileCase{Kind: "SnapshotEnvironmentBinding", Name: name, Setup: setup,
			Object: func(e tenantEnv) client.Object { return binding(e, "shop-binding", mut) }, Want: w})
	}
	refused := func(reason, msg string) want { return errorOccurred(reason, msg) }
	// Cross-tenant references: the names exist only in the neighbour's namespace.
	add("Application of the neighbour", refused(as.BindingReasonErrorOccurred, `Application "theirs" not found`), nil,
		func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Application = "theirs" })
	add("Snapshot of the neighbour", refused(as.BindingReasonErrorOccurred, `Snapshot "theirs" not found`), nil,
		func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Snapshot = "theirs" })
	add("Environment of the neighbour", refused(as.BindingReasonErrorOccurred, `Environment "theirs" not found`), nil,
		func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Environment = "theirs" })
	add("Environment kube-system", refused(as.BindingReasonErrorOccurred, `Environment "kube-system" not found`), nil,
		func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Environment = "kube-system" })
	// The Components' GitOps repositories (the Component's status).
	gitops := func(mut func(*as.GitOpsStatus)) func(*testing.T, tenantEnv) {
		return func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, "shop", mut) }
	}
	for _, url := range []string{"file:///var/lib/argocd/other.git", "ext::sh -c id", "--upload-pack=touch /tmp/p",
		"https://jane:" + canary("binding-url") + "@git.example.com/a.git", "ftp://git.example.com/a.git", "/srv/git/other.git"} {
		url := url
		add(fmt.Sprintf("GitOps repository %q", url), refused(as.BindingReasonGitOpsRepoNotReady, ""), gitops(func(g *as.GitOpsStatus) { g.RepositoryURL = url }), nil)
	}
	for _, p := range []string{"..", "../other-tenant", "a/../../b", "/etc", "/var/run/secrets/kubernetes.io/serviceaccount"} {
		p := p
		add(fmt.Sprintf("GitOps path %q", p), refused(as.BindingReasonGitOpsRepoNotReady, "must stay inside the repository"), gitops(func(g *as.GitOpsStatus) { g.Context = p }), nil)
	}
	for _, b := range []string{"-x", "--upload-pack=touch /tmp/p", "main..evil", "a b"} {
		b := b
		add(fmt.Sprintf("GitOps branch %q", b), refused(as.BindingReasonGitOpsRepoNotReady, "branch"), gitops(func(g *as.GitOpsStatus) { g.Branch = b }), nil)
	}
	add("duplicate components", refused(as.BindingReasonDuplicateComponents, ""), nil, func(seb *as.SnapshotEnvironmentBinding) {
		seb.Spec.Components = []as.BindingComponent{{Name: "shop-web"}, {Name: "shop-web"}}
	})
	add("Snapshot naming the neighbour's Component", refused(as.BindingReasonWaitingForComponentStatus, ""), func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.Snapshot{ObjectMeta: om(e.NS, "theirs"), Spec: as.SnapshotSpec{Application: "shop",
			Components: []as.SnapshotComponent{{Name: "theirs-web", ContainerImage: "quay.io/x/web:1"}}}})
	}, func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Snapshot = "theirs" })
	add("older binding of the same Application and Environment", refused(as.BindingReasonErrorOccurred, "duplicate combination"), func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, binding(e, "first", nil))
		time.Sleep(1100 * time.Millisecond) // creation times have seconds
	}, nil)
	add("squatted AppProject", refused(as.BindingReasonErrorOccurred, "was not created by the GitOps Service"), func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		squatProject(t, e.NS, lookAlikeLabels(e.NS))
	}, nil)
	add("Environment deploying through the neighbour's claim", refused(as.BindingReasonErrorOccurred, "not found"), func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.Environment{ObjectMeta: om(e.NS, "claimed"), Spec: as.EnvironmentSpec{DisplayName: "claimed",
			Configuration: as.EnvironmentConfiguration{Target: as.EnvironmentTarget{DeploymentTargetClaim: as.DeploymentTargetClaimConfig{ClaimName: "theirs-claim"}}}}})
	}, func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Environment = "claimed" })
	add("Environment with a claim that is not Bound", refused(as.BindingReasonErrorOccurred, "not Bound"), func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.DeploymentTargetClaim{ObjectMeta: om(e.NS, "claim"), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: class, TargetName: "theirs-target"}})
		create(t, &as.Environment{ObjectMeta: om(e.NS, "claimed"), Spec: as.EnvironmentSpec{DisplayName: "claimed",
			Configuration: as.EnvironmentConfiguration{Target: as.EnvironmentTarget{DeploymentTargetClaim: as.DeploymentTargetClaimConfig{ClaimName: "claim"}}}}})
	}, func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Environment = "claimed" })
	for _, n := range []int{63, 253} {
		n := n
		out = append(out, hostileCase{Kind: "SnapshotEnvironmentBinding", Name: fmt.Sprintf("%d-character name with a path leaving the repository", n),
			Setup: gitops(func(g *as.GitOpsStatus) { g.Context = "../../etc" }),
			Object: func(e tenantEnv) client.Object {
				return binding(e, longName("shop-", n), nil)
			}, Want: refused(as.BindingReasonGitOpsRepoNotReady, "must stay inside the repository")})
	}
	return out
}

func promotionRunCases() []hostileCase {
	var out []hostileCase
	run := func(e tenantEnv, mut func(*as.PromotionRun)) client.Object {
		pr := &as.PromotionRun{ObjectMeta: om(e.NS, "promote"), Spec: as.PromotionRunSpec{Application: "shop", Snapshot: "shop",
			ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "shop"}}}
		mut(pr)
		return pr
	}
	add := func(name, msg string, setup func(*testing.T, tenantEnv), mut func(*as.PromotionRun)) {
		if setup == nil {
			setup = func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, "shop", nil) }
		}
		out = append(out, hostileCase{Kind: "PromotionRun", Name: name, Setup: setup,
			Object: func(e tenantEnv) client.Object { return run(e, mut) }, Want: errorOccurred(as.PromotionRunReasonErrorOccurred, msg)})
	}
	add("Snapshot of the neighbour", `Snapshot "theirs" not found`, nil, func(pr *as.PromotionRun) { pr.Spec.Snapshot = "theirs" })
	add("Application of the neighbour", `Application "theirs" not found`, func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.Snapshot{ObjectMeta: om(e.NS, "theirs"), Spec: as.SnapshotSpec{Application: "theirs"}})
	}, func(pr *as.PromotionRun) { pr.Spec.Application, pr.Spec.Snapshot = "theirs", "theirs" })
	add("Snapshot of another Application", `is of Application "shop", not "other"`, nil, func(pr *as.PromotionRun) { pr.Spec.Application = "other" })
	for _, env := range []string{"theirs", "kube-system", argoNS} {
		env := env
		add("target Environment "+env, fmt.Sprintf("Environment %q not found", env), nil,
			func(pr *as.PromotionRun) { pr.Spec.ManualPromotion.TargetEnvironment = env })
	}
	add("automated from the neighbour's Environment", `Environment "theirs" not found`, nil, func(pr *as.PromotionRun) {
		pr.Spec.ManualPromotion = nil
		pr.Spec.AutomatedPromotion = &as.AutomatedPromotionConfiguration{InitialEnvironment: "theirs"}
	})
	// A rollback reaches only its own namespace: the neighbour's Environment
	// is not found, and a Snapshot a history names but the tenant does not
	// have (the neighbour's) is never rolled back to.
	rollbackOf := func(env string) func(*as.PromotionRun) {
		return func(pr *as.PromotionRun) {
			pr.Spec.ManualPromotion = &as.ManualPromotionConfiguration{TargetEnvironment: env, Rollback: true}
		}
	}
	add("rollback of the neighbour's Environment", `Environment "theirs" not found`, nil, rollbackOf("theirs"))
	add("rollback to the neighbour's Snapshot", "nothing to roll back to", func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		h := &as.PromotionHistory{ObjectMeta: om(e.NS, "shop.shop"), Spec: as.PromotionHistorySpec{Application: "shop", Environment: "shop"}}
		createWithStatus(t, h, func() {
			h.Status.Entries = []as.PromotionHistoryEntry{{PromotionRun: "p", PromotionRunUID: "u", Kind: as.PromotionKindPromotion, Snapshot: "theirs",
				CompletionTime: metav1.Now(), Result: as.PromotionRunCompleteResultSuccess}}
		})
	}, rollbackOf("shop"))
	// The binding a promotion would create is taken, for something else.
	add("binding name taken by another Application", "exists for Application", func(t *testing.T, e tenantEnv) {
		appStudioTenant(t, e, "shop", nil)
		create(t, &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, "shop-shop-generated-binding"),
			Spec: as.SnapshotEnvironmentBindingSpec{Application: "other", Environment: "other", Snapshot: "shop"}})
	}, func(*as.PromotionRun) {})
	// Names at the limits: the binding a promotion creates is named and
	// labelled after the Application and the Environment.
	for _, n := range []int{63, 64, 253} {
		n := n
		name := longName("shop-", n)
		out = append(out, hostileCase{Kind: "PromotionRun", Name: fmt.Sprintf("%d-character Application to the neighbour's Environment", n),
			Setup: func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, name, nil) },
			Object: func(e tenantEnv) client.Object {
				return run(e, func(pr *as.PromotionRun) {
					pr.Spec.Application, pr.Spec.Snapshot, pr.Spec.ManualPromotion.TargetEnvironment = name, name, "theirs"
				})
			}, Want: errorOccurred(as.PromotionRunReasonErrorOccurred, `Environment "theirs" not found`)})
	}
	// The same names to an Environment that exists: the binding the run
	// creates is named "<app>-<env>-generated-binding" and labelled with both.
	// Found by this matrix: the create failed on every retry, the run showed
	// nothing and stayed Active, blocking the application's next promotion.
	for _, n := range []int{64, 253} {
		n := n
		name := longName("shop-", n)
		out = append(out, hostileCase{Kind: "PromotionRun", Name: fmt.Sprintf("%d-character Application to its own Environment", n),
			Setup: func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, name, nil) },
			Object: func(e tenantEnv) client.Object {
				return run(e, func(pr *as.PromotionRun) {
					pr.Spec.Application, pr.Spec.Snapshot, pr.Spec.ManualPromotion.TargetEnvironment = name, name, "env"
				})
			}, Want: errorOccurred(as.PromotionRunReasonErrorOccurred, "cannot create SnapshotEnvironmentBinding")})
	}
	return out
}

func deploymentTargetCases() []hostileCase {
	claim := func(e tenantEnv, class, target string) client.Object {
		return &as.DeploymentTargetClaim{ObjectMeta: om(e.NS, "claim"), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(class), TargetName: target}}
	}
	target := func(t *testing.T, e tenantEnv, name, class, claimRef string) {
		create(t, &as.DeploymentTarget{ObjectMeta: om(e.NS, name), Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(class),
			ClaimRef:                     claimRef,
			KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{DefaultNamespace: e.NS, APIURL: kube.Config.Host, ClusterCredentialsSecret: "creds"}}})
	}
	waiting := want{Type: as.DeploymentTargetConditionErrorOccurred, Status: metav1.ConditionFalse, Reason: as.DeploymentTargetReasonWaitingForTarget}
	return []hostileCase{
		{Kind: "DeploymentTargetClaim", Name: "target of the neighbour",
			Object: func(e tenantEnv) client.Object { return claim(e, class, "theirs-target") }, Want: waiting},
		// Found by this matrix: the binder retried such a name for ever and the claim showed nothing.
		{Kind: "DeploymentTargetClaim", Name: "target of the neighbour by path",
			Object: func(e tenantEnv) client.Object { return claim(e, class, "../"+neighbourNS+"/theirs-target") },
			Want:   errorOccurred(as.DeploymentTargetReasonMismatch, "is not the name of a DeploymentTarget")},
		{Kind: "DeploymentTargetClaim", Name: "target of the neighbour by namespace/name",
			Object: func(e tenantEnv) client.Object { return claim(e, class, neighbourNS+"/theirs-target") },
			Want:   errorOccurred(as.DeploymentTargetReasonMismatch, "is not the name of a DeploymentTarget")},
		{Kind: "DeploymentTargetClaim", Name: "class that does not exist",
			Object: func(e tenantEnv) client.Object { return claim(e, "no-such-class", "") },
			Want:   errorOccurred(as.DeploymentTargetReasonClassNotFound, "")},
		{Kind: "DeploymentTargetClaim", Name: "target bound to another claim",
			Setup:  func(t *testing.T, e tenantEnv) { target(t, e, "target", class, "other-claim") },
			Object: func(e tenantEnv) client.Object { return claim(e, class, "target") },
			Want:   errorOccurred(as.DeploymentTargetReasonClaimedByAnother, "")},
		{Kind: "DeploymentTargetClaim", Name: "target of another class",
			Setup:  func(t *testing.T, e tenantEnv) { target(t, e, "target", otherClass, "") },
			Object: func(e tenantEnv) client.Object { return claim(e, class, "target") },
			Want:   errorOccurred(as.DeploymentTargetReasonMismatch, "")},
		{Kind: "DeploymentTargetClaim", Name: "253-character name for the neighbour's target",
			Object: func(e tenantEnv) client.Object {
				c := claim(e, class, "theirs-target")
				c.SetName(longName("claim-", 253))
				return c
			}, Want: waiting},
	}
}
