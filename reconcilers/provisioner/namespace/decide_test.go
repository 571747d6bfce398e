package namespace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

func TestTenantNamespaceSelector(t *testing.T) {
	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jane", Labels: map[string]string{"tier": "gold", "team": "a"}}}
	for name, tc := range map[string]struct {
		selector *metav1.LabelSelector
		reason   string // of the refusal; "" admits
	}{
		"no selector admits every tenant": {},
		"a matching label":                {selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}},
		"a matching expression": {selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}},
		"another label value": {selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}},
			reason: as.DeploymentTargetReasonClassNotPermitted},
		"a label the tenant lacks": {selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "approved", Operator: metav1.LabelSelectorOpExists}}}, reason: as.DeploymentTargetReasonClassNotPermitted},
		"an empty selector selects everything": {selector: &metav1.LabelSelector{}},
		"an invalid selector is the class's fault": {selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: "Near"}}}, reason: as.DeploymentTargetReasonProvisioningFailed},
	} {
		sel, err := tenantSelector("cls", Parameters{TenantNamespaceSelector: tc.selector})
		if err == nil && sel != nil {
			err = selected(sel, "cls", tenant)
		}
		if tc.reason == "" {
			assert.NoError(t, err, name)
			continue
		}
		if r := kernel.AsRefusal(err); assert.NotNil(t, r, name) {
			assert.Equal(t, tc.reason, r.Reason, name)
			assert.Contains(t, r.Message, "DeploymentTargetClass cls", name)
		}
	}
	sel, err := tenantSelector("cls", Parameters{})
	assert.Nil(t, sel, "no selector, nothing to read")
	assert.NoError(t, err)
}

func TestMaxClaimsPerNamespace(t *testing.T) {
	claim := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "qa", UID: "uid-qa"}}
	ns := func(owner types.UID, deleting bool) corev1.Namespace {
		n := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ownership.LabelOwnerUID: string(owner)}}}
		if deleting {
			now := metav1.Now()
			n.DeletionTimestamp = &now
		}
		return n
	}
	for name, tc := range map[string]struct {
		limit       int
		provisioned []corev1.Namespace
		refused     bool
	}{
		"none yet":                         {limit: 1},
		"below the limit":                  {limit: 3, provisioned: []corev1.Namespace{ns("a", false), ns("b", false)}},
		"at the limit":                     {limit: 2, provisioned: []corev1.Namespace{ns("a", false), ns("b", false)}, refused: true},
		"the claim's own is not counted":   {limit: 2, provisioned: []corev1.Namespace{ns("a", false), ns("uid-qa", false)}},
		"one being deleted is not counted": {limit: 2, provisioned: []corev1.Namespace{ns("a", false), ns("b", true)}},
		"over the limit (lowered since)":   {limit: 1, provisioned: []corev1.Namespace{ns("a", false), ns("b", false)}, refused: true},
	} {
		err := belowLimit("cls", tc.limit, claim, tc.provisioned)
		if !tc.refused {
			assert.NoError(t, err, name)
			continue
		}
		if r := kernel.AsRefusal(err); assert.NotNil(t, r, name) {
			assert.Equal(t, as.DeploymentTargetReasonClaimLimitReached, r.Reason, name)
			assert.Contains(t, r.Message, "maxClaimsPerNamespace", name)
		}
	}
}
