package kernel

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func TestContains(t *testing.T) {
	want := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"ours": "x"}},
		"spec":     map[string]any{"list": []any{map[string]any{"a": "1"}}, "n": int64(2), "flag": false},
	}
	for _, tc := range []struct {
		name string
		have map[string]any
		want bool
	}{
		{"same", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"ours": "x"}},
			"spec":     map[string]any{"list": []any{map[string]any{"a": "1"}}, "n": int64(2), "flag": false},
		}, true},
		{"others' fields too", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"ours": "x", "theirs": "y"}},
			"spec":     map[string]any{"list": []any{map[string]any{"a": "1", "b": "2"}}, "n": int64(2), "flag": false, "info": "z"},
			"status":   map[string]any{"health": "Healthy"},
		}, true},
		{"a value differs", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"ours": "changed"}},
			"spec":     map[string]any{"list": []any{map[string]any{"a": "1"}}, "n": int64(2), "flag": false},
		}, false},
		{"a field is missing", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"ours": "x"}},
			"spec":     map[string]any{"list": []any{map[string]any{"a": "1"}}, "n": int64(2)},
		}, false},
		{"a list is longer", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"ours": "x"}},
			"spec":     map[string]any{"list": []any{map[string]any{"a": "1"}, "extra"}, "n": int64(2), "flag": false},
		}, false},
		{"a map where a value was", map[string]any{
			"metadata": map[string]any{"labels": "x"},
			"spec":     map[string]any{"list": []any{map[string]any{"a": "1"}}, "n": int64(2), "flag": false},
		}, false},
	} {
		if got := contains(tc.have, want); got != tc.want {
			t.Errorf("%s: contains = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSecretUpToDate: a Secret of ours is written again only when a field we
// set differs; what others add to it does not count.
func TestSecretUpToDate(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	desired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "repo-x", Labels: map[string]string{"owner": "uid-1", "argocd.argoproj.io/secret-type": "repository"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"url": []byte("https://git.example.com/a.git"), "password": []byte("p")},
	}
	upToDate := func(current *corev1.Secret) bool {
		have, err := applyConfig(scheme, current)
		if err != nil {
			t.Fatal(err)
		}
		want, err := applyConfig(scheme, desired)
		if err != nil {
			t.Fatal(err)
		}
		return contains(have.Object, want.Object)
	}
	same := desired.DeepCopy()
	same.Labels["someone-else"] = "keeps this"
	same.Data["theirs"] = []byte("kept")
	same.ResourceVersion, same.UID = "42", "server-set"
	if !upToDate(same) {
		t.Error("a Secret with only others' additions was taken as changed")
	}
	for name, mutate := range map[string]func(*corev1.Secret){
		"password changed": func(s *corev1.Secret) { s.Data["password"] = []byte("old") },
		"missing key":      func(s *corev1.Secret) { delete(s.Data, "url") },
		"owner changed":    func(s *corev1.Secret) { s.Labels["owner"] = "x" },
		"type":             func(s *corev1.Secret) { s.Type = corev1.SecretTypeBasicAuth },
	} {
		cur := desired.DeepCopy()
		mutate(cur)
		if upToDate(cur) {
			t.Errorf("%s: taken as up to date", name)
		}
	}
}
