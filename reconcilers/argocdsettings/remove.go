package argocdsettings

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func errorsJoin(errs []error) error { return errors.Join(errs...) }

// Removed says what Remove did to one ConfigMap.
type Removed struct {
	ConfigMap string
	// Keys are the keys that were ours and are gone; Kept those that stay
	// because another manager owns them too (set to the same value).
	Keys, Kept []string
	// Absent: the ConfigMap does not exist (nothing to do).
	Absent bool
}

// Remove applies an empty configuration as each of our field managers to
// each of Argo CD's ConfigMaps: exactly the keys only we owned disappear (our
// settings, and in argocd-rbac-cm the tenants' policy.gitops-service.csv);
// a key someone else also set stays, and nothing else is touched. A missing
// ConfigMap or key is no error. Stop the sidecar first, or it writes them again.
func Remove(ctx context.Context, c client.Client, namespace string, n Names) ([]Removed, error) {
	var out []Removed
	var errs []error
	for _, name := range []string{n.ArgoCM, n.CmdParamsCM, n.RBACCM} {
		r := Removed{ConfigMap: name}
		for _, manager := range []string{FieldManager, TenantPolicyFieldManager} {
			// A write between our read and apply (resourceVersion): read again.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return release(ctx, c, namespace, name, manager, &r) })
			if err != nil {
				errs = append(errs, err)
			}
			if r.Absent {
				break
			}
		}
		out = append(out, r)
	}
	return out, errorsJoin(errs)
}

// release applies nothing as manager to ConfigMap name, recording in r what went.
func release(ctx context.Context, c client.Client, namespace, name, manager string, r *Removed) error {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			r.Absent = true
			return nil
		}
		return fmt.Errorf("reading %s/%s: %w", namespace, name, err)
	}
	if !HasManager(cm.ManagedFields, manager) {
		return nil
	}
	owned := OwnedKeys(cm.ManagedFields, manager)
	obj := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: cm.ResourceVersion},
	}
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(manager)); err != nil {
		if apierrors.IsConflict(err) {
			return err
		}
		return fmt.Errorf("releasing %s's keys of %s/%s: %w", manager, namespace, name, err)
	}
	for _, k := range sortedKeys(owned) {
		if _, still := obj.Data[k]; still {
			r.Kept = append(r.Kept, k)
		} else {
			r.Keys = append(r.Keys, k)
		}
	}
	return nil
}
