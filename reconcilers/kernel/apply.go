package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// NotOursError: an object of the name we need exists and is not ours.
type NotOursError struct {
	Kind, Namespace, Name string
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("%s %s/%s exists and was not created by the GitOps Service", e.Kind, e.Namespace, e.Name)
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
		existing := desired.DeepCopyObject().(client.Object)
		err := o.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
		switch {
		case err == nil && o.Ours(existing):
			return ErrStaleCache
		case err == nil:
			return &NotOursError{Kind: want.GetKind(), Namespace: desired.GetNamespace(), Name: desired.GetName()}
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading %s %s: %w", want.GetKind(), desired.GetName(), err)
		}
		// Not there: the apply creates it. (Between this read and the apply,
		// only someone guessing our UID-based name could create it first.)
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
	if err := o.Client.Patch(ctx, want, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
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

// applyConfig is obj as an apply configuration: its kind, name and the fields
// we set, without the status and the fields the server sets.
func applyConfig(scheme *runtime.Scheme, obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
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
