//go:build !unit

package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kubeconfig"
	"github.com/gitops-service/gitops-service/reconcilers/repositorycredentials"
)

const tenantNS = "jane"

// field is one field of one kind under test: make returns a valid object
// with the field set to v; reconciler says why the reconciler refuses v
// ("" when it accepts it), nil when no reconciler check of its own exists.
type field struct {
	name       string
	make       func(v string) client.Object
	reconciler func(v string) string
	// admitted are values the API server must admit, refused those it must
	// refuse, with a part of the message it must give.
	admitted []string
	refused  map[string]string
}

func deployment(mut func(*v1.GitOpsDeployment)) func(string) client.Object {
	return func(string) client.Object {
		gd := &v1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "gd-"},
			Spec: v1.GitOpsDeploymentSpec{
				Source: v1.ApplicationSource{RepoURL: "https://git.example.com/jane/apps.git", Path: "apps"},
				Type:   v1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
		mut(gd)
		return gd
	}
}

func apiURLField(name string, make func(v string) client.Object) field {
	return field{
		name: name, make: make,
		reconciler: func(v string) string {
			if r := kubeconfig.ValidateAPIURL(v); r != nil {
				return r.Message
			}
			return ""
		},
		admitted: []string{"https://api.example.com:6443", "https://127.0.0.1:6443", "HTTPS://api.example.com", "https://api.example.com/prefix/", "https://api.example.com:6443/"},
		refused: map[string]string{
			"http://api.example.com:6443":           "must be an https:// URL with a host",
			"api.example.com:6443":                  "must be an https:// URL with a host",
			"https://:6443":                         "must be an https:// URL with a host",
			"https:///x":                            "must be an https:// URL with a host",
			"ftp://api.example.com":                 "must be an https:// URL with a host",
			"https://user:pw@api.example.com":       "must not contain credentials",
			"https://user@api.example.com":          "must not contain credentials",
			"https://api.example.com:6443?x=1":      "must not contain credentials, a query",
			"https://api.example.com:6443/a&b":      "must not contain credentials, a query",
			"https://api.example.com:6443#frag":     "a fragment",
			"https://[::1]:6443":                    "any of [ ]",
			"https://*.example.com":                 "any of [ ]",
			"https://api.example.com/{x}":           "any of [ ]",
			"https://api.example.com/a b":           "spaces",
			"https://api.example.com/\\x":           "any of [ ]",
			"https://api.example.com\n":             "spaces",
			"https://api.example.com/" + long(2048): tooLong,
		},
	}
}

func long(n int) string { return strings.Repeat("x", n) }

// tooLong is the API server's message for a string over its maxLength.
const tooLong = "Too long"

// show quotes v, cut to 80 characters.
func show(v string) string {
	if len(v) > 80 {
		return fmt.Sprintf("%q... (%d bytes)", v[:80], len(v))
	}
	return fmt.Sprintf("%q", v)
}

func fields() []field {
	revision := func(v string) string { return argocd.CheckRevision(v) }
	revisionsAdmitted := []string{"", "main", "HEAD", "HEAD~1", "v1.2.3", "refs/heads/main", "feature/x-y_z", "3f0e1a2b4c5d6e7f8091a2b3c4d5e6f708192a3b", "release-1.0", "a.b"}
	revisionsRefused := map[string]string{
		"-x": "must not start with '-'", "--upload-pack=touch /tmp/p": "must not start with '-'", "-c core.sshCommand=id": "must not start with '-'",
		"main..evil": "'..'", "a b": "blanks", "main\n": "blanks", "tab\there": "blanks", "x\x00": "blanks", "del\x7f": "control characters",
		"main\u0085x": "control characters", "main\u009b31m": "control characters", "main\u2028": "control characters", long(4097): tooLong,
	}
	return []field{
		{
			name: "GitOpsDeployment spec.source.repoURL",
			make: func(v string) client.Object {
				return deployment(func(gd *v1.GitOpsDeployment) { gd.Spec.Source.RepoURL = v })(v)
			},
			// The most permissive reconciler: file:// allowed (--allow-file-repositories).
			reconciler: func(v string) string { return argocd.CheckRepoURL(v, true) },
			admitted: []string{
				"https://github.com/a/b", "https://github.com/a/b.git", "HTTPS://github.com/a/b", "https://git.example.com:8443/a/b.git",
				"http://127.0.0.1:9/apps.git", "git://git.example.com/apps.git", "ssh://git@github.com/a/b.git", "ssh://git@github.com:2222/a/b.git",
				"git@github.com:a/b.git", "jane.doe@git.example.com:team/apps.git", "https://user@github.com/a/b", "https://[::1]:8443/a.git",
				"https://git.example.com/a.git?ref=x", "file:///tmp/repo", "FILE:///tmp/repo", "file:/tmp/repo", "file://localhost/srv/git/a.git",
			},
			refused: map[string]string{
				"/srv/git/other.git": "must be an https://", "./other": "must be an https://", "../other-tenant/repo": "must be an https://",
				"repo.git": "must be an https://", "ext::sh -c id": "blanks", "ext::git-remote-evil": "must be an https://", "fd::3": "must be an https://",
				"--upload-pack=touch /tmp/p": "must not start with '-'", "-u": "must not start with '-'", " https://git.example.com/a.git": "blanks",
				"https://git.example.com/a.git\n": "blanks", "https://git.example.com/a\x00.git": "control characters", "https://git.example.com/a\u2028": "control characters",
				"https://jane:pw@git.example.com/a.git": "must not contain a password", "ssh://git:secret@github.com/a/b.git": "must not contain a password",
				"https:///a.git": "with a host", "https://:443/a.git": "with a host", "https://jane@/a.git": "with a host",
				"ftp://git.example.com/a.git": "must be an https://", "s3://bucket/a": "must be an https://", "gopher://git.example.com/a": "must be an https://",
				"git@:a.git": "must be an https://", "git@host:": "must be an https://", "javascript:alert(1)": "must be an https://",
				"": "should be at least 1 chars long", "https://git.example.com/" + long(2048): tooLong,
			},
		},
		{
			name: "GitOpsDeployment spec.source.path",
			make: func(v string) client.Object {
				return deployment(func(gd *v1.GitOpsDeployment) { gd.Spec.Source.Path = v })(v)
			},
			reconciler: argocd.CheckPath,
			// "" is refused by the reconciler with the original service's message.
			admitted: []string{"", ".", "apps", "apps/dev", "./apps", "apps/", "a..b", "..a", "a/..b/c", "a b/c", "overlays/dev/..data"},
			refused: map[string]string{
				"/": "no leading '/'", "/etc": "no leading '/'", "//x": "no leading '/'", "/var/lib/argocd/../x": "no leading '/'",
				"..": "no '..' segments", "../x": "no '..' segments", "a/../../b": "no '..' segments", "x/..": "no '..' segments", "apps/../..": "no '..' segments",
				"apps\n": "control or line-break", "apps\x1b[2J": "control or line-break", "ap\u0085ps": "control or line-break", "ap\u2029ps": "control or line-break",
				long(4097): tooLong,
			},
		},
		{
			name: "GitOpsDeployment spec.source.targetRevision",
			make: func(v string) client.Object {
				return deployment(func(gd *v1.GitOpsDeployment) { gd.Spec.Source.TargetRevision = v })(v)
			},
			reconciler: revision, admitted: revisionsAdmitted, refused: revisionsRefused,
		},
		{
			name: "GitOpsDeploymentSyncRun spec.revisionId",
			make: func(v string) client.Object {
				return &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "run-"},
					Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app", RevisionID: v}}
			},
			reconciler: revision, admitted: revisionsAdmitted, refused: revisionsRefused,
		},
		{
			name: "GitOpsDeployment spec.syncPolicy.syncOptions",
			make: func(v string) client.Object {
				return deployment(func(gd *v1.GitOpsDeployment) {
					gd.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOption(v)}}
				})(v)
			},
			reconciler: func(v string) string {
				if v1.SyncOption(v) == v1.SyncOptionCreateNamespaceTrue || v1.SyncOption(v) == v1.SyncOptionCreateNamespaceFalse {
					return ""
				}
				return "unsupported sync option"
			},
			admitted: []string{"CreateNamespace=true", "CreateNamespace=false"},
			refused: map[string]string{
				"Replace=true": "the only supported sync options", "ServerSideApply=true": "the only supported sync options",
				"CreateNamespace=yes": "the only supported sync options", "CreateNamespace=true,ServerSideApply=true": "the only supported sync options",
			},
		},
		{
			name: "GitOpsDeploymentRepositoryCredentials spec.url",
			make: func(v string) client.Object {
				return &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "creds-"},
					Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: v, Secret: "creds"}}
			},
			reconciler: func(v string) string {
				if r := repositorycredentials.ValidateURL(v); r != nil {
					return r.Message
				}
				return ""
			},
			// The reconciler trims blanks around the URL.
			admitted: []string{"https://github.com/a/b", "ssh://git@github.com/a/b.git", "HTTPS://github.com/a/b", " https://github.com/a/b", "https://github.com/a/b\n", "https://user@github.com/a/b"},
			refused: map[string]string{
				"http://github.com/a/b": "must start with https:// or ssh://", "git@github.com:a/b.git": "must start with https:// or ssh://",
				"file:///tmp/repo": "must start with https:// or ssh://", "github.com/a/b": "must start with https:// or ssh://",
				"-https://github.com/a":          "must start with https:// or ssh://",
				"https://jane:pw@github.com/a/b": "must not contain a password", "ssh://git:pw@github.com/a/b": "must not contain a password",
			},
		},
		apiURLField("GitOpsDeploymentManagedEnvironment spec.apiURL", func(v string) client.Object {
			return &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "env-"},
				Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: v, ClusterCredentialsSecret: "creds"}}
		}),
		apiURLField("Environment spec.unstableConfigurationFields.kubernetesCredentials.apiURL", func(v string) client.Object {
			return &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "env-"},
				Spec: as.EnvironmentSpec{UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{
					KubernetesClusterCredentials: as.KubernetesClusterCredentials{APIURL: v, ClusterCredentialsSecret: "creds"}}}}
		}),
	}
}

// tenant makes the namespace the cases are created in (dry run: nothing stays).
func tenant(t *testing.T) {
	t.Helper()
	err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// admit asks the API server to create obj (dry run: every admission check
// runs, nothing is stored) and returns its answer.
func admit(obj client.Object) error {
	return k8s.Create(context.Background(), obj, client.DryRunAll)
}

// Hostile values are refused at admission, each with its message; the values
// the reconcilers accept are all admitted (the admission checks never refuse
// what a reconciler would deploy, file:// included, which the platform may
// allow); and every value refused at admission is refused by the reconciler's
// own check too (defence in depth: the reconciler suites run without these
// rules, see stack.InstallCRDsWithoutAdmissionChecks).
func TestHostileValuesAreRefusedAtAdmission(t *testing.T) {
	tenant(t)
	total := 0
	for _, f := range fields() {
		t.Run(f.name, func(t *testing.T) {
			for _, v := range f.admitted {
				total++
				assert.NoError(t, admit(f.make(v)), "%s must be admitted", show(v))
				if f.reconciler != nil && v != "" && f.reconciler(v) != "" {
					// Admitted but refused by the reconciler: fine (a condition),
					// as long as it is the reconciler's to say, e.g. "" paths.
					t.Logf("%s: admitted, refused by the reconciler: %s", show(v), f.reconciler(v))
				}
			}
			for v, msg := range f.refused {
				total++
				err := admit(f.make(v))
				if !assert.Error(t, err, "%s must be refused at admission", show(v)) {
					continue
				}
				assert.True(t, apierrors.IsInvalid(err), "%s: refused for another reason: %v", show(v), err)
				assert.Contains(t, err.Error(), msg, "%s", show(v))
				// Lengths are bounded at admission only (they bound the rules'
				// cost); no reconciler refuses a long value by itself.
				if f.reconciler != nil && msg != tooLong {
					assert.NotEmpty(t, f.reconciler(v), "%s is refused at admission but the reconciler would accept it", show(v))
				}
			}
		})
	}
	t.Logf("%d values", total)
}

// Whatever a reconciler accepts is admitted: a sweep over more shapes of
// repository URLs than the table above, each checked both ways.
func TestNothingTheReconcilerAcceptsIsRefused(t *testing.T) {
	tenant(t)
	var urls []string
	for _, scheme := range []string{"https", "HTTPS", "http", "ssh", "git", "file", "ftp", "ext", ""} {
		for _, user := range []string{"", "git@", "a:b@", "@", "a@b@"} {
			for _, host := range []string{"host", "host:22", "[::1]", ":22", "", "127.0.0.1"} {
				for _, p := range []string{"", "/", "/a/b.git", "/a?x=y", "/a#f", ":a/b.git"} {
					if scheme == "" {
						urls = append(urls, user+host+p)
						continue
					}
					urls = append(urls, scheme+"://"+user+host+p, scheme+":"+user+host+p)
				}
			}
		}
	}
	admitted, refusedBoth := 0, 0
	gd := fields()[0]
	for _, u := range urls {
		if u == "" {
			continue
		}
		err := admit(gd.make(u))
		ok := argocd.CheckRepoURL(u, true) == ""
		if ok {
			assert.NoError(t, err, "%q: accepted by the reconciler, refused at admission", u)
		}
		if err == nil {
			admitted++
		} else if !ok {
			refusedBoth++
		}
	}
	t.Logf("%d URLs: %d admitted, %d refused by both", len(urls), admitted, refusedBoth)
	require.Positive(t, refusedBoth)
	require.Positive(t, admitted)
}

// Names are bounded by what the objects they name can have: 253 characters,
// 63 for namespaces and Environments (DNS labels).
func TestNamesAtTheirLimits(t *testing.T) {
	tenant(t)
	om := metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "n-"}
	cases := []struct {
		name  string
		limit int
		make  func(v string) client.Object
	}{
		{"GitOpsDeployment destination.namespace", 63, deployment(nil)},
		{"GitOpsDeployment destination.environment", 253, nil},
		{"GitOpsDeploymentSyncRun gitopsDeploymentName", 253, func(v string) client.Object {
			return &v1.GitOpsDeploymentSyncRun{ObjectMeta: om, Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: v}}
		}},
		{"GitOpsDeploymentRepositoryCredentials secret", 253, func(v string) client.Object {
			return &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: om, Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: "https://h/a", Secret: v}}
		}},
		{"GitOpsDeploymentManagedEnvironment credentialsSecret", 253, func(v string) client.Object {
			return &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: om, Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://h", ClusterCredentialsSecret: v}}
		}},
		{"Environment parentEnvironment", 63, func(v string) client.Object {
			return &as.Environment{ObjectMeta: om, Spec: as.EnvironmentSpec{ParentEnvironment: v}}
		}},
		{"Environment deploymentTargetClaim.claimName", 253, func(v string) client.Object {
			return &as.Environment{ObjectMeta: om, Spec: as.EnvironmentSpec{Configuration: as.EnvironmentConfiguration{Target: as.EnvironmentTarget{
				DeploymentTargetClaim: as.DeploymentTargetClaimConfig{ClaimName: v}}}}}
		}},
		{"SnapshotEnvironmentBinding environment", 63, func(v string) client.Object {
			return &as.SnapshotEnvironmentBinding{ObjectMeta: om, Spec: as.SnapshotEnvironmentBindingSpec{Application: "a", Environment: v, Snapshot: "s"}}
		}},
		{"SnapshotEnvironmentBinding application", 253, func(v string) client.Object {
			return &as.SnapshotEnvironmentBinding{ObjectMeta: om, Spec: as.SnapshotEnvironmentBindingSpec{Application: v, Environment: "e", Snapshot: "s"}}
		}},
		{"PromotionRun manualPromotion.targetEnvironment", 63, func(v string) client.Object {
			return &as.PromotionRun{ObjectMeta: om, Spec: as.PromotionRunSpec{Snapshot: "s", Application: "a", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: v}}}
		}},
		{"PromotionRun snapshot", 253, func(v string) client.Object {
			return &as.PromotionRun{ObjectMeta: om, Spec: as.PromotionRunSpec{Snapshot: v, Application: "a", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "e"}}}
		}},
		{"DeploymentTargetClaim targetName", 253, func(v string) client.Object {
			return &as.DeploymentTargetClaim{ObjectMeta: om, Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: "c", TargetName: v}}
		}},
		{"DeploymentTargetClaim deploymentTargetClassName", 253, func(v string) client.Object {
			return &as.DeploymentTargetClaim{ObjectMeta: om, Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(v)}}
		}},
	}
	cases[0].make = func(v string) client.Object {
		return deployment(func(gd *v1.GitOpsDeployment) {
			gd.Spec.Destination = v1.ApplicationDestination{Environment: "e", Namespace: v}
		})(v)
	}
	cases[1].make = func(v string) client.Object {
		return deployment(func(gd *v1.GitOpsDeployment) { gd.Spec.Destination.Environment = v })(v)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.NoError(t, admit(c.make(long(c.limit))), "a name of %d characters", c.limit)
			err := admit(c.make(long(c.limit + 1)))
			require.Error(t, err, "a name of %d characters", c.limit+1)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), fmt.Sprintf("must be at most %d characters", c.limit))
		})
	}
}

// Fields with a fixed set of values refuse any other.
func TestEnumFields(t *testing.T) {
	tenant(t)
	om := metav1.ObjectMeta{Namespace: tenantNS, GenerateName: "e-"}
	for name, obj := range map[string]client.Object{
		"GitOpsDeployment type":          deployment(func(gd *v1.GitOpsDeployment) { gd.Spec.Type = "Automated" })(""),
		"Environment deploymentStrategy": &as.Environment{ObjectMeta: om, Spec: as.EnvironmentSpec{DeploymentStrategy: "Sometimes"}},
		"Environment clusterType": &as.Environment{ObjectMeta: om, Spec: as.EnvironmentSpec{UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{
			ClusterType: "Nomad", KubernetesClusterCredentials: as.KubernetesClusterCredentials{APIURL: "https://h", ClusterCredentialsSecret: "s"}}}},
		"DeploymentTargetClass reclaimPolicy": &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "e-"},
			Spec: as.DeploymentTargetClassSpec{Provisioner: "p", ReclaimPolicy: "Keep"}},
	} {
		err := admit(obj)
		if assert.Error(t, err, name) {
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
			assert.Contains(t, err.Error(), "Unsupported value", name)
		}
	}
}
