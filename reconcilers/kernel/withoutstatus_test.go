package kernel

import (
	"reflect"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// withoutStatus converts field by field, skipping the status: the result is
// the whole object's conversion without "status", for our kinds and for the
// kinds it converts whole (a Secret's top-level fields are not all structs).
func TestWithoutStatusIsTheWholeConversionWithoutStatus(t *testing.T) {
	meta := metav1.ObjectMeta{
		Name: "app", Namespace: "argocd", UID: "u1", ResourceVersion: "7", Generation: 3,
		Labels:            map[string]string{"a": "b"},
		Annotations:       map[string]string{"c": "d"},
		CreationTimestamp: metav1.Date(2026, 11, 26, 7, 0, 0, 0, metav1.Now().Location()),
		Finalizers:        []string{argov1alpha1.ResourcesFinalizerName},
	}
	app := &argov1alpha1.Application{
		TypeMeta:   metav1.TypeMeta{Kind: "Application", APIVersion: "argoproj.io/v1alpha1"},
		ObjectMeta: meta,
		Spec: argov1alpha1.ApplicationSpec{
			Project:     "p",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/r.git", Path: "apps/1", TargetRevision: "main"},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "t"},
			SyncPolicy:  &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{Prune: true}},
		},
		Status: argov1alpha1.ApplicationStatus{
			Sync:      argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "abc"},
			Health:    argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy},
			Resources: []argov1alpha1.ResourceStatus{{Kind: "Deployment", Name: "d", Namespace: "t"}},
		},
	}
	withOperation := app.DeepCopy()
	withOperation.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "abc"}}
	for _, tc := range []struct {
		name string
		obj  client.Object
	}{
		{"Application", app},
		{"Application with an operation", withOperation},
		{"Application, empty", &argov1alpha1.Application{}},
		{"AppProject", &argov1alpha1.AppProject{ObjectMeta: meta, Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"r"}},
			Status: argov1alpha1.AppProjectStatus{JWTTokensByRole: map[string]argov1alpha1.JWTTokens{"r": {}}}}},
		{"ApplicationSet", &argov1alpha1.ApplicationSet{ObjectMeta: meta, Spec: argov1alpha1.ApplicationSetSpec{GoTemplate: true},
			Status: argov1alpha1.ApplicationSetStatus{Conditions: []argov1alpha1.ApplicationSetCondition{{Type: "ErrorOccurred", Message: "m"}}}}},
		{"Secret (converted whole)", &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": []byte("v")}, Type: corev1.SecretTypeOpaque}},
		{"Namespace", &corev1.Namespace{ObjectMeta: meta, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := wholeWithoutStatus(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			got, err := withoutStatus(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			// TypeMeta is the caller's (from the scheme's GVK).
			delete(want, "kind")
			delete(want, "apiVersion")
			if _, ok := got["status"]; ok {
				t.Errorf("status converted: %v", got["status"])
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("withoutStatus\n got %#v\nwant %#v", got, want)
			}
		})
	}
}
