package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNewPromotion(t *testing.T) {
	by := &Requester{User: "alice"}
	m := NewPromotion("t1", "app", "snap-1", "staging", "", by)
	if m.GenerateName != "snap-1-to-staging-" || m.Spec.ManualPromotion == nil || m.Spec.ManualPromotion.TargetEnvironment != "staging" ||
		m.Spec.AutomatedPromotion != nil || m.Spec.RequestedBy != by || m.Labels[LabelApplication] != "app" || m.Labels[LabelEnvironment] != "staging" {
		t.Fatalf("manual promotion: %+v", m)
	}
	a := NewPromotion("t1", "app", "snap-1", "", "dev", nil)
	if a.GenerateName != "snap-1-promote-" || a.Spec.AutomatedPromotion == nil || a.Spec.AutomatedPromotion.InitialEnvironment != "dev" ||
		a.Spec.ManualPromotion != nil || a.Labels[LabelEnvironment] != "" {
		t.Fatalf("automated promotion: %+v", a)
	}
}

func TestNewRollbacks(t *testing.T) {
	r := NewRollback("t1", "app", "prod", "snap-1", nil)
	if r.GenerateName != "app-prod-rollback-" || !r.Spec.ManualPromotion.Rollback || r.Spec.Snapshot != "snap-1" {
		t.Fatalf("rollback: %+v", r)
	}
	run := &PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "r1"}, Spec: PromotionRunSpec{Snapshot: "s", Application: "app"}}
	ar := NewAutomaticRollback(run, "prod")
	if ar.Name != "r1-rollback" || ar.Namespace != "t1" || !ar.Spec.ManualPromotion.Rollback || ar.Spec.ManualPromotion.TargetEnvironment != "prod" || ar.Spec.RequestedBy != nil {
		t.Fatalf("automatic rollback: %+v", ar)
	}
	// the same run asks for the same rollback, also at the longest names
	run.Name = strings.Repeat("a", 253)
	a1, a2 := NewAutomaticRollback(run, "prod"), NewAutomaticRollback(run, "prod")
	if a1.Name != a2.Name || len(a1.Name) > 253 || len(validation.IsDNS1123Subdomain(a1.Name)) > 0 {
		t.Fatalf("long automatic rollback name %q", a1.Name)
	}
}

func TestLongNamesStayValid(t *testing.T) {
	long := strings.Repeat("x", 250)
	for _, r := range []*PromotionRun{NewPromotion("t", long, long, long, "", nil), NewRollback("t", long, long, long, nil)} {
		if len(r.GenerateName) > 201 || !strings.HasSuffix(r.GenerateName, "-") || len(validation.IsDNS1123Subdomain(r.GenerateName+"abcde")) > 0 {
			t.Fatalf("generateName %q", r.GenerateName)
		}
		if r.Labels != nil {
			t.Fatalf("labels of a 250-character application: %v", r.Labels)
		}
	}
}
