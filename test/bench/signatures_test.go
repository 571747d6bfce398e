package bench

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/signatures"
	"github.com/gitops-service/gitops-service/reconcilers/signatures/signaturestest"
)

var (
	sigComponents = flag.Int("signature-components", 20, "images per Snapshot in the signature benchmark")
	sigPromotions = flag.Int("signature-promotions", 30, "promotions (Snapshots of new images) measured in the signature benchmark")
)

const (
	slsaPredicate      = "https://slsa.dev/provenance/v1"
	targetSignatureP99 = 2 * time.Second
)

// BenchmarkSignatures measures what the signature gate costs one promotion:
// every image of a Snapshot (-signature-components, pushed to a registry on
// loopback and signed the cosign way, signature and SLSA provenance by a
// key) verified against an Environment that requires both, as gather does
// (4 at once). Cold: new digests (signatures fetched and verified); warm:
// the same promotion looked at again while it waits (the cache answers;
// images named by tag are resolved again, one HEAD each). The registry is
// in the process: the network to a real one adds its round trips.
func BenchmarkSignatures(b *testing.B) {
	host := signaturestest.Registry(b)
	key := signaturestest.NewKey(b)
	gate := &as.SignatureGate{Keys: []as.SignatureKey{{Name: "ci", PublicKey: key.PEM}}, Attestations: []string{slsaPredicate}}
	req, err := signatures.Compile(gate, map[string]string{"ci": key.PEM})
	if err != nil {
		b.Fatal(err)
	}
	v := &signatures.Verifier{}
	ctx := context.Background()
	// promotion verifies the Snapshot's images as the gate does.
	promotion := func(images []string) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for i, img := range images {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if r := v.Check(ctx, fmt.Sprint("c", i), img, req); !r.Verified {
					b.Errorf("%s not verified: %s", img, r.Message)
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	var cold, warmDigest, warmTag []time.Duration
	for p := 0; p < *sigPromotions; p++ {
		var byDigest, byTag []string
		for c := 0; c < *sigComponents; c++ {
			tag := fmt.Sprintf("%s/team/c%d:p%d", host, c, p)
			d := signaturestest.Push(b, tag)
			signaturestest.Sign(b, d, key, nil)
			signaturestest.Attest(b, d, key, slsaPredicate, nil)
			byDigest, byTag = append(byDigest, d.String()), append(byTag, tag)
		}
		cold = append(cold, promotion(byDigest))
		warmDigest = append(warmDigest, promotion(byDigest))
		warmTag = append(warmTag, promotion(byTag))
	}
	for _, s := range [][]time.Duration{cold, warmDigest, warmTag} {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond / 10) }
	fmt.Printf("bench: signature gate, %d images signed and attested per promotion, %d promotions: cold p50 %s p99 %s; waiting, by digest p99 %s, by tag p99 %s (goal p99 <= %s: %s)\n",
		*sigComponents, *sigPromotions, r(pct(cold, 50)), r(pct(cold, 99)), r(pct(warmDigest, 99)), r(pct(warmTag, 99)),
		targetSignatureP99, mark(pct(cold, 99) <= targetSignatureP99))
	b.ReportMetric(float64(pct(cold, 99).Microseconds())/1000, "verify-p99-ms")
	b.ReportMetric(float64(pct(warmDigest, 99).Microseconds())/1000, "cached-p99-ms")
	b.ReportMetric(float64(pct(warmTag, 99).Microseconds())/1000, "cached-tag-p99-ms")
}
