package bench

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"testing"
	"time"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/policyrules"
)

var policyPromotions = flag.Int("policy-promotions", 2000, "promotions whose PromotionPolicy rules are evaluated (BenchmarkPolicy)")

// targetPolicyP99 is what evaluating a platform's policies may add to one
// promotion's gate: a small part of a reconcile.
const targetPolicyP99 = 10 * time.Millisecond

// benchPolicy is a platform's policy as docs/policies.md writes one: our
// registry, pinned and signed images, a reviewed small change, two
// approvers, a stable source, no Friday deploys.
var benchPolicy = []as.PolicyRule{
	{Name: "our-registry", Expression: "images.all(i, i.registry == 'registry.example.com' && i.repository.startsWith('team/'))"},
	{Name: "pinned", Expression: "images.all(i, i.digest != '')"},
	{Name: "signed", Expression: "images.all(i, signatures.exists(s, s.digest == i.digest && s.verified && 'release-key' in s.signers))"},
	{Name: "small-change", Expression: "preview.found && preview.clean && preview.removed == 0 && !('rbac.authorization.k8s.io/ClusterRole' in preview.kinds)"},
	{Name: "two-approvers", Expression: "rollback || size(approvers) >= 2"},
	{Name: "stable-source", Expression: "source.environment == '' || source.changeFailureRate <= 0.2"},
	{Name: "no-friday", Expression: "now.getDayOfWeek('Europe/Berlin') != 5"},
}

// BenchmarkPolicy measures the PromotionPolicy rung per promotion: the
// facts of a Snapshot of -components images (parsed), and every rule of
// benchPolicy evaluated over them (all hold: every rule runs). Pure CPU:
// no stack.
func BenchmarkPolicy(b *testing.B) {
	for i := 0; i < b.N; i++ {
		runPolicy(b)
	}
}

func runPolicy(b *testing.B) {
	start := time.Now()
	rules, err := policyrules.Compile(benchPolicy)
	if err != nil {
		b.Fatal(err)
	}
	compile := time.Since(start)
	lat := make([]time.Duration, 0, *policyPromotions)
	for n := 0; n < *policyPromotions; n++ {
		t0 := time.Now()
		f := &policyrules.Facts{Application: "app", Snapshot: fmt.Sprintf("snap-%d", n), Now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
			Environment: policyrules.Environment{Name: "prod", Namespace: "team-a", Parent: "staging"},
			Preview:     policyrules.Preview{Found: true, Clean: true, Changed: *components, Kinds: []string{"ConfigMap", "apps/Deployment"}},
			Approvers:   []string{"alice", "bob"}, Source: policyrules.Source{Environment: "staging", Changes: 20, Failures: 1}}
		for c := 0; c < *components; c++ {
			digest := fmt.Sprintf("sha256:%064x", n*1000+c)
			ref := fmt.Sprintf("registry.example.com/team/comp-%02d@%s", c, digest)
			f.Images = append(f.Images, policyrules.ParseImage(fmt.Sprintf("comp-%02d", c), ref))
			f.Signatures = append(f.Signatures, as.ImageVerification{Component: fmt.Sprintf("comp-%02d", c), Image: ref, Digest: digest, Verified: true, Signers: []string{"release-key"}})
		}
		if d := policyrules.Evaluate(context.Background(), "bench", rules, f); d != nil {
			b.Fatalf("denied: %s", d)
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := pct(lat, 50), pct(lat, 99)
	fmt.Printf("bench: PromotionPolicy, %d rules over %d images, %d promotions: compile %s; per promotion p50 %s, p99 %s (<= %s: %s), max %s\n",
		len(benchPolicy), *components, len(lat), compile.Round(time.Microsecond), p50.Round(time.Microsecond), p99.Round(time.Microsecond),
		targetPolicyP99, mark(p99 <= targetPolicyP99), lat[len(lat)-1].Round(time.Microsecond))
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
}
