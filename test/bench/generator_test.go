package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	generator "github.com/gitops-service/gitops-service/applicationset-generator"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	bindings   = flag.Int("bindings", 1000, "SnapshotEnvironmentBindings in the sidecar's cache for the generator benchmark")
	components = flag.Int("components", 20, "components of the measured binding")
	requests   = flag.Int("requests", 2000, "generator requests measured")
	changes    = flag.Int("changes", 20, "binding changes measured end to end")
)

const (
	targetGeneratorP99 = 10 * time.Millisecond
	targetChange       = time.Second
	benchRepo          = "https://git.example.com/bench/gitops.git"
)

// BenchmarkGenerator measures the ApplicationSet plugin generator with many
// bindings cached, and how fast a binding change reaches Argo CD.
func BenchmarkGenerator(b *testing.B) {
	requireStack(b)
	for i := 0; i < b.N; i++ {
		runGenerator(b)
	}
}

// appStudioTenant creates, in ns, an Application "app", nComp Components with
// a GitOps repository, one Environment per binding and Snapshots snap-<tag>.
type appStudioTenant struct {
	c     client.Client
	ns    string
	nComp int
}

func (t appStudioTenant) create(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		if err := t.c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func (t appStudioTenant) setup(ctx context.Context, envs int) error {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: t.ns, Name: name} }
	if err := t.create(ctx, &as.Application{ObjectMeta: meta("app"), Spec: as.ApplicationSpec{DisplayName: "app"}}); err != nil {
		return err
	}
	for i := 0; i < t.nComp; i++ {
		name := fmt.Sprintf("comp-%02d", i)
		comp := &as.Component{ObjectMeta: meta(name), Spec: as.ComponentSpec{ComponentName: name, Application: "app", ContainerImage: "quay.io/bench/" + name + ":0"}}
		if err := t.create(ctx, comp); err != nil {
			return err
		}
		comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: benchRepo, Branch: "main", Context: "components/" + name + "/overlays/dev"}
		if err := t.c.Status().Update(ctx, comp); err != nil {
			return err
		}
	}
	for i := 0; i < envs; i++ {
		env := &as.Environment{ObjectMeta: meta(fmt.Sprintf("env-%02d", i)), Spec: as.EnvironmentSpec{DisplayName: "env",
			DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated,
			Configuration:      as.EnvironmentConfiguration{Env: []as.EnvVarPair{{Name: "REGION", Value: "eu"}}}}}
		if err := t.create(ctx, env); err != nil {
			return err
		}
	}
	return t.snapshot(ctx, "0")
}

func (t appStudioTenant) snapshot(ctx context.Context, tag string) error {
	s := &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: t.ns, Name: "snap-" + tag}, Spec: as.SnapshotSpec{Application: "app"}}
	for i := 0; i < t.nComp; i++ {
		name := fmt.Sprintf("comp-%02d", i)
		s.Spec.Components = append(s.Spec.Components, as.SnapshotComponent{Name: name, ContainerImage: "quay.io/bench/" + name + ":" + tag})
	}
	return t.create(ctx, s)
}

func (t appStudioTenant) binding(env string) *as.SnapshotEnvironmentBinding {
	return &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: t.ns, Name: "app-" + env},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "app", Environment: env, Snapshot: "snap-0"}}
}

func runGenerator(b *testing.B) {
	ctx := context.Background()
	load := loadAvg()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "bench-generator", ControllerManager: true}) // GC: bindings delete their ApplicationSets in the foreground
	if err != nil {
		b.Fatal(err)
	}
	defer kube.Stop()
	root, _ := stack.RepoRoot()
	argoMod, err := stack.ArgoCDModuleDir()
	if err != nil {
		b.Fatal(err)
	}
	if err := kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd")); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(kube.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: sidecar.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	// Background: 100 namespaces of 10 bindings (2 components each); measured:
	// one binding of *components components in its own namespace.
	perNS := 10
	nsCount := (*bindings - 1 + perNS - 1) / perNS
	fmt.Printf("bench: generator, %d bindings in %d namespaces + one of %d components\n", *bindings, nsCount+1, *components)
	for _, ns := range []string{argoNS, "measured"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
	created := 0
	for i := 0; i < nsCount; i++ {
		t := appStudioTenant{c: c, ns: fmt.Sprintf("tenant-%03d", i), nComp: 2}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.ns}}); err != nil {
			b.Fatal(err)
		}
		if err := t.setup(ctx, perNS); err != nil {
			b.Fatal(err)
		}
		for e := 0; e < perNS && created < *bindings-1; e++ {
			if err := t.create(ctx, t.binding(fmt.Sprintf("env-%02d", e))); err != nil {
				b.Fatal(err)
			}
			created++
		}
	}
	measured := appStudioTenant{c: c, ns: "measured", nComp: *components}
	if err := measured.setup(ctx, 1); err != nil {
		b.Fatal(err)
	}
	seb := measured.binding("env-00")
	if err := measured.create(ctx, seb); err != nil {
		b.Fatal(err)
	}

	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer side.Close()
	var argo *stack.ArgoCD
	fail := func(format string, args ...any) {
		side.WriteLogs(os.Stderr)
		if argo != nil {
			argo.WriteLogs(os.Stderr)
		}
		b.Fatalf(format, args...)
	}
	// Every binding has its ApplicationSet: the cache holds all of them.
	appSetKey := func(s *as.SnapshotEnvironmentBinding) client.ObjectKey {
		return client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationSetName(string(s.UID))}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var sets argov1alpha1.ApplicationSetList
		if err := c.List(ctx, &sets, client.InNamespace(argoNS)); err != nil {
			b.Fatal(err)
		}
		if len(sets.Items) >= *bindings {
			break
		}
		if time.Now().After(deadline) {
			fail("only %d of %d ApplicationSets after 5m", len(sets.Items), *bindings)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Phase 1: generator latency, sequential requests as Argo CD sends them.
	req := generator.Request{ApplicationSetName: appSetKey(seb).Name}
	req.Input.Parameters = map[string]any{"namespace": seb.Namespace, "binding": seb.Name}
	body, _ := json.Marshal(req)
	hc := &http.Client{Timeout: 5 * time.Second}
	call := func() (int, error) {
		r, _ := http.NewRequest(http.MethodPost, side.GeneratorURL+generator.Path, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+side.GeneratorToken)
		r.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(r)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var out generator.Response
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %s", resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return 0, err
		}
		return len(out.Output.Parameters), nil
	}
	for i := 0; i < 50; i++ { // warm up connections
		if _, err := call(); err != nil {
			fail("generator: %v", err)
		}
	}
	lat := make([]time.Duration, 0, *requests)
	for i := 0; i < *requests; i++ {
		t0 := time.Now()
		n, err := call()
		if err != nil {
			fail("generator: %v", err)
		}
		if n != *components {
			fail("generator returned %d parameter sets, want %d", n, *components)
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })

	// Phase 2: a binding change (new Snapshot) until its ApplicationSet carries
	// the new generator input, which makes Argo CD regenerate at once; all
	// bindings still cached.
	change := func(tag string) time.Time {
		if err := measured.snapshot(ctx, tag); err != nil {
			fail("%v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(seb), seb); err != nil {
			fail("%v", err)
		}
		// A merge patch: the sidecar writes the binding's status meanwhile.
		patch := client.MergeFrom(seb.DeepCopy())
		seb.Spec.Snapshot = "snap-" + tag
		t0 := time.Now()
		if err := c.Patch(ctx, seb, patch); err != nil {
			fail("%v", err)
		}
		return t0
	}
	var toSet, toFirst, toApps []time.Duration
	for i := 1; i <= *changes; i++ {
		var before argov1alpha1.ApplicationSet
		if err := c.Get(ctx, appSetKey(seb), &before); err != nil {
			fail("%v", err)
		}
		t0 := change(fmt.Sprint(i))
		for {
			var now argov1alpha1.ApplicationSet
			if err := c.Get(ctx, appSetKey(seb), &now); err != nil {
				fail("%v", err)
			}
			if now.ResourceVersion != before.ResourceVersion {
				toSet = append(toSet, time.Since(t0))
				break
			}
			if time.Since(t0) > time.Minute {
				fail("the ApplicationSet did not change within a minute")
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	// Phase 3: with Argo CD's controllers running, until every Application of
	// the binding has the new images. The other bindings are deleted first: on
	// 2 cores, Argo CD deploying their 2,000 Applications would be what is
	// measured instead.
	fmt.Println("bench: deleting the other bindings, starting Argo CD to measure binding change -> Applications updated")
	for i := 0; i < nsCount; i++ {
		if err := c.DeleteAllOf(ctx, &as.SnapshotEnvironmentBinding{}, client.InNamespace(fmt.Sprintf("tenant-%03d", i))); err != nil {
			fail("%v", err)
		}
	}
	for {
		var sets argov1alpha1.ApplicationSetList
		if err := c.List(ctx, &sets, client.InNamespace(argoNS)); err != nil {
			b.Fatal(err)
		}
		if len(sets.Items) == 1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	argo, err = stack.StartArgoCD(ctx, kube, stack.ArgoOptions{})
	if err != nil {
		fail("starting Argo CD: %v", err)
	}
	defer argo.Stop()
	if err := argo.RegisterGenerator(ctx, argocd.GeneratorConfigMap, side.GeneratorURL, side.GeneratorToken); err != nil {
		fail("%v", err)
	}
	owned := client.MatchingLabels{ownership.LabelOwnerUID: string(seb.UID)}
	appsWith := func(tag string) (int, error) {
		var apps argov1alpha1.ApplicationList
		if err := c.List(ctx, &apps, client.InNamespace(argoNS), owned); err != nil {
			return 0, err
		}
		n := 0
		for _, a := range apps.Items {
			if k := a.Spec.Source.Kustomize; k != nil && len(k.Images) == 1 && strings.HasSuffix(string(k.Images[0]), ":"+tag) {
				n++
			}
		}
		return n, nil
	}
	// waitApps returns when all Applications have the tag, and when the first had it.
	var firstAt time.Time
	waitApps := func(tag string, limit time.Duration) error {
		start := time.Now()
		firstAt = time.Time{}
		for {
			n, err := appsWith(tag)
			if err != nil {
				return err
			}
			if n > 0 && firstAt.IsZero() {
				firstAt = time.Now()
			}
			if n == *components {
				return nil
			}
			if time.Since(start) > limit {
				return fmt.Errorf("%d of %d Applications have tag %s after %s", n, *components, tag, limit)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := waitApps(fmt.Sprint(*changes), 3*time.Minute); err != nil {
		fail("initial Applications: %v", err)
	}
	for i := *changes + 1; i <= 2**changes; i++ {
		tag := fmt.Sprint(i)
		t0 := change(tag)
		if err := waitApps(tag, time.Minute); err != nil {
			fail("%v", err)
		}
		toApps = append(toApps, time.Since(t0))
		toFirst = append(toFirst, firstAt.Sub(t0))
	}
	sort.Slice(toSet, func(i, j int) bool { return toSet[i] < toSet[j] })
	sort.Slice(toApps, func(i, j int) bool { return toApps[i] < toApps[j] })
	sort.Slice(toFirst, func(i, j int) bool { return toFirst[i] < toFirst[j] })

	ms := func(d time.Duration) string { return d.Round(time.Millisecond / 10).String() }
	rows := [][3]string{
		{fmt.Sprintf("generator latency p50 (%d components, %d requests)", *components, *requests), ms(pct(lat, 50)), ""},
		{"generator latency p99", ms(pct(lat, 99)), "<= 10ms: " + mark(pct(lat, 99) <= targetGeneratorP99)},
		{"generator latency max", ms(lat[len(lat)-1]), ""},
		{fmt.Sprintf("binding change -> ApplicationSet input bumped, p50 (%d changes, all bindings cached)", *changes), ms(pct(toSet, 50)), ""},
		{"binding change -> ApplicationSet input bumped, max", ms(toSet[len(toSet)-1]), ""},
		{"binding change -> first Application updated by Argo CD, p50", ms(pct(toFirst, 50)), ""},
		{"binding change -> first Application updated by Argo CD, max", ms(toFirst[len(toFirst)-1]), "<= 1s: " + mark(toFirst[len(toFirst)-1] <= targetChange)},
		{fmt.Sprintf("binding change -> all %d Applications updated by Argo CD, p50", *components), ms(pct(toApps, 50)), ""},
		{fmt.Sprintf("binding change -> all %d Applications updated by Argo CD, max", *components), ms(toApps[len(toApps)-1]), "(Argo CD updates them one by one)"},
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "### Generator: %d SnapshotEnvironmentBindings cached, measured binding of %d components\n\n", *bindings, *components)
	fmt.Fprintf(&sb, "%s Argo CD %s controllers in phase 3.\n\n", machineLine(load), stack.ArgoCDVersion)
	sb.WriteString("| measure | value | target |\n|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(&sb, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
	fmt.Println()
	fmt.Print(sb.String())
	b.ReportMetric(float64(pct(lat, 99).Microseconds())/1000, "generator-p99-ms")
	b.ReportMetric(float64(toApps[len(toApps)-1].Microseconds())/1000, "change-max-ms")
	if os.Getenv("BENCH_WRITE_RESULTS") == "1" {
		if err := os.WriteFile(resultsPath("generator"), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Println("bench: wrote test/bench/" + resultsPath("generator"))
	}
}
