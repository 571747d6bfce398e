package argocdsettings

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fields(manager string, op metav1.ManagedFieldsOperationType, keys ...string) metav1.ManagedFieldsEntry {
	raw := `{"f:data":{`
	for i, k := range keys {
		if i > 0 {
			raw += ","
		}
		raw += `"f:` + k + `":{}`
	}
	raw += `}}`
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
}

func TestPlanAppliesAbsentEqualAndOursButLeavesTheirs(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
			fields("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "equal", "tuned", "other"),
			fields(FieldManager, metav1.ManagedFieldsOperationApply, "ours-changed", "retired"),
		}},
		Data: map[string]string{"equal": "v", "tuned": "50", "other": "x", "ours-changed": "old", "retired": "r"},
	}
	p := PlanFor(cm, map[string]string{"equal": "v", "tuned": "30", "absent": "a", "ours-changed": "new"})
	want := map[string]string{"equal": "v", "absent": "a", "ours-changed": "new"}
	if len(p.Apply) != len(want) {
		t.Fatalf("Apply = %v, want %v", p.Apply, want)
	}
	for k, v := range want {
		if p.Apply[k] != v {
			t.Errorf("Apply[%s] = %q, want %q", k, p.Apply[k], v)
		}
	}
	if strings.Join(p.Missing, ",") != "absent" || strings.Join(p.Different, ",") != "ours-changed,tuned" || strings.Join(p.Theirs, ",") != "tuned" {
		t.Errorf("Missing %v Different %v Theirs %v", p.Missing, p.Different, p.Theirs)
	}
	if p.UpToDate {
		t.Error("UpToDate with missing and different keys")
	}
}

func TestPlanUpToDateOnlyWhenWeOwnExactlyOurKeys(t *testing.T) {
	data := map[string]string{"a": "1", "b": "2"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{fields(FieldManager, metav1.ManagedFieldsOperationApply, "a", "b")}}, Data: data}
	if p := PlanFor(cm, data); !p.UpToDate {
		t.Errorf("not UpToDate: %+v", p)
	}
	// Equal values set by someone else: we still apply, to co-own them (so
	// an Argo CD upgrade that drops their owner does not drop the key).
	cm.ManagedFields = []metav1.ManagedFieldsEntry{fields("kubectl", metav1.ManagedFieldsOperationApply, "a", "b")}
	if p := PlanFor(cm, data); p.UpToDate || len(p.Apply) != 2 {
		t.Errorf("values set by another manager count as ours: %+v", p)
	}
	// A key of an earlier version of ours: applied without it, so it goes.
	cm.ManagedFields = []metav1.ManagedFieldsEntry{fields(FieldManager, metav1.ManagedFieldsOperationApply, "a", "b", "old")}
	if p := PlanFor(cm, data); p.UpToDate {
		t.Errorf("a retired key of ours is kept: %+v", p)
	}
	// Another manager's Update operation under our name does not count.
	if got := OwnedKeys([]metav1.ManagedFieldsEntry{fields(FieldManager, metav1.ManagedFieldsOperationUpdate, "a")}, FieldManager); len(got) != 0 {
		t.Errorf("OwnedKeys counts an update: %v", got)
	}
}

func TestDesiredHasEveryKeyOfTheIssue(t *testing.T) {
	got, err := Desired(DefaultNames())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]string{}
	for _, s := range got {
		byName[s.ConfigMap] = s.Data
	}
	cm := byName["argocd-cm"]
	if len(cm) != 7 {
		t.Errorf("argocd-cm keys: %d, want the extension config and 6 health checks", len(cm))
	}
	for k, v := range cm {
		if strings.HasPrefix(k, "resource.customizations.health.") && !strings.Contains(v, "hs.status") && !strings.Contains(v, "status =") {
			t.Errorf("%s does not look like a health script", k)
		}
	}
	if want := "services:\n- url: http://gitops-service-ui-proxy:8091\n  headers:\n  - name: Gitops-Service-Token\n    value: $gitops-service-ui-proxy:token\n"; cm[ExtensionConfigKey] != want {
		t.Errorf("extension config:\n%s\nwant\n%s", cm[ExtensionConfigKey], want)
	}
	if p := byName["argocd-cmd-params-cm"]; p[ProxyExtensionKey] != "true" || len(p) != 4 {
		t.Errorf("argocd-cmd-params-cm: %v", p)
	}
	if r := byName["argocd-rbac-cm"]; r[AdminPolicyKey] != AdminPolicy || len(r) != 1 {
		t.Errorf("argocd-rbac-cm: %v", r)
	}
}

func TestNamesThatWouldChangeTheYAMLAreRefused(t *testing.T) {
	for _, mod := range []func(*Names){
		func(n *Names) { n.UIProxyURL = "http://x:1\n  headers: []" },
		func(n *Names) { n.UIProxyURL = "http://x #c" },
		func(n *Names) { n.UIProxyURL = "ftp://x" },
		func(n *Names) { n.UIProxySecret = "a:b" },
		func(n *Names) { n.ArgoCM = "Argo" },
		func(n *Names) { n.RBACCM = n.ArgoCM },
	} {
		n := DefaultNames()
		mod(&n)
		if err := n.Validate(); err == nil {
			t.Errorf("%+v admitted", n)
		}
	}
	n := DefaultNames()
	n.UIProxyURL = "https://gitops-service-ui-proxy.argo-prod.svc.cluster.local:8091/base"
	if err := n.Validate(); err != nil {
		t.Error(err)
	}
}
