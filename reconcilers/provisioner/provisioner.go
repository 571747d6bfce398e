// Package provisioner is the contract between the DeploymentTargetClaim binder,
// the DeploymentTarget reclaimer and the provisioners that make
// DeploymentTargets on demand (ADR-8, modelled on PersistentVolume
// provisioners), plus what every provisioner does the same way: the name,
// annotations, finalizer and status of a provisioned DeploymentTarget.
package provisioner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Provisioner makes DeploymentTargets for claims of the classes that name it,
// and frees what it made. Every method is idempotent and is called again until
// it reports done; none blocks waiting for another object.
type Provisioner interface {
	// Name is the value of a DeploymentTargetClass's spec.provisioner.
	Name() as.Provisioner
	// Provision makes (or continues making) the DeploymentTarget of claim. It
	// returns the target once it exists (phase Available, claimRef = claim),
	// nil while waiting, or a *kernel.Refusal when the claim or class is unusable
	// (the claim's ErrorOccurred condition and a Warning Event, not retried quickly).
	Provision(ctx context.Context, claim *as.DeploymentTargetClaim, class *as.DeploymentTargetClass) (*as.DeploymentTarget, error)
	// Release frees the external resources of dt, which it provisioned and
	// which is being deleted; true once they are gone.
	Release(ctx context.Context, dt *as.DeploymentTarget) (bool, error)
	// Abandon frees what Provision made for a claim that is being deleted
	// before its DeploymentTarget existed; true once it is gone.
	Abandon(ctx context.Context, claim *as.DeploymentTargetClaim) (bool, error)
}

// Watcher is a Provisioner whose progress shows on objects of another API (a
// SpaceRequest): the binder watches them and reconciles the claim ClaimOf names.
type Watcher interface {
	Watched() client.Object
	ClaimOf(obj client.Object) (types.NamespacedName, bool)
}

// Set holds the provisioners this sidecar runs, by name.
type Set map[as.Provisioner]Provisioner

// NewSet makes a Set of ps.
func NewSet(ps ...Provisioner) Set {
	s := Set{}
	for _, p := range ps {
		s[p.Name()] = p
	}
	return s
}

// TargetName is the DeploymentTarget provisioned for a claim, as in the original service.
func TargetName(claim string) string { return claim + "-dt" }

// NewTarget is the DeploymentTarget p provisions for claim: pre-bound to it
// (claimRef), marked as provisioned by p, with the provisioner finalizer so
// that p frees its resources before the target goes.
func NewTarget(p as.Provisioner, claim *as.DeploymentTargetClaim, creds as.DeploymentTargetKubernetesClusterCredentials) *as.DeploymentTarget {
	return &as.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   claim.Namespace,
			Name:        TargetName(claim.Name),
			Annotations: map[string]string{as.AnnDynamicallyProvisioned: string(p)},
			Finalizers:  []string{as.FinalizerProvisioner},
		},
		Spec: as.DeploymentTargetSpec{
			DeploymentTargetClassName:    claim.Spec.DeploymentTargetClassName,
			KubernetesClusterCredentials: creds,
			ClaimRef:                     claim.Name,
		},
	}
}

// CreateTarget creates dt (from NewTarget) and marks it Available, or returns
// the one that exists already. A target of that name that p did not make for
// this claim is a refusal: it is never touched.
func CreateTarget(ctx context.Context, c client.Client, dt *as.DeploymentTarget) (*as.DeploymentTarget, error) {
	err := c.Create(ctx, dt)
	if apierrors.IsAlreadyExists(err) {
		existing := &as.DeploymentTarget{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(dt), existing); err != nil {
			return nil, err
		}
		if existing.Annotations[as.AnnDynamicallyProvisioned] != dt.Annotations[as.AnnDynamicallyProvisioned] || existing.Spec.ClaimRef != dt.Spec.ClaimRef {
			return nil, kernel.Refuse(as.DeploymentTargetReasonProvisioningFailed,
				"a DeploymentTarget named %s exists in namespace %s that was not provisioned for this claim; it is left alone: delete or rename it", dt.Name, dt.Namespace)
		}
		dt = existing
	} else if err != nil {
		return nil, fmt.Errorf("creating DeploymentTarget %s/%s: %w", dt.Namespace, dt.Name, err)
	}
	if dt.Status.Phase != "" {
		return dt, nil
	}
	orig := dt.DeepCopy()
	dt.Status.Phase = as.DeploymentTargetPhaseAvailable
	// A success: no Event, so no recorder.
	kernel.SetCondition(nil, dt, &dt.Status.Conditions, metav1.Condition{
		Type: as.DeploymentTargetConditionErrorOccurred, Status: metav1.ConditionFalse,
		Reason: as.DeploymentTargetReasonSuccess, Message: "provisioned by " + dt.Annotations[as.AnnDynamicallyProvisioned],
		ObservedGeneration: dt.Generation,
	}, metav1.Now(), false)
	if err := c.Status().Patch(ctx, dt, client.MergeFrom(orig)); err != nil {
		return nil, fmt.Errorf("marking DeploymentTarget %s/%s Available: %w", dt.Namespace, dt.Name, err)
	}
	return dt, nil
}

// ParseParameters decodes a class's parameters into out (a struct with json
// tags); unknown fields are refused, so a typo does not go unnoticed.
func ParseParameters(class *as.DeploymentTargetClass, out any) error {
	if class.Spec.Parameters == nil || len(class.Spec.Parameters.Raw) == 0 {
		return nil
	}
	if err := strictUnmarshal(class.Spec.Parameters.Raw, out); err != nil {
		return kernel.Refuse(as.DeploymentTargetReasonProvisioningFailed,
			"the parameters of DeploymentTargetClass %s are invalid: %v", class.Name, err)
	}
	return nil
}

func strictUnmarshal(raw []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}
