package stack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates or updates every CustomResourceDefinition found in the
// given files or directories (walked recursively; *.yaml, *.yml, *.json;
// multi-document YAML is fine; documents of other kinds are ignored), then
// waits until each is Established and NamesAccepted.
func (k *Kube) InstallCRDs(ctx context.Context, paths ...string) error {
	crds, err := readCRDs(paths...)
	if err != nil {
		return err
	}
	return k.installCRDs(ctx, paths, crds)
}

func (k *Kube) installCRDs(ctx context.Context, paths []string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if len(crds) == 0 {
		return fmt.Errorf("no CustomResourceDefinition found in %v", paths)
	}
	cs, err := apiextensionsclient.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		err := retryConflict(ctx, func() error {
			cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = api.Create(ctx, crd, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			upd := crd.DeepCopy()
			upd.ResourceVersion = cur.ResourceVersion
			_, err = api.Update(ctx, upd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		var last *apiextensionsv1.CustomResourceDefinition
		// Minutes, not seconds: a large CRD (Argo CD's ApplicationSet) took
		// over 30 s to be established at load 40 on the shared 2-core machine.
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = cur
			return crdCondition(cur, apiextensionsv1.Established) && crdCondition(cur, apiextensionsv1.NamesAccepted), nil
		})
		if err != nil {
			var conds []apiextensionsv1.CustomResourceDefinitionCondition
			if last != nil {
				conds = last.Status.Conditions
			}
			return fmt.Errorf("CRD %s not established: %w (conditions: %+v)", crd.Name, err, conds)
		}
	}
	return waitServed(ctx, k, crds)
}

// waitServed waits until discovery lists every served version of the CRDs:
// Established comes before the discovery document has them, and a client
// built meanwhile (a controller-runtime manager's REST mapper) fails with
// "no matches for kind" (seen in CI under load).
func waitServed(ctx context.Context, k *Kube, crds []*apiextensionsv1.CustomResourceDefinition) error {
	dc, err := discovery.NewDiscoveryClientForConfig(k.Config)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			var last error
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				list, err := dc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					last = err
					return false, nil
				}
				for _, r := range list.APIResources {
					if r.Name == crd.Spec.Names.Plural {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("CRD %s: %s not served by discovery: %w (last error: %v)", crd.Name, gv, err, last)
			}
		}
	}
	return nil
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func retryConflict(ctx context.Context, f func() error) error {
	for i := 0; ; i++ {
		err := f()
		if err == nil || i >= 5 || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					files = append(files, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := splitYAML(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, doc := range docs {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if tm.Kind != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(doc, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if tm.APIVersion != "apiextensions.k8s.io/v1" {
				return nil, fmt.Errorf("%s: CRD %s has apiVersion %s, want apiextensions.k8s.io/v1", f, crd.Name, tm.APIVersion)
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

// splitYAML splits a multi-document YAML (or a single JSON document) into
// non-empty documents.
func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] == '#' {
			continue
		}
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.Bytes()
}
