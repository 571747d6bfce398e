package promotionpreview

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestSummarize(t *testing.T) {
	obj := func(kind, name string, c Change, diff, dryRun string) ObjectResult {
		return ObjectResult{Kind: kind, Namespace: "ns", Name: name, Change: c, Diff: diff, DryRunErr: dryRun}
	}
	many := func(n int) []ObjectResult {
		var out []ObjectResult
		for i := 0; i < n; i++ {
			out = append(out, obj("ConfigMap", strings.Repeat("x", i+1), Added, "", "denied"))
		}
		return out
	}
	tests := []struct {
		name      string
		in        []ComponentResult
		want      []as.PreviewComponentSummary
		wantClean bool
	}{
		{name: "nothing changes", in: []ComponentResult{{Name: "a", ArgoApplication: "app-a", Objects: []ObjectResult{obj("ConfigMap", "c", Unchanged, "", "")}}},
			want: []as.PreviewComponentSummary{{Name: "a", ArgoApplication: "app-a", Unchanged: 1}}, wantClean: true},
		{name: "each change counted",
			in: []ComponentResult{{Name: "a", Objects: []ObjectResult{
				obj("apps/Deployment", "d", Changed, "-a\n+b\n", ""), obj("Service", "s", Added, "+x\n", ""), obj("ConfigMap", "old", Removed, "-y\n", ""),
			}}},
			want: []as.PreviewComponentSummary{{Name: "a", Added: 1, Changed: 1, Removed: 1, Kinds: []string{"ConfigMap", "Service", "apps/Deployment"}}}, wantClean: true},
		{name: "kinds once each, unchanged ones not",
			in: []ComponentResult{{Name: "a", Objects: []ObjectResult{
				obj("ConfigMap", "a", Added, "+x\n", ""), obj("ConfigMap", "b", Changed, "-a\n+b\n", ""), obj("Secret", "s", Unchanged, "", ""),
			}}},
			want: []as.PreviewComponentSummary{{Name: "a", Added: 1, Changed: 1, Unchanged: 1, Kinds: []string{"ConfigMap"}}}, wantClean: true},
		{name: "a dry-run error is not clean",
			in:   []ComponentResult{{Name: "a", Objects: []ObjectResult{obj("Service", "s", Added, "+x\n", "exceeded quota")}}},
			want: []as.PreviewComponentSummary{{Name: "a", Added: 1, Errors: 1, Kinds: []string{"Service"}, DryRunErrors: []as.PreviewObjectError{{Kind: "Service", Namespace: "ns", Name: "s", Message: "exceeded quota"}}}}},
		{name: "a render error is not clean",
			in:   []ComponentResult{{Name: "a", RenderError: "no such path"}, {Name: "b"}},
			want: []as.PreviewComponentSummary{{Name: "a", RenderError: "no such path"}, {Name: "b"}}},
		{name: "errors listed up to the cap, all counted",
			in: []ComponentResult{{Name: "a", Objects: many(MaxErrorsPerComponent + 5)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, _, clean := Summarize(tt.in, MaxStatusDiff)
			assert.Equal(t, tt.wantClean, clean)
			if tt.want != nil {
				assert.Equal(t, tt.want, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, MaxErrorsPerComponent+5, got[0].Errors)
			assert.Len(t, got[0].DryRunErrors, MaxErrorsPerComponent)
		})
	}
}

func TestSummarizeCapsTheDiffAtALineEnd(t *testing.T) {
	line := strings.Repeat("+", 99) + "\n"
	var objs []ObjectResult
	for i := 0; i < 50; i++ {
		objs = append(objs, ObjectResult{Kind: "ConfigMap", Name: string(rune('a'+i%26)) + strings.Repeat("x", i), Change: Added, Diff: line})
	}
	_, text, truncated, _ := Summarize([]ComponentResult{{Name: "a", Objects: objs}}, 1050)
	assert.True(t, truncated)
	assert.Equal(t, strings.Repeat(line, 10), text, "ten whole lines of 100 bytes fit in 1050")
	_, text, truncated, _ = Summarize([]ComponentResult{{Name: "a", Objects: objs}}, 4999)
	assert.True(t, truncated)
	assert.Len(t, text, 4900)
	_, text, truncated, _ = Summarize([]ComponentResult{{Name: "a", Objects: objs}}, 5000)
	assert.False(t, truncated)
	assert.Len(t, text, 5000)
}

func TestFullDiffIsInAStableOrder(t *testing.T) {
	a := ObjectResult{Kind: "ConfigMap", Name: "a", Change: Added, Diff: "A"}
	b := ObjectResult{Kind: "ConfigMap", Name: "b", Change: Added, Diff: "B\n"}
	unchanged := ObjectResult{Kind: "ConfigMap", Name: "c", Change: Unchanged}
	assert.Equal(t, "A\nB\n", FullDiff([]ComponentResult{{Objects: []ObjectResult{b, unchanged, a}}}))
	assert.Equal(t, FullDiff([]ComponentResult{{Objects: []ObjectResult{a, b}}}), FullDiff([]ComponentResult{{Objects: []ObjectResult{b, a}}}))
}

func TestCutKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	got := cut(s, 5)
	assert.Equal(t, "éé...", got)
	assert.Equal(t, "short", cut("short", 5))
}

func TestUnifiedDiff(t *testing.T) {
	deploy := func(image string) []byte {
		return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns"},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"` + image + `"}]}}}}`)
	}
	t.Run("a change is the changed lines", func(t *testing.T) {
		d, err := UnifiedDiff("web", "apps/Deployment", "ns", "web", deploy("img:v1"), deploy("img:v2"))
		require.NoError(t, err)
		assert.Contains(t, d, "--- live/web/apps/Deployment ns/web\n+++ preview/web/apps/Deployment ns/web\n")
		assert.Contains(t, d, "\n-      - image: img:v1\n+      - image: img:v2\n")
	})
	t.Run("an added object comes from /dev/null", func(t *testing.T) {
		d, err := UnifiedDiff("web", "apps/Deployment", "ns", "web", nil, deploy("img:v2"))
		require.NoError(t, err)
		assert.Contains(t, d, "--- /dev/null\n+++ preview/web/apps/Deployment ns/web\n")
	})
	t.Run("a pruned object goes to /dev/null", func(t *testing.T) {
		d, err := UnifiedDiff("web", "apps/Deployment", "ns", "web", deploy("img:v1"), []byte("null"))
		require.NoError(t, err)
		assert.Contains(t, d, "--- live/web/apps/Deployment ns/web\n+++ /dev/null\n")
	})
	t.Run("a cluster-scoped object has no namespace", func(t *testing.T) {
		d, err := UnifiedDiff("web", "rbac.authorization.k8s.io/ClusterRole", "", "r", nil, []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"}}`))
		require.NoError(t, err)
		assert.Contains(t, d, "+++ preview/web/rbac.authorization.k8s.io/ClusterRole r\n")
	})
}

// Secrets' values never reach the diff, as Argo CD hides them: a changed
// value still shows as changed, an unchanged one as unchanged.
func TestUnifiedDiffRedactsSecrets(t *testing.T) {
	secret := func(data string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"},"data":{` + data + `}}`)
	}
	// base64 of "hunter2" and "letmein" and "same"
	live := secret(`"password":"aHVudGVyMg==","user":"c2FtZQ=="`)
	preview := secret(`"password":"bGV0bWVpbg==","user":"c2FtZQ==","token":"c2FtZQ=="`)
	d, err := UnifiedDiff("web", "Secret", "ns", "s", live, preview)
	require.NoError(t, err)
	for _, secretText := range []string{"aHVudGVyMg==", "bGV0bWVpbg==", "c2FtZQ==", "hunter2", "letmein"} {
		assert.NotContains(t, d, secretText)
	}
	changed := changed(d)
	assert.Len(t, changed, 3, "password changed, token added, user unchanged:\n%s", d)
	for _, l := range changed {
		assert.Regexp(t, `^[-+]  (password|token): \+{4,}$`, l)
	}

	// An added Secret alone is redacted too.
	d, err = UnifiedDiff("web", "Secret", "ns", "s", nil, preview)
	require.NoError(t, err)
	assert.NotContains(t, d, "bGV0bWVpbg==")
	assert.NotContains(t, d, "c2FtZQ==")
}

func changed(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
			out = append(out, l)
		}
	}
	return out
}

func TestRoom(t *testing.T) {
	tests := []struct {
		tenant, total, perTenant, max int
		want                          bool
	}{
		{0, 0, 2, 8, true},
		{1, 5, 2, 8, true},
		{2, 5, 2, 8, false},
		{0, 8, 2, 8, false},
		{0, 0, 0, 0, true},  // limits under 1 are 1
		{1, 1, 0, 0, false}, // ... and one runs
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, room(tt.tenant, tt.total, tt.perTenant, tt.max), "%+v", tt)
	}
}

func TestLimiter(t *testing.T) {
	l := &Limiter{PerTenant: 1, Total: 2}
	require.True(t, l.TryAcquire("a"))
	assert.False(t, l.TryAcquire("a"), "one per tenant")
	require.True(t, l.TryAcquire("b"))
	assert.False(t, l.TryAcquire("c"), "two in all")
	l.Release("a")
	assert.True(t, l.TryAcquire("c"))
	l.Release("a") // not held: changes nothing
	assert.False(t, l.TryAcquire("d"))
}

func TestDiffsAreBounded(t *testing.T) {
	d := &Diffs{}
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "t", Name: strings.Repeat("x", i+1)}
	}
	for i := 0; i < maxKeptDiffs+10; i++ {
		d.keep(key(i), 1, "diff")
	}
	assert.Len(t, d.m, maxKeptDiffs)
	d.keep(key(0), 2, "new")
	got, err := d.Get(key(0), 2)
	require.NoError(t, err)
	assert.Equal(t, "new", got)
	_, err = d.Get(key(0), 1)
	assert.Error(t, err, "another generation's diff is not served")
	d.keep(key(0), 3, strings.Repeat("x", maxKeptDiff+1))
	_, err = d.Get(key(0), 3)
	assert.Error(t, err, "a diff too large is not kept")
	d.forget(key(1))
	_, err = d.Get(key(1), 1)
	assert.Error(t, err)
}
