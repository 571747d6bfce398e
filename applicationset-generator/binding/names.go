package binding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// A binding's Applications are named as the original service named its
// GitOpsDeployments, <binding>-<app>-<env>-<component>, but they live in the
// one Argo CD namespace, where another tenant's binding may already hold that
// name. The binding then takes a name of its own (the readable one cut, plus
// a hash of the binding's UID), and keeps whichever name its Application
// has: the other one going away must not rename (delete and recreate) a
// deployed Application.

// Holder says who has an Application of a name.
type Holder int

const (
	// Free: no Application has the name.
	Free Holder = iota
	// ThisBinding: an Application generated for this binding has it.
	ThisBinding
	// Other: another Application has it.
	Other
)

// appNames are the two names a component's Application may have.
func appNames(seb *appstudiov1alpha1.SnapshotEnvironmentBinding, component string) (readable, own string) {
	readable = appName(seb.Name, seb.Spec.Application, seb.Spec.Environment, component)
	return readable, hashed(readable, string(seb.UID)+"/"+component)
}

// appName is the original service's child name, <binding>-<app>-<env>-<component>,
// cut and suffixed with a hash when too long.
func appName(binding, app, env, component string) string {
	name := strings.Join([]string{binding, app, env, component}, "-")
	if len(name) <= maxAppName {
		return name
	}
	return hashed(name, name)
}

// hashed is name, cut to make room, suffixed with a hash of key.
func hashed(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	suffix := hex.EncodeToString(sum[:])[:10]
	if len(name) > maxAppName-len(suffix)-1 {
		name = strings.TrimRight(name[:maxAppName-len(suffix)-1], "-.")
	}
	return name + "-" + suffix
}

// pickName is the name a component's Application gets, given who holds the
// readable and the binding's own name.
func pickName(readable, own string, holders map[string]Holder) string {
	switch {
	case holders[readable] == ThisBinding:
		return readable
	case holders[own] == ThisBinding, holders[readable] == Other:
		return own
	}
	return readable
}

// holders looks up who holds the names the binding's components may use
// (the binding's own name only when the readable one is not already its
// own: pickName does not look at it then, and this runs on every request).
// The sidecar's cache holds only our Applications: a name an admin's own
// Application holds is reported by Argo CD when it cannot generate.
func holders(ctx context.Context, c client.Reader, argoNamespace string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding, components []appstudiov1alpha1.SnapshotComponent) (map[string]Holder, error) {
	out := map[string]Holder{}
	for _, sc := range components {
		readable, own := appNames(seb, sc.Name)
		for _, name := range []string{readable, own} {
			if out[readable] == ThisBinding {
				break
			}
			app := &argov1alpha1.Application{}
			err := c.Get(ctx, types.NamespacedName{Namespace: argoNamespace, Name: name}, app)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, err
			case ownership.IsOwnedBy(app.Labels, ownership.KindBinding, string(seb.UID)):
				out[name] = ThisBinding
			default:
				out[name] = Other
			}
		}
	}
	return out, nil
}
