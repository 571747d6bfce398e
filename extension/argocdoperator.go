package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/manifests/operator"
)

// operatorSettingsCommand merges our fields into the Argo CD operator's
// ArgoCD resource, or takes them out (manifests/operator).
const operatorSettingsCommand = "argocd-operator-settings"

// annotationOperatorSettings records, on the ArgoCD resource, the fields and
// list entries this command added (the ArgoCD had none of them): the
// removal takes out exactly these, so an entry the admin had before stays.
const annotationOperatorSettings = "managed-gitops.redhat.com/argocd-operator-settings"

var argoCDGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1beta1", Kind: "ArgoCD"}

// operatorSettingsReport says what a merge or removal did, one path a line.
type operatorSettingsReport struct {
	Added, Removed []string
	// Kept are ours the ArgoCD has with another value (the admin's): left
	// as they are, on install and on removal.
	Kept []string
}

// ourArgoCDSpec is the spec of manifests/operator/argocd-gitops-service.yaml.
func ourArgoCDSpec() (map[string]any, error) {
	spec, err := specOf(operator.ArgoCDSettings)
	if err != nil {
		return nil, fmt.Errorf("manifests/operator/argocd-gitops-service.yaml: %w", err)
	}
	return spec, nil
}

func specOf(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	// utiljson: numbers as int64 like the API server's objects, so equal values compare equal.
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no spec")
	}
	return spec, nil
}

// mergeOperatorSettings merges ours (an ArgoCD spec) into the ArgoCD object
// obj: a map key or field it lacks is added, a list gets our entries it has
// no entry of the same identity for (entryID); what it has with another value
// is the admin's and stays (Kept). What was added is recorded in the
// annotation. Applying it twice changes nothing the second time.
func mergeOperatorSettings(obj, ours map[string]any) (operatorSettingsReport, error) {
	var r operatorSettingsReport
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	added := map[string]any{}
	mergeTree(spec, ours, added, "spec", &r)
	if len(r.Added) == 0 {
		return r, nil
	}
	recorded, err := recordedSettings(obj)
	if err != nil {
		return r, err
	}
	if recorded == nil {
		recorded = map[string]any{}
	}
	mergeTree(recorded, added, map[string]any{}, "", &operatorSettingsReport{})
	data, err := json.Marshal(recorded)
	if err != nil {
		return r, err
	}
	unstructured.SetNestedField(obj, string(data), "metadata", "annotations", annotationOperatorSettings)
	return r, nil
}

// removeOperatorSettings takes out of obj what mergeOperatorSettings recorded
// it added (without the annotation, an ArgoCD the former README's merge patch
// changed: ours), each only where it still has our value; a map or list
// left empty by that goes too.
func removeOperatorSettings(obj, ours map[string]any) (operatorSettingsReport, error) {
	var r operatorSettingsReport
	recorded, err := recordedSettings(obj)
	if err != nil {
		return r, err
	}
	if recorded == nil {
		recorded = ours
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		removeTree(spec, recorded, "spec", &r)
	}
	unstructured.RemoveNestedField(obj, "metadata", "annotations", annotationOperatorSettings)
	if a, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := a["annotations"].(map[string]any); ok && len(ann) == 0 {
			delete(a, "annotations")
		}
	}
	return r, nil
}

func recordedSettings(obj map[string]any) (map[string]any, error) {
	s, ok, _ := unstructured.NestedString(obj, "metadata", "annotations", annotationOperatorSettings)
	if !ok {
		return nil, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", annotationOperatorSettings, err)
	}
	return m, nil
}

// entryID is what makes two list entries the same entry: a volume, mount or
// env var by its name, a flag by its name (--flag=value is --flag), anything
// else by its whole value.
func entryID(v any) string {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "-") {
			name, _, _ := strings.Cut(x, "=")
			return name
		}
		return x
	case map[string]any:
		if n, ok := x["name"].(string); ok {
			return "name=" + n
		}
	}
	j, _ := json.Marshal(v)
	return string(j)
}

func mergeTree(dst, ours, added map[string]any, path string, r *operatorSettingsReport) {
	for _, k := range sortedKeys(ours) {
		want, p := ours[k], join(path, k)
		have, ok := dst[k]
		if !ok || have == nil {
			dst[k] = deepCopy(want)
			added[k] = deepCopy(want)
			r.Added = append(r.Added, p)
			continue
		}
		switch w := want.(type) {
		case map[string]any:
			if h, ok := have.(map[string]any); ok {
				sub := map[string]any{}
				mergeTree(h, w, sub, p, r)
				if len(sub) > 0 {
					added[k] = sub
				}
				continue
			}
		case []any:
			if h, ok := have.([]any); ok {
				var sub []any
				for _, e := range w {
					id := entryID(e)
					i := indexOf(h, id)
					switch {
					case i < 0:
						h = append(h, deepCopy(e))
						sub = append(sub, deepCopy(e))
						r.Added = append(r.Added, p+"["+id+"]")
					case !reflect.DeepEqual(h[i], e):
						r.Kept = append(r.Kept, p+"["+id+"]")
					}
				}
				dst[k] = h
				if len(sub) > 0 {
					added[k] = sub
				}
				continue
			}
		}
		if !reflect.DeepEqual(have, want) {
			r.Kept = append(r.Kept, p)
		}
	}
}

func removeTree(dst, recorded map[string]any, path string, r *operatorSettingsReport) {
	for _, k := range sortedKeys(recorded) {
		ours, p := recorded[k], join(path, k)
		have, ok := dst[k]
		if !ok {
			continue
		}
		switch o := ours.(type) {
		case map[string]any:
			if h, ok := have.(map[string]any); ok {
				// One left empty by us goes; one empty before stays.
				if len(h) > 0 {
					removeTree(h, o, p, r)
					if len(h) == 0 {
						delete(dst, k)
					}
				}
				continue
			}
		case []any:
			if h, ok := have.([]any); ok {
				if len(h) == 0 {
					continue
				}
				var left []any
				for _, e := range h {
					id := entryID(e)
					j := indexOf(o, id)
					switch {
					case j < 0:
						left = append(left, e)
					case reflect.DeepEqual(e, o[j]):
						r.Removed = append(r.Removed, p+"["+id+"]")
					default:
						left = append(left, e)
						r.Kept = append(r.Kept, p+"["+id+"]")
					}
				}
				if len(left) == 0 {
					delete(dst, k)
				} else {
					dst[k] = left
				}
				continue
			}
		}
		if reflect.DeepEqual(have, ours) {
			delete(dst, k)
			r.Removed = append(r.Removed, p)
		} else {
			r.Kept = append(r.Kept, p)
		}
	}
}

func indexOf(list []any, id string) int {
	for i, e := range list {
		if entryID(e) == id {
			return i
		}
	}
	return -1
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// argoCDOperatorSettings is `gitops-service argocd-operator-settings`: it
// merges our fields into the ArgoCD resource (or, with --remove, takes out
// what it added), by a read-modify-update that retries on a conflict, and
// reports each field.
func argoCDOperatorSettings(args []string) int {
	fs := flag.NewFlagSet(operatorSettingsCommand, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: gitops-service %s [flags]\n\nMerges the GitOps Service's fields (manifests/operator/argocd-gitops-service.yaml) into the Argo CD operator's ArgoCD resource: list entries by name (flags by flag name), map keys only where absent; a field or entry the resource has with another value stays as it is and is reported. --remove takes out exactly what it added, where it still has our value (docs/install-operator.md).\n\n", operatorSettingsCommand)
		fs.PrintDefaults()
	}
	namespace := fs.String("argocd-namespace", envOr("ARGOCD_NAMESPACE", envOr("POD_NAMESPACE", inClusterNamespace())), "Namespace of the ArgoCD resource (env ARGOCD_NAMESPACE; in a cluster the Job's namespace).")
	name := fs.String("argocd-name", "argocd", "Name of the ArgoCD resource.")
	remove := fs.Bool("remove", false, "Take out what an earlier run added instead.")
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "A kubeconfig file; default: in-cluster (the Job's ServiceAccount), else $KUBECONFIG.")
	timeout := fs.Duration("timeout", 2*time.Minute, "How long to try.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel, c, exit := connect(*namespace, *kubeconfig, *timeout)
	if exit != 0 {
		return exit
	}
	defer cancel()
	ours, err := ourArgoCDSpec()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var r operatorSettingsReport
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(argoCDGVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: *namespace, Name: *name}, obj); err != nil {
			return err
		}
		before := obj.DeepCopy()
		if *remove {
			r, err = removeOperatorSettings(obj.Object, ours)
		} else {
			r, err = mergeOperatorSettings(obj.Object, ours)
		}
		if err != nil || reflect.DeepEqual(before.Object, obj.Object) {
			return err
		}
		// Update carries the resourceVersion read: a change in between is a conflict, and a retry.
		return c.Update(ctx, obj, client.FieldOwner("gitops-service-operator-settings"))
	})
	if *remove && apierrors.IsNotFound(err) {
		fmt.Printf("%s/%s: no ArgoCD, nothing to remove\n", *namespace, *name)
		return 0
	}
	report := func(what string, paths []string) {
		for _, p := range paths {
			fmt.Printf("%s/%s: %s %s\n", *namespace, *name, what, p)
		}
	}
	report("added", r.Added)
	report("removed", r.Removed)
	report("kept (another value than ours: the resource's own)", r.Kept)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if len(r.Added)+len(r.Removed) == 0 {
		fmt.Printf("%s/%s: nothing to change\n", *namespace, *name)
	}
	return 0
}
