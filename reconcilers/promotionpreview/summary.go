package promotionpreview

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/argoproj/gitops-engine/pkg/diff"
	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Bounds of what a preview keeps in its status: etcd objects are at most
// 1.5 MiB and a status is read by every watcher of the kind.
const (
	// MaxStatusDiff is the most diff text the status holds.
	MaxStatusDiff = 32 * 1024
	// MaxErrorsPerComponent is the most dry-run errors listed per component.
	MaxErrorsPerComponent = 20
	// maxMessage cuts each dry-run error message.
	maxMessage = 1024
	// maxKinds bounds the kinds a component's summary lists.
	maxKinds = 64
)

// Change is what Argo CD's sync would do to one object.
type Change string

const (
	Added     Change = "added"
	Changed   Change = "changed"
	Removed   Change = "removed"
	Unchanged Change = "unchanged"
)

// ObjectResult is the comparison of one object: its change, its unified diff
// (empty when unchanged) and the dry-run's answer ("" when accepted or not
// dry-run: a pruned object is not applied).
type ObjectResult struct {
	Kind      string // group/Kind, or Kind for the core group
	Namespace string
	Name      string
	Change    Change
	Diff      string
	DryRunErr string
}

// ComponentResult is one component's comparison, or why it could not be made.
type ComponentResult struct {
	Name            string
	ArgoApplication string
	RenderError     string
	// RenderHash is render.Hash of the rendered manifests, "" when they
	// did not render.
	RenderHash string
	Objects    []ObjectResult
}

// Summarize turns the components' results into the status's per-component
// summary, its diff cut to maxDiff bytes (whole lines; truncated says it was
// cut) and whether everything was clean (rendered and accepted by the dry-run).
func Summarize(results []ComponentResult, maxDiff int) (summaries []as.PreviewComponentSummary, diffText string, truncated, clean bool) {
	clean = true
	full := FullDiff(results)
	for _, r := range results {
		s := as.PreviewComponentSummary{Name: r.Name, ArgoApplication: r.ArgoApplication, RenderHash: r.RenderHash, RenderError: cut(r.RenderError, maxMessage)}
		if r.RenderError != "" {
			clean = false
		}
		for _, o := range r.Objects {
			switch o.Change {
			case Added:
				s.Added++
			case Changed:
				s.Changed++
			case Removed:
				s.Removed++
			default:
				s.Unchanged++
			}
			if o.Change != Unchanged && !slices.Contains(s.Kinds, o.Kind) && len(s.Kinds) < maxKinds {
				s.Kinds = append(s.Kinds, o.Kind)
			}
			if o.DryRunErr != "" {
				s.Errors++
				clean = false
				if len(s.DryRunErrors) < MaxErrorsPerComponent {
					s.DryRunErrors = append(s.DryRunErrors, as.PreviewObjectError{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Message: cut(o.DryRunErr, maxMessage)})
				}
			}
		}
		slices.Sort(s.Kinds)
		summaries = append(summaries, s)
	}
	diffText, truncated = capLines(full, maxDiff)
	return summaries, diffText, truncated, clean
}

// EnvironmentResult is one Environment's result in a release preview: its
// components' results, or why it could not be previewed.
type EnvironmentResult struct {
	Name       string
	Error      string
	Components []ComponentResult
}

// SummarizeRelease turns a release preview's results into the status's
// per-Environment results, in their order, each Environment's diff cut to
// an equal share of maxDiff, and whether every one was clean.
func SummarizeRelease(results []EnvironmentResult, maxDiff int) (envs []as.PreviewEnvironmentResult, clean bool) {
	clean = len(results) > 0
	share := maxDiff / max(len(results), 1)
	for _, r := range results {
		e := as.PreviewEnvironmentResult{Name: r.Name, Error: cut(r.Error, maxMessage)}
		if r.Error == "" {
			e.Components, e.Diff, e.DiffTruncated, e.Clean = Summarize(r.Components, share)
		}
		clean = clean && e.Clean
		envs = append(envs, e)
	}
	return envs, clean
}

// FullReleaseDiff is the full diff of each Environment, under a header
// naming it.
func FullReleaseDiff(results []EnvironmentResult) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "### Environment %s\n", r.Name)
		if r.Error != "" {
			fmt.Fprintf(&b, "# not previewed: %s\n", r.Error)
			continue
		}
		b.WriteString(FullDiff(r.Components))
	}
	return b.String()
}

// FullDiff is the unified diff of every object that would change, per
// component and object in a stable order.
func FullDiff(results []ComponentResult) string {
	var b strings.Builder
	for _, r := range results {
		objs := append([]ObjectResult(nil), r.Objects...)
		sort.Slice(objs, func(i, j int) bool { return objectID(objs[i]) < objectID(objs[j]) })
		for _, o := range objs {
			if o.Diff == "" {
				continue
			}
			b.WriteString(o.Diff)
			if !strings.HasSuffix(o.Diff, "\n") {
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

func objectID(o ObjectResult) string { return o.Kind + "/" + o.Namespace + "/" + o.Name }

// capLines cuts s to at most max bytes at a line end.
func capLines(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	cutAt := strings.LastIndexByte(s[:max], '\n')
	if cutAt < 0 {
		return "", true
	}
	return s[:cutAt+1], true
}

// cut shortens s to at most max bytes without splitting a character.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// UnifiedDiff is the unified diff of one object between what runs (live, nil
// when added) and what Argo CD's sync would leave (predicted, nil when
// pruned), both as gitops-engine's diff returned them (JSON), with the data of
// Secrets replaced as Argo CD shows them (diff.HideSecretData: equal values
// stay equal, different ones differ, none is shown). The header names the
// component and the object.
func UnifiedDiff(component string, kind, namespace, name string, live, predicted []byte) (string, error) {
	l, err := parse(live)
	if err != nil {
		return "", err
	}
	p, err := parse(predicted)
	if err != nil {
		return "", err
	}
	if isSecret(l) || isSecret(p) {
		if p, l, err = diff.HideSecretData(p, l, nil); err != nil {
			return "", err
		}
	}
	a, err := toYAML(l)
	if err != nil {
		return "", err
	}
	b, err := toYAML(p)
	if err != nil {
		return "", err
	}
	id := fmt.Sprintf("%s/%s %s", component, kind, name)
	if namespace != "" {
		id = fmt.Sprintf("%s/%s %s/%s", component, kind, namespace, name)
	}
	from, to := "live/"+id, "preview/"+id
	if l == nil {
		from = "/dev/null"
	}
	if p == nil {
		to = "/dev/null"
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b), FromFile: from, ToFile: to, Context: 3,
	})
}

func parse(raw []byte) (*unstructured.Unstructured, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	obj := map[string]any{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

func isSecret(u *unstructured.Unstructured) bool {
	return u != nil && u.GetKind() == "Secret" && u.GroupVersionKind().Group == ""
}

func toYAML(u *unstructured.Unstructured) (string, error) {
	if u == nil {
		return "", nil
	}
	out, err := yaml.Marshal(u.Object)
	return string(out), err
}

// KindOf is group/Kind, or Kind for the core group.
func KindOf(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Group + "/" + gvk.Kind
}
