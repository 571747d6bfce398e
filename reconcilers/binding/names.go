package binding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// A binding's Applications are named as the original service named its
// GitOpsDeployments, <binding>-<app>-<env>-<component>, but they live in the
// one Argo CD namespace, where another tenant's binding may already hold that
// name. The binding then takes a name of its own (the readable one cut, plus
// a hash of the binding's UID), and keeps whichever name its Application
// has: the other one going away must not rename (delete and recreate) a
// deployed Application. A name held by an Application we did not make (an
// admin's, a look-alike) is held, never taken over.

// maxLookups bounds one answer's concurrent look-ups of names.
const maxLookups = 8

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

// holders looks up who holds the names the binding's components may use.
// The sidecar's cache holds only Applications labelled as ours, so a name
// the cache says is free is read again from the API server (c is the cache,
// api reads past it): an admin's unlabelled Application of that name would
// otherwise be taken over by Argo CD's applicationset-controller (its spec,
// labels and finalizers) and deleted with the binding. Only names about to
// be used are read so: the readable one until the binding's Application has
// it (the cache then holds it), the binding's own one when the readable one
// is held. An Application is the binding's only if tenantproject.MadeFor
// says it is ours for the binding's tenant (tenantUID) and it is labelled
// with the binding's UID; anything else holds its name. When both names are
// held, nothing is generated and the binding says why.
func holders(ctx context.Context, c, api client.Reader, argoNamespace, tenantUID string, seb *appstudiov1alpha1.SnapshotEnvironmentBinding, components []appstudiov1alpha1.SnapshotComponent) (map[string]Holder, error) {
	out := map[string]Holder{}
	holder := func(name string, uncached bool) (Holder, error) {
		app := &argov1alpha1.Application{}
		key := types.NamespacedName{Namespace: argoNamespace, Name: name}
		var err error
		if uncached {
			err = kernel.GetConfirmed(ctx, c, api, key, app)
		} else {
			err = c.Get(ctx, key, app)
		}
		switch {
		case apierrors.IsNotFound(err):
			return Free, nil
		case err != nil:
			return Free, err
		}
		if tenantproject.MadeForOwner(app, ownership.KindBinding, string(seb.UID), seb.Namespace, tenantUID) {
			return ThisBinding, nil
		}
		return Other, nil
	}
	// The components' names are looked up at once: past the cache each is a
	// round trip to the API server, and a burst of new bindings, whose
	// names are all free, makes those long (one after the other, 2.5 s an
	// answer at N=100 on a saturated machine; docs/performance.md).
	lookUp := func(names []string, uncached []bool) ([]Holder, error) {
		found := make([]Holder, len(names))
		var eg errgroup.Group
		eg.SetLimit(maxLookups)
		for i, name := range names {
			if name == "" {
				continue
			}
			eg.Go(func() (err error) {
				found[i], err = holder(name, uncached[i])
				return err
			})
		}
		return found, eg.Wait()
	}
	readables, owns := make([]string, len(components)), make([]string, len(components))
	for i, sc := range components {
		readables[i], owns[i] = appNames(seb, sc.Name)
	}
	rs, err := lookUp(readables, slices.Repeat([]bool{true}, len(components)))
	if err != nil {
		return nil, err
	}
	// The binding keeps its own name once its Application has it (then
	// cached); otherwise it is used only when the readable one is held.
	ownNames, ownUncached := make([]string, len(components)), make([]bool, len(components))
	for i := range components {
		if rs[i] != ThisBinding {
			ownNames[i], ownUncached[i] = owns[i], rs[i] == Other
		}
	}
	ownHolders, err := lookUp(ownNames, ownUncached)
	if err != nil {
		return nil, err
	}
	for i, sc := range components {
		readable, own, r := readables[i], owns[i], rs[i]
		out[readable] = r
		if r == ThisBinding {
			continue
		}
		o := ownHolders[i]
		out[own] = o
		if r == Other && o == Other {
			return nil, Refuse(ReasonApplicationNameCollision,
				"the Argo CD Applications %s/%s and %s/%s of component %q exist and were not created for this binding: delete or rename one of them",
				argoNamespace, readable, argoNamespace, own, sc.Name)
		}
	}
	return out, nil
}
