package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// FieldManager is the field manager of everything we write with server-side apply.
const FieldManager = "gitops-service"

// AnnotationApplied holds a hash of what we last applied: an object carrying
// every field of desired may still carry one we stopped setting (which the
// apply removes), and the cache does not keep managedFields to tell.
const AnnotationApplied = "managed-gitops.redhat.com/applied"

// Owned writes objects we own (Argo CD's Applications, AppProjects,
// ApplicationSets, cluster and repository Secrets): only the fields we set,
// with server-side apply under FieldManager, so fields others own survive
// (an admin's label, Argo CD 3.x's additions our v2 structs do not know, an
// Application's status and operation).
type Owned struct {
	// Client reads the cache and writes.
	Client client.Client
	// APIReader reads past the cache (which may hold only our objects).
	APIReader client.Reader
	// Ours says whether an existing object is ours (labels and owner UID):
	// one that is not is never written.
	Ours func(client.Object) bool
	// Locked makes an apply to an existing object fail with a conflict when
	// the object changed since current was read (for an object several
	// writers change by read-modify-write, e.g. a list server-side apply
	// replaces as a whole).
	Locked bool
}

// Apply makes the object named as desired carry desired's fields. current
// is the object as cached and already checked to be ours, or nil (also a nil
// pointer) when the cache has none. Nothing is sent when current already carries every field of
// desired (an idle resync writes nothing). desired is then set to the object
// as stored. Errors: *NotOursError (never touched), ErrStaleCache (our own
// object, not yet cached), or a transient one.
func (o Owned) Apply(ctx context.Context, current, desired client.Object) error {
	if current != nil && reflect.ValueOf(current).IsNil() {
		current = nil
	}
	want, err := applyConfig(o.Client.Scheme(), desired)
	if err != nil {
		return err
	}
	raw, err := want.MarshalJSON()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	annotations := want.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationApplied] = hex.EncodeToString(sum[:12])
	want.SetAnnotations(annotations)
	if current == nil {
		// Create only, with no read first: an apply conditional on a version
		// no object has fails on anything already under the name (ours not
		// yet cached, or someone else's), and the condition does not apply to
		// a create. Only then is the object read, to tell which.
		want.SetResourceVersion(noVersion)
	} else {
		have, err := applyConfig(o.Client.Scheme(), current)
		if err != nil {
			return err
		}
		if contains(have.Object, want.Object) {
			return nil
		}
		// Fails if the object was replaced since we read it.
		want.SetUID(current.GetUID())
		if o.Locked {
			want.SetResourceVersion(current.GetResourceVersion())
		}
	}
	// Forced: these fields are ours, whoever edited them since.
	err = o.Client.Patch(ctx, want, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership)
	if current == nil && apierrors.IsConflict(err) {
		if err = o.existing(ctx, desired, want.GetKind()); err != nil {
			return err
		}
		// Not there (deleted since, or an API server that holds a create to
		// the condition): as without one, which only a guess of our name
		// could race.
		want.SetResourceVersion("")
		err = o.Client.Patch(ctx, want, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("applying %s %s: %w", want.GetKind(), desired.GetName(), err)
	}
	// desired becomes what the server stored (status included); by JSON, as
	// Argo CD's types have unexported fields the unstructured converter refuses.
	stored, err := want.MarshalJSON()
	if err != nil {
		return fmt.Errorf("reading back %s %s: %w", want.GetKind(), desired.GetName(), err)
	}
	v := reflect.ValueOf(desired).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(stored, desired); err != nil {
		return fmt.Errorf("reading back %s %s: %w", want.GetKind(), desired.GetName(), err)
	}
	return nil
}

// noVersion is a resourceVersion no stored object has: etcd's revisions
// start at 1 with the empty store, and every write makes a later one.
const noVersion = "1"

// existing is Apply's error when a create found desired's name taken:
// ErrStaleCache when the object there is ours, a *NotOursError when it is
// not, nil when there is none.
func (o Owned) existing(ctx context.Context, desired client.Object, kind string) error {
	there := desired.DeepCopyObject().(client.Object)
	switch err := o.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), there); {
	case err == nil && o.Ours(there):
		return ErrStaleCache
	case err == nil:
		return &NotOursError{Kind: kind, Namespace: desired.GetNamespace(), Name: desired.GetName()}
	case apierrors.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("reading %s %s: %w", kind, desired.GetName(), err)
	}
}

// applyConfig is obj as an apply configuration: its kind, name and the fields
// we set, without the status and the fields the server sets.
func applyConfig(scheme *runtime.Scheme, obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	m, err := withoutStatus(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	for _, f := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// contains says whether have carries every field of want with want's value:
// maps may hold more keys, lists must match item by item.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(have, want)
}

// withoutStatus is obj as unstructured without its status. The status is
// never converted: an idle resync compares every cached Application with its
// desired one, and an Application's status (resources, operation state,
// conditions) is most of its size and of the garbage converting it made
// (issue 27, heap profile of the resync). An object whose top-level fields
// are not all structs or pointers to them (a Secret's data) is converted
// whole, then its status dropped.
func withoutStatus(obj client.Object) (map[string]any, error) {
	v := reflect.ValueOf(obj).Elem()
	t := v.Type()
	out := map[string]any{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		fv := v.Field(i)
		switch {
		case f.Anonymous && f.Type == reflect.TypeOf(metav1.TypeMeta{}):
			// Set from the GVK by the caller.
		case name == "status" || name == "-":
		case name == "" || !f.IsExported():
			return wholeWithoutStatus(obj)
		case fv.Kind() == reflect.Struct:
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fv.Addr().Interface())
			if err != nil {
				return nil, err
			}
			out[name] = m
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct:
			if fv.IsNil() {
				if !slices.Contains(strings.Split(opts, ","), "omitempty") {
					out[name] = nil
				}
				continue
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fv.Interface())
			if err != nil {
				return nil, err
			}
			out[name] = m
		default:
			return wholeWithoutStatus(obj)
		}
	}
	return out, nil
}

func wholeWithoutStatus(obj client.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	return m, nil
}
