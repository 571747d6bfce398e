// Package devsandbox is the appstudio.redhat.com/devsandbox provisioner of
// ADR-8: it asks the toolchain (codeready-toolchain's SpaceRequest API) for a
// namespace on a sandbox cluster and turns the fulfilled request into a
// DeploymentTarget, as the original service did.
package devsandbox

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner"
)

// +kubebuilder:rbac:groups=toolchain.dev.openshift.com,resources=spacerequests,verbs=get;list;watch;create;update;patch;delete

// SpaceRequestGVK is the toolchain's request for a namespace.
var SpaceRequestGVK = schema.GroupVersionKind{Group: "toolchain.dev.openshift.com", Version: "v1alpha1", Kind: "SpaceRequest"}

// TierName is the tier of the namespaces requested, as in the original service.
const TierName = "appstudio-env"

// Provisioner provisions through SpaceRequests in the claim's namespace.
type Provisioner struct {
	Client client.Client
}

// Available says whether the SpaceRequest API is served: the provisioner is
// enabled only then.
func Available(mapper meta.RESTMapper) bool {
	_, err := mapper.RESTMapping(SpaceRequestGVK.GroupKind(), SpaceRequestGVK.Version)
	return err == nil
}

var _ provisioner.Watcher = (*Provisioner)(nil)

// Name implements provisioner.Provisioner.
func (p *Provisioner) Name() as.Provisioner { return as.ProvisionerDevSandbox }

// Watched implements provisioner.Watcher: SpaceRequests.
func (p *Provisioner) Watched() client.Object { return newSpaceRequest() }

// ClaimOf implements provisioner.Watcher: the claim a SpaceRequest was made for.
func (p *Provisioner) ClaimOf(obj client.Object) (types.NamespacedName, bool) {
	claim := obj.GetLabels()[as.LabelDTC]
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: claim}, claim != ""
}

func newSpaceRequest() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(SpaceRequestGVK)
	return u
}

// requestsOf lists the SpaceRequests made for a claim, from the API server.
func (p *Provisioner) requestsOf(ctx context.Context, namespace, claim string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(SpaceRequestGVK.GroupVersion().WithKind("SpaceRequestList"))
	if err := p.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{as.LabelDTC: claim}); err != nil {
		return nil, fmt.Errorf("listing SpaceRequests of claim %s/%s: %w", namespace, claim, err)
	}
	return list.Items, nil
}

// Provision implements provisioner.Provisioner: one SpaceRequest per claim;
// once it is Ready with exactly one namespace, the DeploymentTarget.
func (p *Provisioner) Provision(ctx context.Context, claim *as.DeploymentTargetClaim, _ *as.DeploymentTargetClass) (*as.DeploymentTarget, error) {
	reqs, err := p.requestsOf(ctx, claim.Namespace, claim.Name)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		sr := newSpaceRequest()
		sr.SetNamespace(claim.Namespace)
		sr.SetGenerateName(claim.Name + "-")
		sr.SetLabels(map[string]string{as.LabelDTC: claim.Name})
		if err := unstructured.SetNestedField(sr.Object, TierName, "spec", "tierName"); err != nil {
			return nil, err
		}
		if err := p.Client.Create(ctx, sr); err != nil {
			return nil, fmt.Errorf("creating a SpaceRequest for claim %s: %w", claim.Name, err)
		}
		return nil, nil
	}
	if len(reqs) > 1 {
		return nil, kernel.Refuse(as.DeploymentTargetReasonProvisioningFailed,
			"%d SpaceRequests are labelled %s=%s; expected one", len(reqs), as.LabelDTC, claim.Name)
	}
	sr := &reqs[0]
	if !ready(sr) {
		return nil, nil
	}
	access, _, _ := unstructured.NestedSlice(sr.Object, "status", "namespaceAccess")
	if len(access) != 1 {
		return nil, kernel.Refuse(as.DeploymentTargetReasonProvisioningFailed,
			"SpaceRequest %s is Ready with %d namespaces; expected exactly one", sr.GetName(), len(access))
	}
	entry, _ := access[0].(map[string]any)
	ns, _ := entry["name"].(string)
	secret, _ := entry["secretRef"].(string)
	url, _, _ := unstructured.NestedString(sr.Object, "status", "targetClusterURL")
	if ns == "" || secret == "" || url == "" {
		return nil, kernel.Refuse(as.DeploymentTargetReasonProvisioningFailed,
			"SpaceRequest %s is Ready without a namespace name, secretRef or targetClusterURL", sr.GetName())
	}
	dt, err := provisioner.CreateTarget(ctx, p.Client, provisioner.NewTarget(as.ProvisionerDevSandbox, claim,
		as.DeploymentTargetKubernetesClusterCredentials{DefaultNamespace: ns, APIURL: url, ClusterCredentialsSecret: secret}))
	if err != nil {
		return nil, err
	}
	if sr.GetLabels()[as.LabelDT] != dt.Name {
		patch := client.MergeFrom(sr.DeepCopy())
		labels := sr.GetLabels()
		labels[as.LabelDT] = dt.Name
		sr.SetLabels(labels)
		if err := p.Client.Patch(ctx, sr, patch); err != nil {
			return nil, fmt.Errorf("labelling SpaceRequest %s: %w", sr.GetName(), err)
		}
	}
	return dt, nil
}

// ready says whether the toolchain reports the SpaceRequest Ready.
func ready(sr *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(sr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == string(metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

// Release implements provisioner.Provisioner: the target's SpaceRequest is
// deleted, and the release is done once the toolchain has removed it.
func (p *Provisioner) Release(ctx context.Context, dt *as.DeploymentTarget) (bool, error) {
	return p.deleteRequests(ctx, dt.Namespace, dt.Spec.ClaimRef, dt.Name)
}

// Abandon implements provisioner.Provisioner: the claim's SpaceRequest goes.
func (p *Provisioner) Abandon(ctx context.Context, claim *as.DeploymentTargetClaim) (bool, error) {
	return p.deleteRequests(ctx, claim.Namespace, claim.Name, "")
}

// deleteRequests deletes the SpaceRequests labelled for the target dt (when
// set) or, for a target not yet labelled, for the claim; true once none is left.
func (p *Provisioner) deleteRequests(ctx context.Context, namespace, claim, dt string) (bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(SpaceRequestGVK.GroupVersion().WithKind("SpaceRequestList"))
	if err := p.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return false, fmt.Errorf("listing SpaceRequests in %s: %w", namespace, err)
	}
	left := 0
	for i := range list.Items {
		sr := &list.Items[i]
		l := sr.GetLabels()
		if !((dt != "" && l[as.LabelDT] == dt) || (claim != "" && l[as.LabelDTC] == claim && (l[as.LabelDT] == "" || l[as.LabelDT] == dt))) {
			continue
		}
		left++
		if sr.GetDeletionTimestamp() != nil {
			continue
		}
		uid := sr.GetUID()
		if err := p.Client.Delete(ctx, sr, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting SpaceRequest %s: %w", sr.GetName(), err)
		}
	}
	return left == 0, nil
}
