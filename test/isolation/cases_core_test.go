package isolation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/nontenant"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/repositorycredentials"
)

const tenantRepo = "https://git.example.com/tenant/apps.git"

// Hostile URLs: another disk, git's remote helpers, options, credentials,
// blanks, schemes that are not a network git remote.
var hostileRepoURLs = []string{
	"file:///var/lib/argocd/other.git", "file://localhost/etc", "FILE:///etc", "file:/etc", "/srv/git/other.git",
	"./other", "../other-tenant/repo", "repo.git", "ext::sh -c id", "ext::git-remote-evil", "fd::3",
	"--upload-pack=touch /tmp/p", "-u evil", " https://git.example.com/a.git", "https://git.example.com/a.git\n",
	"https://jane:" + canary("url-password") + "@git.example.com/a.git", "https:///a.git", "ftp://git.example.com/a.git",
	"s3://bucket/a", "gopher://git.example.com/a", "git@:a.git", "git@host:", "javascript:alert(1)", "",
}

// Paths that leave the repository.
var hostilePaths = []string{"..", "../other-tenant", "a/../../b", "x/..", "../../../../etc", "apps/../..",
	"/etc", "/var/run/secrets/kubernetes.io/serviceaccount", "//etc", "/app/../../x"}

// Revisions git would read as options, or that are not a branch, tag or commit.
var hostileRevisions = []string{"-x", "--upload-pack=touch /tmp/p", "--output=/tmp/x", "-c core.sshCommand=id",
	"--exec=id", "main..evil", "HEAD\n", "a b", "\tmain", "main\x7f"}

// Namespaces on this cluster that are not the tenant's.
var foreignNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", argoNS, sidecarNS, adminNS, "default", "*", neighbourNS, "no-such-namespace"}

func deployment(e tenantEnv, name string, mut func(*v1.GitOpsDeployment)) *v1.GitOpsDeployment {
	gd := &v1.GitOpsDeployment{ObjectMeta: om(e.NS, name), Spec: v1.GitOpsDeploymentSpec{
		Source: v1.ApplicationSource{RepoURL: tenantRepo, Path: "apps"},
		Type:   v1.GitOpsDeploymentSpecTypeAutomated,
	}}
	if mut != nil {
		mut(gd)
	}
	return gd
}

// neverTenantCases: every kind the sidecar reconciles, in every namespace that
// is never a tenant (issue 13 defect 1). DeploymentTargetClaims and
// DeploymentTargets there were bound and provisioned until this matrix.
func neverTenantCases() []hostileCase {
	var out []hostileCase
	for _, ns := range neverTenants {
		ns := ns
		msg := fmt.Sprintf("namespace %q is not a GitOps Service tenant", ns)
		refused := errorOccurred(nontenant.Reason, msg)
		objs := []struct {
			kind string
			obj  func() client.Object
			want want
		}{
			{"GitOpsDeployment", func() client.Object {
				return deployment(tenantEnv{NS: ns}, "app-of-apps", nil)
			}, refused},
			{"SyncRun", func() client.Object {
				return &v1.GitOpsDeploymentSyncRun{ObjectMeta: om(ns, "sync"), Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app-of-apps", RevisionID: "HEAD"}}
			}, refused},
			{"ManagedEnvironment", func() client.Object {
				return &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(ns, "cluster"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
					APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "creds"}}
			}, want{Type: v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: metav1.ConditionFalse, Reason: nontenant.Reason, Msg: msg}},
			{"RepositoryCredentials", func() client.Object {
				return &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om(ns, "repo"), Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{
					Repository: tenantRepo, Secret: "repo-creds"}}
			}, refused},
			{"Environment", func() client.Object {
				return &as.Environment{ObjectMeta: om(ns, "prod"), Spec: as.EnvironmentSpec{DisplayName: "prod", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}}
			}, refused},
			{"SnapshotEnvironmentBinding", func() client.Object {
				return &as.SnapshotEnvironmentBinding{ObjectMeta: om(ns, "binding"), Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "s1"}}
			}, refused},
			{"PromotionRun", func() client.Object {
				return &as.PromotionRun{ObjectMeta: om(ns, "promote"), Spec: as.PromotionRunSpec{Application: "shop", Snapshot: "s1",
					ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
			}, refused},
			{"DeploymentTargetClaim", func() client.Object {
				return &as.DeploymentTargetClaim{ObjectMeta: om(ns, "claim"), Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: class}}
			}, refused},
			{"DeploymentTarget", func() client.Object {
				return &as.DeploymentTarget{ObjectMeta: om(ns, "target"), Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: class,
					KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{DefaultNamespace: "default", APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "creds"}}}
			}, refused},
		}
		for _, o := range objs {
			o := o
			out = append(out, hostileCase{Kind: o.kind, Name: "in never-tenant namespace " + ns, Namespace: ns,
				Object: func(tenantEnv) client.Object { return o.obj() }, Want: o.want})
		}
	}
	return out
}

func deploymentCases() []hostileCase {
	var out []hostileCase
	add := func(name string, w want, mut func(gd *v1.GitOpsDeployment, e tenantEnv)) {
		out = append(out, hostileCase{Kind: "GitOpsDeployment", Name: name, Object: func(e tenantEnv) client.Object {
			return deployment(e, "app", func(gd *v1.GitOpsDeployment) { mut(gd, e) })
		}, Want: w})
	}
	refused := func(msg string) want { return errorOccurred("", msg) }
	for i, url := range hostileRepoURLs {
		url := url
		add(fmt.Sprintf("repoURL %02d %q", i, url), refused("spec.source.repoURL"), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Source.RepoURL = url })
	}
	for _, p := range hostilePaths {
		p := p
		add(fmt.Sprintf("path %q", p), refused("must stay inside the repository"), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Source.Path = p })
	}
	add("root path", refused(v1.ErrMsgPathRoot), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Source.Path = "/" })
	add("empty path", refused(v1.ErrMsgPathEmpty), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Source.Path = "" })
	for _, rev := range hostileRevisions {
		rev := rev
		add(fmt.Sprintf("targetRevision %q", rev), refused("spec.source.targetRevision"), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Source.TargetRevision = rev })
	}
	for _, ns := range foreignNamespaces {
		ns := ns
		add("destination namespace "+ns, refused(v1.ErrMsgEnvironmentNeeded), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Destination.Namespace = ns })
	}
	for _, o := range []string{"Replace=true", "ServerSideApply=true", "Validate=false", "PruneLast=true", "CreateNamespace=yes",
		"FailOnSharedResource=false", "RespectIgnoreDifferences=true", "CreateNamespace=true,ServerSideApply=true"} {
		o := o
		add("sync option "+o, refused("unsupported sync option"), func(gd *v1.GitOpsDeployment, _ tenantEnv) {
			gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOption(o)}}
		})
	}
	for _, typ := range []string{"", "Auto", "automated ", "AUTOMATED"} {
		typ := typ
		add(fmt.Sprintf("type %q", typ), refused(v1.ErrMsgTypeInvalid), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Type = v1.GitOpsDeploymentSpecType(typ) })
	}
	for _, env := range []string{"no-such-env", "theirs", "../" + neighbourNS + "/theirs", neighbourNS + "/theirs"} {
		env := env
		add("environment "+env, refused(v1.ErrMsgManagedEnvUnresolved), func(gd *v1.GitOpsDeployment, _ tenantEnv) { gd.Spec.Destination.Environment = env })
	}
	out = append(out, hostileCase{Kind: "GitOpsDeployment", Name: "own environment that is not connected",
		Setup: func(t *testing.T, e tenantEnv) {
			create(t, &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(e.NS, "unconnected"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
				APIURL: kube.Config.Host, ClusterCredentialsSecret: "no-such-secret"}})
		},
		Object: func(e tenantEnv) client.Object {
			return deployment(e, "app", func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Environment = "unconnected" })
		}, Want: refused(v1.ErrMsgManagedEnvUnresolved)})
	// Issue 13 defect 3: an AppProject with the tenant's project name that we
	// did not make is never used, whatever it allows.
	for name, labels := range map[string]func(ns string) map[string]string{
		"squatted AppProject":                    func(string) map[string]string { return nil },
		"squatted AppProject with our labels":    func(ns string) map[string]string { return lookAlikeLabels(ns) },
		"squatted AppProject with a stolen name": func(ns string) map[string]string { return map[string]string{"app.kubernetes.io/part-of": "argocd"} },
	} {
		labels := labels
		out = append(out, hostileCase{Kind: "GitOpsDeployment", Name: name,
			Setup:  func(t *testing.T, e tenantEnv) { squatProject(t, e.NS, labels(e.NS)) },
			Object: func(e tenantEnv) client.Object { return deployment(e, "app", nil) },
			Want:   refused("was not created by the GitOps Service")})
	}
	for _, n := range []int{63, 253} {
		n := n
		out = append(out, hostileCase{Kind: "GitOpsDeployment", Name: fmt.Sprintf("%d-character name to kube-system", n),
			Object: func(e tenantEnv) client.Object {
				return deployment(e, longName("app-", n), func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Namespace = "kube-system" })
			}, Want: refused(v1.ErrMsgEnvironmentNeeded)})
		out = append(out, hostileCase{Kind: "GitOpsDeployment", Name: fmt.Sprintf("%d-character name with a file:// URL", n),
			Object: func(e tenantEnv) client.Object {
				return deployment(e, longName("app-", n), func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = "file:///var/lib/argocd" })
			}, Want: refused("spec.source.repoURL")})
	}
	return out
}

// lookAlikeLabels are our labels for a tenant, without the namespace UID.
func lookAlikeLabels(ns string) map[string]string {
	return map[string]string{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: ns,
		ownership.LabelOwnerKind: ownership.KindTenant, ownership.LabelOwnerUID: "not-the-namespace-uid"}
}

// squatProject plants the tenant's AppProject name with a project that allows everything.
func squatProject(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	n := &corev1.Namespace{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Name: ns}, n))
	create(t, &argov1alpha1.AppProject{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ProjectName(string(n.UID)), Labels: labels},
		Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"*"},
			Destinations:             []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}},
			ClusterResourceWhitelist: []metav1.GroupKind{{Group: "*", Kind: "*"}}},
	})
}

func syncRunCases() []hostileCase {
	var out []hostileCase
	manual := func(t *testing.T, e tenantEnv) {
		create(t, deployment(e, "app", func(gd *v1.GitOpsDeployment) { gd.Spec.Type = v1.GitOpsDeploymentSpecTypeManual }))
	}
	run := func(e tenantEnv, name, deployment, rev string) client.Object {
		return &v1.GitOpsDeploymentSyncRun{ObjectMeta: om(e.NS, name), Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: rev}}
	}
	for _, rev := range hostileRevisions {
		rev := rev
		out = append(out, hostileCase{Kind: "SyncRun", Name: fmt.Sprintf("revisionId %q", rev), Setup: manual,
			Object: func(e tenantEnv) client.Object { return run(e, "sync", "app", rev) }, Want: errorOccurred("", "spec.revisionId")})
	}
	out = append(out, hostileCase{Kind: "SyncRun", Name: "253-character name with revisionId --upload-pack", Setup: manual,
		Object: func(e tenantEnv) client.Object {
			return run(e, longName("sync-", 253), "app", "--upload-pack=touch /tmp/p")
		},
		Want: errorOccurred("", "spec.revisionId")})
	for _, target := range []string{"theirs", "../" + neighbourNS + "/theirs", neighbourNS + "/theirs"} {
		target := target
		out = append(out, hostileCase{Kind: "SyncRun", Name: "deployment " + target,
			Object: func(e tenantEnv) client.Object { return run(e, "sync", target, "HEAD") },
			Want:   errorOccurred("", fmt.Sprintf(v1.ErrMsgSyncRunDeploymentFmt, target))})
	}
	out = append(out, hostileCase{Kind: "SyncRun", Name: "automated deployment",
		Setup:  func(t *testing.T, e tenantEnv) { create(t, deployment(e, "app", nil)) },
		Object: func(e tenantEnv) client.Object { return run(e, "sync", "app", "HEAD") },
		Want:   errorOccurred("", "Automated sync policy is not allowed")})
	return out
}

func repositoryCredentialsCases() []hostileCase {
	var out []hostileCase
	rc := func(e tenantEnv, url, secret string) client.Object {
		return &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om(e.NS, "repo"), Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: url, Secret: secret}}
	}
	repoSecret := func(ns, name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: om(ns, name), Type: typ, StringData: data}
	}
	valid := func(url string) map[string]string {
		return map[string]string{repositorycredentials.KeyURL: url, repositorycredentials.KeyUsername: "jane", repositorycredentials.KeyPassword: canary("repo")}
	}
	for i, url := range []string{"file:///var/lib/argocd/other.git", "ext::sh -c id", "-u evil", "--upload-pack=touch /tmp/p",
		"https://jane:" + canary("rc-url") + "@git.example.com/a.git", "http://git.example.com/a.git", "git://git.example.com/a.git",
		"ftp://git.example.com/a.git", "ssh://", "https:///a.git", "git@github.com:org/repo.git"} {
		url := url
		out = append(out, hostileCase{Kind: "RepositoryCredentials", Name: fmt.Sprintf("url %02d %q", i, url),
			Setup: func(t *testing.T, e tenantEnv) {
				create(t, repoSecret(e.NS, "creds", v1.RepositoryCredentialSecretType, valid(url)))
			},
			Object: func(e tenantEnv) client.Object { return rc(e, url, "creds") },
			Want:   errorOccurred(v1.RepositoryCredentialReasonInvalidRepositoryURL, "")})
	}
	for _, secret := range []string{"theirs-repo", "../" + neighbourNS + "/theirs-repo", neighbourNS + "/theirs-repo"} {
		secret := secret
		out = append(out, hostileCase{Kind: "RepositoryCredentials", Name: "Secret " + secret,
			Object: func(e tenantEnv) client.Object { return rc(e, tenantRepo, secret) },
			Want:   errorOccurred(v1.RepositoryCredentialReasonSecretNotFound, "")})
	}
	out = append(out, hostileCase{Kind: "RepositoryCredentials", Name: "no Secret",
		Object: func(e tenantEnv) client.Object { return rc(e, tenantRepo, "") },
		Want:   errorOccurred(v1.RepositoryCredentialReasonSecretNotSpecified, "")})
	for typ, data := range map[corev1.SecretType]map[string]string{
		corev1.SecretTypeOpaque:           valid(tenantRepo),
		v1.ManagedEnvironmentSecretType:   {"kubeconfig": "x", repositorycredentials.KeyURL: tenantRepo},
		corev1.SecretTypeBasicAuth:        {corev1.BasicAuthUsernameKey: "jane", corev1.BasicAuthPasswordKey: canary("basic")},
		corev1.SecretTypeSSHAuth:          {corev1.SSHAuthPrivateKey: canary("ssh")},
		corev1.SecretTypeDockerConfigJson: {corev1.DockerConfigJsonKey: `{"auths":{}}`},
	} {
		typ, data := typ, data
		out = append(out, hostileCase{Kind: "RepositoryCredentials", Name: "Secret of type " + string(typ),
			Setup:  func(t *testing.T, e tenantEnv) { create(t, repoSecret(e.NS, "creds", typ, data)) },
			Object: func(e tenantEnv) client.Object { return rc(e, tenantRepo, "creds") },
			Want:   errorOccurred(v1.RepositoryCredentialReasonSecretInvalidType, "")})
	}
	for name, c := range map[string]struct {
		url    string
		data   map[string]string
		reason string
	}{
		"Secret for another repository": {tenantRepo, valid("https://git.example.com/other/repo.git"), v1.RepositoryCredentialReasonInvalidRepositoryURL},
		"ssh URL without a key": {"ssh://git@git.example.com/tenant/apps.git", map[string]string{repositorycredentials.KeyURL: "ssh://git@git.example.com/tenant/apps.git"},
			v1.RepositoryCredentialReasonInvalidCredentials},
		"ssh URL with a key that is not one": {"ssh://git@git.example.com/tenant/apps.git", map[string]string{repositorycredentials.KeyURL: "ssh://git@git.example.com/tenant/apps.git",
			repositorycredentials.KeySSHPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\n" + canary("ssh-key") + "\n-----END OPENSSH PRIVATE KEY-----\n"}, v1.RepositoryCredentialReasonInvalidCredentials},
		"https URL with a username only": {tenantRepo, map[string]string{repositorycredentials.KeyURL: tenantRepo, repositorycredentials.KeyUsername: "jane"},
			v1.RepositoryCredentialReasonInvalidCredentials},
	} {
		c := c
		out = append(out, hostileCase{Kind: "RepositoryCredentials", Name: name,
			Setup: func(t *testing.T, e tenantEnv) {
				create(t, repoSecret(e.NS, "creds", v1.RepositoryCredentialSecretType, c.data))
			},
			Object: func(e tenantEnv) client.Object { return rc(e, c.url, "creds") },
			Want:   errorOccurred(c.reason, "")})
	}
	return out
}

// kubeconfigYAML is a one-context kubeconfig for server; user is the YAML of
// its user (indented under "user:"), cluster extra lines under "cluster:".
func kubeconfigYAML(server, user, cluster string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
%s
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
users:
- name: u
  user:
%s
`, server, cluster, user)
}

func managedEnvironmentCases() []hostileCase {
	var out []hostileCase
	token := func(purpose string) string { return "    token: " + canary(purpose) }
	server := func() string { return kube.Config.Host }
	refused := func(reason, msg string) want {
		return want{Type: v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: metav1.ConditionFalse, Reason: reason, Msg: msg}
	}
	env := func(e tenantEnv, secret string, mut func(*v1.GitOpsDeploymentManagedEnvironment)) client.Object {
		me := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om(e.NS, "env"), Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL: kube.Config.Host, ClusterCredentialsSecret: secret}}
		if mut != nil {
			mut(me)
		}
		return me
	}
	secret := func(typ corev1.SecretType, data func() map[string]string) func(*testing.T, tenantEnv) {
		return func(t *testing.T, e tenantEnv) {
			create(t, &corev1.Secret{ObjectMeta: om(e.NS, "creds"), Type: typ, StringData: data()})
		}
	}
	kubeconfig := func(kc func() string) func(*testing.T, tenantEnv) {
		return secret(v1.ManagedEnvironmentSecretType, func() map[string]string { return map[string]string{"kubeconfig": kc()} })
	}
	add := func(name string, w want, setup func(*testing.T, tenantEnv), mut func(*v1.GitOpsDeploymentManagedEnvironment)) {
		out = append(out, hostileCase{Kind: "ManagedEnvironment", Name: name, Setup: setup,
			Object: func(e tenantEnv) client.Object { return env(e, "creds", mut) }, Want: w})
	}
	for _, s := range []string{"theirs-kubeconfig", "../" + neighbourNS + "/theirs-kubeconfig", neighbourNS + "/theirs-kubeconfig", "../kube-system/creds"} {
		s := s
		out = append(out, hostileCase{Kind: "ManagedEnvironment", Name: "Secret " + s,
			Object: func(e tenantEnv) client.Object { return env(e, s, nil) },
			Want:   refused(v1.ManagedEnvironmentReasonSecretNotFound, "")})
	}
	valid := func() map[string]string {
		return map[string]string{"kubeconfig": kubeconfigYAML(server(), token("typed"), "")}
	}
	for _, typ := range []corev1.SecretType{corev1.SecretTypeOpaque, v1.RepositoryCredentialSecretType} {
		add("Secret of type "+string(typ), refused(v1.ManagedEnvironmentReasonInvalidSecretType, ""), secret(typ, valid), nil)
	}
	add("Secret without a kubeconfig", refused(v1.ManagedEnvironmentReasonMissingKubeConfigField, ""),
		secret(v1.ManagedEnvironmentSecretType, func() map[string]string { return map[string]string{"token": canary("no-kubeconfig")} }), nil)
	add("kubeconfig that is not YAML", refused(v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, ""),
		kubeconfig(func() string { return "{{{ not: [yaml " + canary("garbage") }), nil)
	for name, c := range map[string]struct{ user, cluster, msg string }{
		"exec plugin":              {user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch /tmp/pwned']}", msg: "exec"},
		"auth-provider":            {user: "    auth-provider: {name: oidc, config: {id-token: " + canary("oidc") + "}}", msg: "auth-provider"},
		"tokenFile":                {user: "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", msg: "tokenFile"},
		"client certificate files": {user: "    client-certificate: /etc/kubernetes/pki/admin.crt\n    client-key: /etc/kubernetes/pki/admin.key", msg: "client-certificate"},
		"impersonation":            {user: token("impersonate") + "\n    as: system:admin", msg: "impersonates"},
		"impersonated groups":      {user: token("impersonate-group") + "\n    as-groups: [system:masters]", msg: "impersonates"},
		"CA from a file":           {user: token("ca-file"), cluster: "    certificate-authority: /etc/kubernetes/pki/ca.crt", msg: "certificate-authority"},
		"proxy":                    {user: token("proxy"), cluster: "    proxy-url: http://attacker.example.com:3128", msg: "proxy-url"},
	} {
		c := c
		add("kubeconfig with "+name, refused(v1.ManagedEnvironmentReasonUnsupportedCredentials, c.msg),
			kubeconfig(func() string { return kubeconfigYAML(server(), c.user, c.cluster) }), nil)
	}
	add("kubeconfig for another server than apiURL", refused(v1.ManagedEnvironmentReasonUnableToLocateContext, ""),
		kubeconfig(func() string { return kubeconfigYAML("https://10.0.0.1:6443", token("other-server"), "") }), nil)
	add("apiURL over plain http", refused(v1.ManagedEnvironmentReasonUnsupportedAPIURL, ""),
		kubeconfig(func() string { return kubeconfigYAML("http://127.0.0.1:6443", token("http"), "") }),
		func(me *v1.GitOpsDeploymentManagedEnvironment) { me.Spec.APIURL = "http://127.0.0.1:6443" })
	add("apiURL with a query smuggling a second server", refused(v1.ManagedEnvironmentReasonUnsupportedAPIURL, ""), nil,
		func(me *v1.GitOpsDeploymentManagedEnvironment) {
			me.Spec.APIURL = kube.Config.Host + "?server=https://10.0.0.1"
		})
	add("apiURL with credentials", refused(v1.ManagedEnvironmentReasonUnsupportedAPIURL, ""), nil,
		func(me *v1.GitOpsDeploymentManagedEnvironment) {
			me.Spec.APIURL = strings.Replace(kube.Config.Host, "https://", "https://admin:"+canary("api-password")+"@", 1)
		})
	add("apiURL file://", refused(v1.ManagedEnvironmentReasonUnsupportedAPIURL, ""), nil,
		func(me *v1.GitOpsDeploymentManagedEnvironment) { me.Spec.APIURL = "file:///var/run/secrets" })
	for _, nss := range [][]string{{"ok", "Not_A_Namespace"}, {"*"}, {"a/b"}} {
		nss := nss
		add(fmt.Sprintf("namespaces %q", nss), refused(v1.ManagedEnvironmentReasonInvalidNamespaceList, ""),
			kubeconfig(func() string { return kubeconfigYAML(server(), token("bad-namespaces"), "") }),
			func(me *v1.GitOpsDeploymentManagedEnvironment) { me.Spec.Namespaces = nss })
	}
	add("token the cluster does not accept", refused(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, ""),
		kubeconfig(func() string {
			kc, err := kube.KubeconfigFor(canary("rejected-token"))
			if err != nil {
				panic(err)
			}
			return string(kc)
		}), nil)
	// Issue 13 defect 7: a token good for the tenant's namespace only, with
	// kube-system named after it; every namespace is checked.
	for _, nss := range [][]string{{"", "kube-system"}, {"kube-system", ""}, {"", neighbourNS}} {
		nss := nss
		out = append(out, hostileCase{Kind: "ManagedEnvironment", Name: fmt.Sprintf("namespaced token with namespaces %q", nss),
			Setup: func(t *testing.T, e tenantEnv) {
				kc := namespacedKubeconfig(t, e.NS)
				create(t, &corev1.Secret{ObjectMeta: om(e.NS, "creds"), Type: v1.ManagedEnvironmentSecretType, StringData: map[string]string{"kubeconfig": kc}})
			},
			Object: func(e tenantEnv) client.Object {
				return env(e, "creds", func(me *v1.GitOpsDeploymentManagedEnvironment) {
					for _, ns := range nss {
						if ns == "" {
							ns = e.NS
						}
						me.Spec.Namespaces = append(me.Spec.Namespaces, ns)
					}
				})
			},
			Want: refused(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, "")})
	}
	return out
}

// namespacedKubeconfig is a kubeconfig for a ServiceAccount that may do
// everything in ns and nothing anywhere else.
func namespacedKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	create(t, &corev1.ServiceAccount{ObjectMeta: om(ns, "deployer")})
	create(t, &rbacv1.Role{ObjectMeta: om(ns, "all"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: om(ns, "deployer-all"),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "all"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: ns}}})
	cs, err := kube.Clientset()
	require.NoError(t, err)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "deployer",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	kc, err := kube.KubeconfigFor(tr.Status.Token)
	require.NoError(t, err)
	return string(kc)
}
