package sidecar

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// An API server before 1.30 (no admissionregistration.k8s.io/v1
// ValidatingAdmissionPolicy) is named as lacking exactly those resources.
func TestMissingAPIs(t *testing.T) {
	for name, c := range map[string]struct {
		resources []*metav1.APIResourceList
		want      []string
	}{
		"1.30": {[]*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "validatingwebhookconfigurations"}, {Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}}}}, nil},
		"1.29": {[]*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "validatingwebhookconfigurations"}}}}, []string{
			"admissionregistration.k8s.io/v1 validatingadmissionpolicies", "admissionregistration.k8s.io/v1 validatingadmissionpolicybindings"}},
	} {
		t.Run(name, func(t *testing.T) {
			dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: c.resources}}
			if got := MissingAPIs(dc); !reflect.DeepEqual(got, c.want) {
				t.Errorf("MissingAPIs = %v, want %v", got, c.want)
			}
		})
	}
}
