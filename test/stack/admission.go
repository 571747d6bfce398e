package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/manifests/install"
)

// AdmissionCheckReason marks the CRDs' CEL rules that repeat a reconciler's
// refusal at admission (repository URLs, paths, revisions, API URLs, sync
// options): they carry reason FieldValueForbidden, and no other rule does.
const AdmissionCheckReason = apiextensionsv1.FieldValueForbidden

// InstallCRDsWithoutAdmissionChecks installs the CRDs as InstallCRDs does,
// with the rules marked AdmissionCheckReason left out ("validation off"): a
// CR the rules would refuse reaches the reconcilers, as one written before
// the rules existed does, so their own checks (defence in depth) stay tested.
// Every other part of the schema (types, enums, lengths, immutability) stays.
func (k *Kube) InstallCRDsWithoutAdmissionChecks(ctx context.Context, paths ...string) error {
	crds, err := readCRDs(paths...)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		StripAdmissionChecks(crd)
	}
	return k.installCRDs(ctx, paths, crds)
}

// StripAdmissionChecks removes, in place, every CEL rule of crd marked
// AdmissionCheckReason and returns how many it removed.
func StripAdmissionChecks(crd *apiextensionsv1.CustomResourceDefinition) int {
	n := 0
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			n += stripRules(s.OpenAPIV3Schema)
		}
	}
	return n
}

func stripRules(s *apiextensionsv1.JSONSchemaProps) int {
	n := 0
	kept := s.XValidations[:0]
	for _, r := range s.XValidations {
		if r.Reason != nil && *r.Reason == AdmissionCheckReason {
			n++
			continue
		}
		kept = append(kept, r)
	}
	s.XValidations = kept
	if len(kept) == 0 {
		s.XValidations = nil
	}
	for k, p := range s.Properties {
		n += stripRules(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		if s.Items.Schema != nil {
			n += stripRules(s.Items.Schema)
		}
		for i := range s.Items.JSONSchemas {
			n += stripRules(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n += stripRules(s.AdditionalProperties.Schema)
	}
	return n
}

// ReadCRDs returns the CustomResourceDefinitions in the given files or
// directories, as InstallCRDs reads them.
func ReadCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return readCRDs(paths...)
}

// InstallPolicy creates the objects of manifests/install/<file> (an admission
// policy and its binding) as shipped, and the GitOps Service's ServiceAccount
// (argocd/gitops-service, with its namespace) the install makes: the
// policies' parameter, without which they deny. Objects that exist are kept.
// It returns how many objects the file holds.
func InstallPolicy(ctx context.Context, c client.Client, file string) (int, error) {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "gitops-service"}},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, err
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return 0, err
	}
	f, err := os.Open(filepath.Join(root, "manifests", "install", file))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	n := 0
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return n, nil
		} else if err != nil {
			return n, fmt.Errorf("%s: %w", file, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return n, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		n++
	}
}

// PolicyFiles are the files of manifests/install that hold an admission
// policy: every one must be live as shipped for approvals to count.
func PolicyFiles() ([]string, error) {
	policies, err := install.Policies()
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range policies {
		if !slices.Contains(files, p.File) {
			files = append(files, p.File)
		}
	}
	return files, nil
}

// InstallPolicies installs every shipped admission policy (InstallPolicy).
func InstallPolicies(ctx context.Context, c client.Client) error {
	files, err := PolicyFiles()
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := InstallPolicy(ctx, c, f); err != nil {
			return err
		}
	}
	return nil
}
