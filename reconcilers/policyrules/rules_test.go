package policyrules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// base is a promotion that every rule below lets in unless a case changes it.
func base() *Facts {
	return &Facts{
		Application: "shop", Snapshot: "release-1",
		Environment: Environment{Name: "prod", Namespace: "team-a", Parent: "staging", Labels: map[string]string{"tier": "prod"}},
		Images:      []Image{ParseImage("api", "registry.example.com/team/api@"+dig)},
		Signatures:  []as.ImageVerification{{Component: "api", Image: "registry.example.com/team/api@" + dig, Digest: dig, Verified: true, Signers: []string{"release-key"}}},
		Preview:     Preview{Found: true, Clean: true, Added: 1, Changed: 2, Kinds: []string{"ConfigMap", "apps/Deployment"}},
		Approvers:   []string{"alice", "bob"},
		Source:      Source{Environment: "staging", Changes: 10, Failures: 1},
		Now:         time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), // a Monday
	}
}

func withImage(ref string) func(*Facts) {
	return func(f *Facts) { f.Images = []Image{ParseImage("api", ref)} }
}

func TestRules(t *testing.T) {
	allowlist := "images.all(i, i.registry == 'registry.example.com')"
	cases := []struct {
		name   string
		rule   string
		change func(*Facts)
		allow  bool
	}{
		{"registry allowed", allowlist, nil, true},
		{"look-alike registry with a longer host", allowlist, withImage("registry.example.com.evil.io/team/api@" + dig), false},
		{"look-alike registry as user info", allowlist, withImage("registry.example.com@evil.io/team/api"), false},
		{"allowed registry as a path under another", allowlist, withImage("evil.io/registry.example.com/api@" + dig), false},
		{"allowed registry on another port", allowlist, withImage("registry.example.com:8443/team/api@" + dig), false},
		{"docker hub short name", allowlist, withImage("nginx"), false},
		{"one bad image among good ones", allowlist, func(f *Facts) {
			f.Images = append(f.Images, ParseImage("web", "registry.example.com/team/web@"+dig), ParseImage("db", "ghcr.io/x/db:1"))
		}, false},
		{"repository prefix", "images.all(i, i.repository.startsWith('team/'))", nil, true},
		{"repository of another team", "images.all(i, i.repository.startsWith('team/'))", withImage("registry.example.com/team-b/api@" + dig), false},
		{"digest required, digest given", "images.all(i, i.digest != '')", nil, true},
		{"digest required, tag given", "images.all(i, i.digest != '')", withImage("registry.example.com/team/api:v1"), false},
		{"digest required, tag and digest given", "images.all(i, i.digest != '' && i.tag == 'v1')", withImage("registry.example.com/team/api:v1@" + dig), true},
		{"digest required, a tag that looks like a digest", "images.all(i, i.digest != '')", withImage("registry.example.com/team/api:sha256"), false},
		{"no latest", "images.all(i, i.tag != 'latest')", withImage("registry.example.com/team/api"), false},
		{"invalid reference", "images.all(i, i.valid)", withImage("registry.example.com/team/api@sha256:short"), false},
		{"signatures required and verified", "signaturesRequired && signatures.all(s, s.verified)", nil, true},
		{"signatures not required", "signaturesRequired && signatures.all(s, s.verified)", func(f *Facts) { f.Signatures = nil }, false},
		{"one image unsigned", "signatures.all(s, s.verified)", func(f *Facts) {
			f.Signatures = append(f.Signatures, as.ImageVerification{Component: "web", Image: "x", Message: "no signature"})
		}, false},
		{"signed by the release key", "signatures.all(s, 'release-key' in s.signers)", nil, true},
		{"signed by another key", "signatures.all(s, 'release-key' in s.signers)", func(f *Facts) { f.Signatures[0].Signers = []string{"dev-key"} }, false},
		{"every image's digest verified", "images.all(i, signatures.exists(s, s.digest == i.digest && s.verified))", nil, true},
		{"verified digest is not the image's", "images.all(i, signatures.exists(s, s.digest == i.digest && s.verified))", func(f *Facts) {
			f.Signatures[0].Digest = "sha256:" + strings.Repeat("f", 64)
		}, false},
		{"provenance attested", "signatures.all(s, 'https://slsa.dev/provenance/v1' in s.attestations)", func(f *Facts) {
			f.Signatures[0].Attestations = []string{"https://slsa.dev/provenance/v1"}
		}, true},
		{"clean preview removes nothing", "preview.found && preview.clean && preview.removed == 0", nil, true},
		{"preview removes objects", "preview.found && preview.clean && preview.removed == 0", func(f *Facts) { f.Preview.Removed = 3 }, false},
		{"no preview", "preview.found", func(f *Facts) { f.Preview = Preview{} }, false},
		{"no cluster roles changed", "!('rbac.authorization.k8s.io/ClusterRole' in preview.kinds)", nil, true},
		{"cluster role changed", "!('rbac.authorization.k8s.io/ClusterRole' in preview.kinds)", func(f *Facts) {
			f.Preview.Kinds = append(f.Preview.Kinds, "rbac.authorization.k8s.io/ClusterRole")
		}, false},
		{"small change", "preview.added + preview.changed + preview.removed <= 5", nil, true},
		{"two approvers", "size(approvers) >= 2", nil, true},
		{"one approver", "size(approvers) >= 2", func(f *Facts) { f.Approvers = []string{"alice"} }, false},
		{"named approver", "'alice' in approvers", func(f *Facts) { f.Approvers = []string{"mallory", "bob"} }, false},
		{"low change failure rate", "source.changeFailureRate <= 0.2", nil, true},
		{"high change failure rate", "source.changeFailureRate <= 0.2", func(f *Facts) { f.Source.Failures = 5 }, false},
		{"no source environment", "source.environment == '' || source.changeFailureRate <= 0.2", func(f *Facts) { f.Source = Source{} }, true},
		{"not on a Friday, Monday", "now.getDayOfWeek('UTC') != 5", nil, true},
		{"not on a Friday, Friday", "now.getDayOfWeek('UTC') != 5", func(f *Facts) { f.Now = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC) }, false},
		{"office hours in Berlin", "now.getHours('Europe/Berlin') >= 9 && now.getHours('Europe/Berlin') < 17", func(f *Facts) {
			f.Now = time.Date(2026, 11, 30, 17, 30, 0, 0, time.UTC)
		}, false},
		{"prod needs two approvers, prod", "environment.name != 'prod' || size(approvers) >= 2", func(f *Facts) { f.Approvers = nil }, false},
		{"prod needs two approvers, dev", "environment.name != 'prod' || size(approvers) >= 2", func(f *Facts) { f.Approvers, f.Environment.Name = nil, "dev" }, true},
		{"rollbacks exempt", "rollback || images.all(i, i.digest != '')", func(f *Facts) { f.Rollback, f.Images = true, []Image{ParseImage("api", "x/y:1")} }, true},
		{"release snapshots only", "snapshot.startsWith('release-') && application == 'shop'", nil, true},
		// A tenant removes the label the rule indexes: the lookup fails and the rule denies.
		{"label removed from the Environment", "environment.labels['tier'] == 'prod'", func(f *Facts) { f.Environment.Labels = nil }, false},
		{"label rule with has", "!('tier' in environment.labels) || environment.labels['tier'] != 'dev' || size(approvers) >= 2", nil, true},
		{"runtime error denies", "1 / (size(approvers) - 2) == 0", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rules, err := Compile([]as.PolicyRule{{Name: "r", Expression: c.rule}})
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			f := base()
			if c.change != nil {
				c.change(f)
			}
			d := Evaluate(context.Background(), "p", rules, f)
			if got := d == nil; got != c.allow {
				t.Fatalf("allowed = %t, want %t (denial: %v)", got, c.allow, d)
			}
			if d != nil && !strings.HasPrefix(d.String(), "PromotionPolicy p rule r ") {
				t.Fatalf("denial does not name the rule: %s", d)
			}
		})
	}
	if len(cases) < 30 {
		t.Fatalf("%d cases", len(cases))
	}
}

func TestParseImage(t *testing.T) {
	for ref, want := range map[string]Image{
		"registry.example.com/team/api:v1@" + dig: {Registry: "registry.example.com", Repository: "team/api", Tag: "v1", Digest: dig, Valid: true},
		"registry.example.com:5000/api":           {Registry: "registry.example.com:5000", Repository: "api", Tag: "latest", Valid: true},
		"registry.example.com.evil.io/team/api":   {Registry: "registry.example.com.evil.io", Repository: "team/api", Tag: "latest", Valid: true},
		"nginx":                                   {Registry: "index.docker.io", Repository: "library/nginx", Tag: "latest", Valid: true},
		"registry.example.com@evil.io/x":          {},
		"registry.example.com/team/api@sha256:00": {},
	} {
		got := ParseImage("c", ref)
		want.Component, want.Image = "c", ref
		if got != want {
			t.Errorf("%s: got %+v, want %+v", ref, got, want)
		}
	}
}

func TestCompileRefuses(t *testing.T) {
	nested := "images.all(a, images.all(b, images.all(c, images.all(d, a.image + b.image + c.image + d.image != ''))))"
	for _, c := range []struct{ name, rule, want string }{
		{"syntax", "images.all(i, ", "does not compile"},
		{"not a bool", "size(images)", "not bool"},
		{"string", "'yes'", "not bool"},
		{"unknown variable", "imagez.all(i, true)", "does not compile"},
		{"unknown field", "images.all(i, i.registy == 'x')", "does not compile"},
		{"wrong type", "approvers == 2", "does not compile"},
		{"expensive nesting", nested, "may cost up to"},
		{"expensive regexes", "images.all(a, images.all(b, images.all(c, a.image.matches(b.image + c.image))))", "may cost up to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile([]as.PolicyRule{{Name: "ok", Expression: "true"}, {Name: "bad", Expression: c.rule}})
			var ce *CompileError
			if !errors.As(err, &ce) || ce.Rule != "bad" || ce.Index != 1 || !strings.Contains(ce.Reason, c.want) {
				t.Fatalf("got %v, want rule bad (rules[1]) refused with %q", err, c.want)
			}
		})
	}
}

func TestDenialNamesRuleAndFactsItSaw(t *testing.T) {
	rules, err := Compile([]as.PolicyRule{
		{Name: "two-approvers", Expression: "size(approvers) >= 2"},
		{Name: "our-registry", Expression: "images.all(i, i.registry == 'registry.example.com')", Message: "images from registry.example.com only"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := base()
	f.Images = []Image{ParseImage("api", "registry.example.com.evil.io/team/api:v1")}
	d := Evaluate(context.Background(), "registries", rules, f)
	if d == nil {
		t.Fatal("allowed")
	}
	want := "PromotionPolicy registries rule our-registry to allow the promotion (images from registry.example.com only); it saw images=[api: registry.example.com.evil.io/team/api:v1]"
	if d.String() != want {
		t.Fatalf("got  %s\nwant %s", d, want)
	}
	if strings.Contains(d.String(), "approvers") {
		t.Fatal("shows a fact the rule did not read")
	}
}

func TestDenialIsBounded(t *testing.T) {
	rules, err := Compile([]as.PolicyRule{{Name: "r", Expression: "images.all(i, i.registry == 'x')"}})
	if err != nil {
		t.Fatal(err)
	}
	f := base()
	for i := range 128 {
		f.Images = append(f.Images, ParseImage(fmt.Sprintf("c%d", i), "registry.example.com/"+strings.Repeat("a", 200)+":v1"))
	}
	d := Evaluate(context.Background(), "p", rules, f)
	if d == nil || len(d.String()) > MaxMessage || !strings.HasSuffix(d.String(), "…") {
		t.Fatalf("denial of %d bytes: %v", len(d.String()), d)
	}
}

func TestFirstDenyingRuleOfSeveral(t *testing.T) {
	rules, err := Compile([]as.PolicyRule{{Name: "a", Expression: "true"}, {Name: "b", Expression: "size(approvers) > 5"}, {Name: "c", Expression: "false"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := Evaluate(context.Background(), "p", rules, base()); d == nil || d.Rule != "b" {
		t.Fatalf("got %v, want rule b", d)
	}
}

func TestRuleOutOfTimeDenies(t *testing.T) {
	rules, err := Compile([]as.PolicyRule{{Name: "slow", Expression: "images.all(a, images.all(b, a.registry == b.registry))"}})
	if err != nil {
		t.Fatal(err)
	}
	f := base()
	for i := range 128 {
		f.Images = append(f.Images, ParseImage(fmt.Sprintf("c%d", i), "registry.example.com/team/api:v1"))
	}
	if d := Evaluate(context.Background(), "p", rules, f); d != nil {
		t.Fatalf("denied in time: %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // what a rule running past its deadline sees
	d := Evaluate(ctx, "p", rules, f)
	if d == nil || !strings.Contains(d.Message, "not evaluated") {
		t.Fatalf("got %v, want a denial: not evaluated", d)
	}
}

func TestBinds(t *testing.T) {
	prodNS := map[string]string{"tier": "prod"}
	for _, c := range []struct {
		name          string
		spec          as.PromotionPolicySpec
		ns, env       map[string]string
		binds, errors bool
	}{
		{name: "namespace selected", spec: as.PromotionPolicySpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: prodNS}}, ns: prodNS, binds: true},
		// The tenant strips every label of its Environment: a policy bound by
		// its namespace still binds it.
		{name: "Environment labels removed", spec: as.PromotionPolicySpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: prodNS}}, ns: prodNS, env: nil, binds: true},
		{name: "Environment labels forged", spec: as.PromotionPolicySpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: prodNS}}, ns: prodNS,
			env: map[string]string{"tier": "dev", "policy-exempt": "true"}, binds: true},
		{name: "other namespace", spec: as.PromotionPolicySpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: prodNS}}, ns: map[string]string{"tier": "dev"}},
		{name: "every namespace", spec: as.PromotionPolicySpec{}, ns: nil, binds: true},
		// Selecting by absence: removing a label cannot escape it.
		{name: "absence selector, label removed", spec: as.PromotionPolicySpec{EnvironmentSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}}}}}, env: nil, binds: true},
		// Documented: an Environment selector is the tenant's to leave.
		{name: "environment selector, label removed", spec: as.PromotionPolicySpec{EnvironmentSelector: &metav1.LabelSelector{MatchLabels: prodNS}}, env: nil},
		{name: "bad selector", spec: as.PromotionPolicySpec{NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: "Near"}}}}, errors: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Binds(&as.PromotionPolicy{Spec: c.spec}, c.ns, c.env)
			if (err != nil) != c.errors || got != c.binds {
				t.Fatalf("binds %t (%v), want %t (error %t)", got, err, c.binds, c.errors)
			}
		})
	}
}

// A Snapshot of more images than the estimate's bound cannot make an
// admitted rule run unbounded: its actual cost (or its time) stops it, and
// it denies.
func TestRuleOverItsCostAtRunTimeDenies(t *testing.T) {
	rules, err := Compile([]as.PolicyRule{{Name: "pairs", Expression: "images.all(a, images.all(b, a.registry == b.registry))"}})
	if err != nil {
		t.Fatal(err)
	}
	f := base()
	for i := range 1500 {
		f.Images = append(f.Images, ParseImage(fmt.Sprintf("c%d", i), "registry.example.com/team/api:v1"))
	}
	start := time.Now()
	d := Evaluate(context.Background(), "p", rules, f)
	if d == nil || !strings.Contains(d.Message, "not evaluated") {
		t.Fatalf("got %v, want a denial: not evaluated", d)
	}
	// Bounded, with room for a loaded machine (the interrupt is noticed
	// between iterations).
	if took := time.Since(start); took > 10*MaxEvalTime {
		t.Fatalf("took %s", took)
	}
}
