/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// crdDir is the directory controller-gen writes the CRDs to.
var crdDir = filepath.Join("..", "..", "..", "manifests", "crd")

func ptr[T any](v T) *T { return &v }

func condition(t, reason string) metav1.Condition {
	return metav1.Condition{
		Type:               t,
		Status:             metav1.ConditionTrue,
		Reason:             reason,
		Message:            "message",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "jane"}
}

// objects returns one fully populated object of each kind, and the JSON
// names (spelled as in the API documents) that its JSON must contain.
func objects() []struct {
	obj   runtime.Object
	names []string
} {
	return []struct {
		obj   runtime.Object
		names []string
	}{
		{&Environment{
			ObjectMeta: meta("staging"),
			Spec: EnvironmentSpec{
				DisplayName:        "Staging for Team A",
				DeploymentStrategy: DeploymentStrategyAppStudioAutomated,
				ParentEnvironment:  "dev",
				Tags:               []string{"staging"},
				Configuration: EnvironmentConfiguration{
					Env:    []EnvVarPair{{Name: "My_STG_ENV", Value: "100"}},
					Target: EnvironmentTarget{DeploymentTargetClaim: DeploymentTargetClaimConfig{ClaimName: "staging-dtc"}},
				},
				UnstableConfigurationFields: &UnstableEnvironmentConfiguration{
					ClusterType: ConfigurationClusterTypeKubernetes,
					KubernetesClusterCredentials: KubernetesClusterCredentials{
						TargetNamespace:            "my-namespace",
						APIURL:                     "https://api.example.com:6443",
						ClusterCredentialsSecret:   "secret-containing-cluster-credential",
						AllowInsecureSkipTLSVerify: true,
						Namespaces:                 []string{"a", "b"},
						ClusterResources:           true,
					},
				},
			},
			Status: EnvironmentStatus{Conditions: []metav1.Condition{
				condition(EnvironmentConditionErrorOccurred, EnvironmentReasonSecretNotFound)}},
		}, []string{`"displayName"`, `"deploymentStrategy":"AppStudioAutomated"`, `"parentEnvironment"`, `"tags"`,
			`"configuration"`, `"env"`, `"target"`, `"deploymentTargetClaim"`, `"claimName"`,
			`"unstableConfigurationFields"`, `"clusterType"`, `"kubernetesCredentials"`, `"targetNamespace"`, `"apiURL"`,
			`"clusterCredentialsSecret"`, `"allowInsecureSkipTLSVerify"`, `"namespaces"`, `"clusterResources"`,
			`"conditions"`}},

		{&Snapshot{
			ObjectMeta: meta("my-snapshot"),
			Spec: SnapshotSpec{
				Application:        "new-demo-app",
				DisplayName:        "My known good staging snapshot",
				DisplayDescription: "The best we've had so far!",
				Components: []SnapshotComponent{{
					Name:           "component-a",
					ContainerImage: "quay.io/jgwest-redhat/sample-workload:latest",
					Source:         &ComponentSource{GitSource: &GitSource{URL: "https://github.com/a/b", Revision: "main", Context: "./"}},
				}},
				Artifacts: &apiextensionsv1.JSON{Raw: []byte(`{"unstableFields":{"a":[1,2]}}`)},
			},
			Status: SnapshotStatus{Conditions: []metav1.Condition{condition("AppStudioTestSucceeded", "Passed")}},
		}, []string{`"application"`, `"displayName"`, `"displayDescription"`, `"components"`, `"name"`,
			`"containerImage"`, `"source":{"git":{"url"`, `"artifacts":{"unstableFields"`}},

		{&SnapshotEnvironmentBinding{
			ObjectMeta: meta("appa-staging-binding"),
			Spec: SnapshotEnvironmentBindingSpec{
				Application: "new-demo-app",
				Environment: "staging",
				Snapshot:    "my-snapshot",
				Components: []BindingComponent{{
					Name: "component-a",
					Configuration: BindingComponentConfiguration{
						Env:       []EnvVarPair{{Name: "My_STG_ENV", Value: "200"}},
						Replicas:  ptr(0),
						Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
					},
				}},
			},
			Status: SnapshotEnvironmentBindingStatus{
				GitOpsDeployments: []BindingStatusGitOpsDeployment{{
					ComponentName:                "component-a",
					GitOpsDeployment:             "appa-staging-binding-new-demo-app-staging-component-a",
					GitOpsDeploymentSyncStatus:   "Synced",
					GitOpsDeploymentHealthStatus: "Healthy",
					GitOpsDeploymentCommitID:     "abc123",
				}},
				Components: []BindingComponentStatus{{
					Name: "component-a",
					GitOpsRepository: BindingComponentGitOpsRepository{
						URL:                "https://github.com/redhat-appstudio/managed-gitops",
						Branch:             "main",
						Path:               "components/componentA/overlays/staging",
						GeneratedResources: []string{"abc.yaml"},
						CommitID:           "abc123",
					},
				}},
				GitOpsRepoConditions: []metav1.Condition{condition("GitOpsResourcesGenerated", "GenerateSuccess")},
				BindingConditions: []metav1.Condition{
					condition(BindingConditionErrorOccurred, BindingReasonWaitingForComponentStatus)},
				ComponentDeploymentConditions: []metav1.Condition{
					condition(ComponentDeploymentConditionAllComponentsDeployed, ComponentDeploymentConditionCommitsSynced)},
			},
		}, []string{`"application"`, `"environment"`, `"snapshot"`, `"components"`, `"configuration"`,
			`"replicas":0`, `"resources"`, `"gitopsDeployments"`, `"componentName"`, `"gitopsDeployment"`,
			`"syncStatus"`, `"health"`, `"commitID"`, `"gitopsRepository"`, `"url"`, `"branch"`, `"path"`,
			`"generatedResources"`, `"gitopsRepoConditions"`, `"bindingConditions"`, `"componentDeploymentConditions"`}},

		{&PromotionRun{
			ObjectMeta: meta("appa-manual-promotion"),
			Spec: PromotionRunSpec{
				Snapshot:        "my-snapshot",
				Application:     "appA",
				ManualPromotion: &ManualPromotionConfiguration{TargetEnvironment: "staging"},
			},
			Status: PromotionRunStatus{
				State:            PromotionRunStateCompleted,
				CompletionResult: PromotionRunCompleteResultSuccess,
				EnvironmentStatus: []PromotionRunEnvironmentStatus{{
					Step: 1, EnvironmentName: "staging", Status: PromotionRunEnvironmentStatusSuccess, DisplayStatus: "done",
				}},
				ActiveBindings:     []string{"appA-staging-generated-binding"},
				Conditions:         []metav1.Condition{condition(PromotionRunConditionErrorOccurred, PromotionRunReasonErrorOccurred)},
				PromotionStartTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
			},
		}, []string{`"snapshot"`, `"application"`, `"manualPromotion":{"targetEnvironment":"staging"}`,
			`"state":"Completed"`, `"completionResult":"Success"`, `"environmentStatus"`, `"step":1`,
			`"environmentName"`, `"status":"success"`, `"displayStatus"`, `"activeBindings"`, `"promotionStartTime"`}},

		{&DeploymentTarget{
			ObjectMeta: meta("prod-dt"),
			Spec: DeploymentTargetSpec{
				DeploymentTargetClassName: "isolation-level-namespace",
				KubernetesClusterCredentials: DeploymentTargetKubernetesClusterCredentials{
					DefaultNamespace:           "jgwest-jk9881c-env",
					APIURL:                     "https://api.example.com:6443",
					ClusterCredentialsSecret:   "dtc-1abc2-de3f4-gh5ij",
					AllowInsecureSkipTLSVerify: true,
				},
				ClaimRef: "dtc-52m96",
			},
			Status: DeploymentTargetStatus{Phase: DeploymentTargetPhaseBound},
		}, []string{`"deploymentTargetClassName"`, `"kubernetesCredentials"`, `"defaultNamespace"`, `"apiURL"`,
			`"clusterCredentialsSecret"`, `"allowInsecureSkipTLSVerify"`, `"claimRef"`, `"phase":"Bound"`}},

		{&DeploymentTargetClaim{
			ObjectMeta: meta("prod-dtc"),
			Spec:       DeploymentTargetClaimSpec{DeploymentTargetClassName: "isolation-level-namespace", TargetName: "prod-dt"},
			Status:     DeploymentTargetClaimStatus{Phase: DeploymentTargetClaimPhaseLost},
		}, []string{`"deploymentTargetClassName"`, `"targetName"`, `"phase":"Lost"`}},

		{&DeploymentTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: "isolation-level-namespace"},
			Spec: DeploymentTargetClassSpec{
				Provisioner:                  ProvisionerDevSandbox,
				Parameters:                   &apiextensionsv1.JSON{Raw: []byte(`{"numOfNodes":3}`)},
				ReclaimPolicy:                ReclaimPolicyRetain,
				AllowTargetResourceExpansion: true,
			},
		}, []string{`"provisioner":"appstudio.redhat.com/devsandbox"`, `"parameters":{"numOfNodes":3}`,
			`"reclaimPolicy":"Retain"`, `"allowTargetResourceExpansion":true`}},

		{&Application{
			ObjectMeta: meta("new-demo-app"),
			Spec:       ApplicationSpec{DisplayName: "New demo app", Description: "An app"},
		}, []string{`"displayName"`, `"description"`}},

		{&Component{
			ObjectMeta: meta("component-a"),
			Spec: ComponentSpec{
				ComponentName:  "component-a",
				Application:    "new-demo-app",
				ContainerImage: "quay.io/a/b:1",
				Replicas:       ptr(2),
				TargetPort:     8080,
				Env:            []corev1.EnvVar{{Name: "A", Value: "1"}},
				Source:         ComponentSource{GitSource: &GitSource{URL: "https://github.com/a/b", Revision: "main", Context: "./"}},
			},
			Status: ComponentStatus{GitOps: GitOpsStatus{
				RepositoryURL: "https://github.com/a/gitops", Branch: "main", Context: "./", CommitID: "abc123"}},
		}, []string{`"componentName"`, `"application"`, `"containerImage"`, `"replicas":2`, `"targetPort":8080`,
			`"env"`, `"source":{"git":{"url"`, `"revision"`, `"context"`, `"gitops":{"repositoryURL"`,
			`"branch"`, `"commitID"`}},
	}
}

func TestJSONRoundTripAndFieldNames(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range objects() {
		kind := reflect.TypeOf(tc.obj).Elem().Name()
		t.Run(kind, func(t *testing.T) {
			gvks, _, err := scheme.ObjectKinds(tc.obj)
			if err != nil || len(gvks) != 1 || gvks[0] != GroupVersion.WithKind(kind) {
				t.Fatalf("kind %s not registered as %v: %v %v", kind, GroupVersion.WithKind(kind), gvks, err)
			}
			if _, err := scheme.New(GroupVersion.WithKind(kind + "List")); err != nil {
				t.Fatalf("list kind not registered: %v", err)
			}

			data, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tc.names {
				if !strings.Contains(string(data), name) {
					t.Errorf("JSON of %s does not contain %s:\n%s", kind, name, data)
				}
			}

			back := reflect.New(reflect.TypeOf(tc.obj).Elem()).Interface().(runtime.Object)
			if err := json.Unmarshal(data, back); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(tc.obj, back) {
				t.Errorf("round trip changed the %s:\nbefore %#v\nafter  %#v", kind, tc.obj, back)
			}
			if copied := tc.obj.DeepCopyObject(); !equality.Semantic.DeepEqual(tc.obj, copied) {
				t.Errorf("DeepCopyObject changed the %s", kind)
			}
		})
	}
}

// A client that reads a Snapshot and writes it back (e.g. to add a label)
// must not change .spec.components, or the immutability rule rejects the
// update: unset optional parts of a component must stay absent.
func TestSnapshotComponentRoundTripAddsNothing(t *testing.T) {
	in := `{"spec":{"application":"app","components":[{"name":"c","containerImage":"quay.io/a:1"}]}}`
	var s Snapshot
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(s.Spec.Components)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"name":"c","containerImage":"quay.io/a:1"}]`; string(out) != want {
		t.Errorf("components re-encoded as %s, want %s", out, want)
	}
}

// A PromotionRun written from Go with only a manual promotion must not
// serialize an empty automatedPromotion (and vice versa), or the
// exactly-one-of rule rejects it.
func TestPromotionRunOneOfSerialization(t *testing.T) {
	data, err := json.Marshal(PromotionRunSpec{Snapshot: "s", Application: "a",
		ManualPromotion: &ManualPromotionConfiguration{TargetEnvironment: "e"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "automatedPromotion") {
		t.Errorf("unset automatedPromotion serialized: %s", data)
	}
}

func readCRD(t *testing.T, plural string) (*apiextensionsv1.CustomResourceDefinition, string) {
	t.Helper()
	path := filepath.Join(crdDir, "appstudio.redhat.com_"+plural+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the generated CRD (run controller-gen): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return crd, string(data)
}

func rules(s apiextensionsv1.JSONSchemaProps) map[string]string {
	m := map[string]string{}
	for _, r := range s.XValidations {
		m[r.Rule] = r.Message
	}
	return m
}

func TestSnapshotCRDImmutability(t *testing.T) {
	crd, raw := readCRD(t, "snapshots")
	if !strings.Contains(raw, "rule: self == oldSelf") || !strings.Contains(raw, "components are immutable") {
		t.Fatalf("the Snapshot CRD has no immutability rule:\n%s", raw)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if got := rules(spec.Properties["components"])["self == oldSelf"]; got != "components are immutable" {
		t.Errorf("spec.components rule message = %q", got)
	}
	if got := rules(spec.Properties["application"])["self == oldSelf"]; got != "application is immutable" {
		t.Errorf("spec.application rule message = %q", got)
	}
	if _, ok := rules(spec)["has(self.components) == has(oldSelf.components)"]; !ok {
		t.Errorf("spec has no rule against adding or removing components: %v", spec.XValidations)
	}
	name := spec.Properties["components"].Items.Schema.Properties["name"]
	if name.Pattern == "" || name.MaxLength == nil || *name.MaxLength != 63 {
		t.Errorf("component names are not validated as DNS-1123 labels: %+v", name)
	}
	if a := spec.Properties["artifacts"]; a.XPreserveUnknownFields == nil || !*a.XPreserveUnknownFields {
		t.Errorf("spec.artifacts does not preserve unknown fields")
	}
}

func TestCRDScopesAndRules(t *testing.T) {
	for plural, want := range map[string]struct {
		scope     apiextensionsv1.ResourceScope
		shortName string
	}{
		"environments":                {apiextensionsv1.NamespaceScoped, ""},
		"snapshots":                   {apiextensionsv1.NamespaceScoped, ""},
		"snapshotenvironmentbindings": {apiextensionsv1.NamespaceScoped, "seb"},
		"promotionruns":               {apiextensionsv1.NamespaceScoped, ""},
		"deploymenttargets":           {apiextensionsv1.NamespaceScoped, "dt"},
		"deploymenttargetclaims":      {apiextensionsv1.NamespaceScoped, "dtc"},
		"deploymenttargetclasses":     {apiextensionsv1.ClusterScoped, "dtcls"},
		"applications":                {apiextensionsv1.NamespaceScoped, ""},
		"components":                  {apiextensionsv1.NamespaceScoped, ""},
	} {
		crd, _ := readCRD(t, plural)
		if crd.Spec.Scope != want.scope {
			t.Errorf("%s: scope %s, want %s", plural, crd.Spec.Scope, want.scope)
		}
		if want.shortName != "" && !reflect.DeepEqual(crd.Spec.Names.ShortNames, []string{want.shortName}) {
			t.Errorf("%s: short names %v, want [%s]", plural, crd.Spec.Names.ShortNames, want.shortName)
		}
		if v := crd.Spec.Versions; len(v) != 1 || v[0].Subresources == nil || v[0].Subresources.Status == nil {
			t.Errorf("%s: no status subresource", plural)
		}
	}

	crd, _ := readCRD(t, "snapshotenvironmentbindings")
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, f := range []string{"application", "environment"} {
		if _, ok := rules(spec.Properties[f])["self == oldSelf"]; !ok {
			t.Errorf("SnapshotEnvironmentBinding spec.%s is not immutable", f)
		}
	}
	if _, ok := rules(spec.Properties["snapshot"])["self == oldSelf"]; ok {
		t.Errorf("SnapshotEnvironmentBinding spec.snapshot must stay mutable (promotion)")
	}

	crd, _ = readCRD(t, "promotionruns")
	spec = crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	r := rules(spec)
	if _, ok := r["self == oldSelf"]; !ok {
		t.Errorf("PromotionRun spec is not immutable: %v", spec.XValidations)
	}
	if _, ok := r["has(self.manualPromotion) != has(self.automatedPromotion)"]; !ok {
		t.Errorf("PromotionRun spec has no one-of rule: %v", spec.XValidations)
	}
}

// TestSnapshotContentDigest: the digest is of the components' names, images
// and sources, in any order; nothing else changes it.
func TestSnapshotContentDigest(t *testing.T) {
	snap := func(cs ...SnapshotComponent) *Snapshot {
		return &Snapshot{Spec: SnapshotSpec{Application: "app", DisplayName: "x", Components: cs}}
	}
	fe := SnapshotComponent{Name: "fe", ContainerImage: "quay.io/x/fe@sha256:1"}
	be := SnapshotComponent{Name: "be", ContainerImage: "quay.io/x/be:v1", Source: &ComponentSource{GitSource: &GitSource{URL: "https://g/x", Revision: "abc"}}}
	d := snap(fe, be).ContentDigest()
	if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Fatalf("digest %q", d)
	}
	if got := snap(be, fe).ContentDigest(); got != d {
		t.Errorf("order changed the digest")
	}
	s := snap(fe, be)
	s.Spec.DisplayName, s.Spec.DisplayDescription, s.Name, s.UID = "y", "z", "other", "u"
	if s.ContentDigest() != d {
		t.Errorf("display fields or metadata changed the digest")
	}
	other := be
	other.ContainerImage = "quay.io/x/be:v2"
	src := be
	src.Source = &ComponentSource{GitSource: &GitSource{URL: "https://g/x", Revision: "def"}}
	renamed := fe
	renamed.Name = "fe2"
	for name, o := range map[string]*Snapshot{"image": snap(fe, other), "source": snap(fe, src), "name": snap(renamed, be), "fewer": snap(fe), "none": snap()} {
		if o.ContentDigest() == d {
			t.Errorf("%s: another content has the same digest", name)
		}
	}
	// The canonical form is fixed: a change of the encoding is a change of the API.
	if got := snap(SnapshotComponent{Name: "a", ContainerImage: "i"}).ContentDigest(); got != "sha256:"+sha256Hex(`[{"name":"a","containerImage":"i","source":null}]`) {
		t.Errorf("canonical form changed: %s", got)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
