// Package namespace is our own DeploymentTarget provisioner
// (managed-gitops.redhat.com/namespace): for each claim it creates a
// Namespace on the local cluster, or on a cluster the platform admin names
// with a kubeconfig Secret in the sidecar's namespace, with a ServiceAccount
// bound to one ClusterRole in that namespace only (and an optional
// ResourceQuota and LimitRange), and gives the tenant a kubeconfig for exactly
// that namespace. A platform team can so offer self-service environments on
// its own clusters without devsandbox.
package namespace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner"
)

// The sidecar creates the namespaces and what is in them, and binds the
// class's ClusterRole there (bind only for the usual namespace roles; a
// platform admin who names another role grants bind on it too).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts;resourcequotas;limitranges,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=edit;view;admin

const (
	// OwnerKindClaim is the owner-kind label of what we provision for a claim.
	OwnerKindClaim = "DeploymentTargetClaim"

	// AnnotationNamespace and AnnotationNamespaceUID, on a provisioned
	// target, name the Namespace it stands for: Release deletes exactly that one.
	AnnotationNamespace    = "managed-gitops.redhat.com/provisioned-namespace"
	AnnotationNamespaceUID = "managed-gitops.redhat.com/provisioned-namespace-uid"
	// LabelClass, on a provisioned namespace, is the class it was provisioned
	// for (its name, or a hash of a name too long for a label value), so the
	// class's maxClaimsPerNamespace can count them.
	LabelClass = "managed-gitops.redhat.com/deployment-target-class"

	// AnnotationClusterSecret, on a provisioned target, names the admin's
	// kubeconfig Secret of its cluster (none: the local cluster), so that it
	// can be released even when its class is gone.
	AnnotationClusterSecret = "managed-gitops.redhat.com/cluster-secret"

	// ServiceAccountName is the ServiceAccount Argo CD deploys as.
	ServiceAccountName = "gitops-service-deployer"
	tokenSecretName    = ServiceAccountName + "-token"
	limitsName         = "gitops-service"

	// DefaultNamespacePrefix starts every namespace of the default pattern:
	// with the hash at the end, no such name is one a platform component
	// installs later (a tenant "cert" claiming "manager" took "cert-manager"),
	// nor another tenant's ("a-b"/"c" and "a"/"b-c").
	DefaultNamespacePrefix = "dt-"
	// legacyPattern was the default before: a claim made then is found
	// (and freed) under it.
	legacyPattern = "{namespace}-{claim}"
	hashLength    = 8
	defaultRole   = "edit"
	kubeconfigKey = "kubeconfig"
)

// Parameters are the class's parameters.
type Parameters struct {
	// ClusterSecret names a Secret in the sidecar's namespace (kept by the
	// platform admin, never a tenant) whose 'kubeconfig' reaches the cluster
	// to provision on; empty: the local cluster.
	ClusterSecret string `json:"clusterSecret,omitempty"`
	// APIURL is where Argo CD reaches that cluster, if not at the
	// kubeconfig's (or, locally, the sidecar's own) server URL.
	APIURL string `json:"apiURL,omitempty"`
	// NamespacePattern names the namespace; {namespace} and {claim} are the
	// claim's, {hash} 8 hex digits of both. Default: "dt-{namespace}-{claim}-{hash}",
	// cut to 63 characters before the hash. A pattern without {hash} lets a
	// tenant pick names a platform component may want later.
	NamespacePattern string `json:"namespacePattern,omitempty"`
	// TenantNamespaceSelector, when set, limits the class to claims of tenant
	// namespaces whose labels it selects (labels tenants cannot set on their
	// own namespace); others are refused.
	TenantNamespaceSelector *metav1.LabelSelector `json:"tenantNamespaceSelector,omitempty"`
	// MaxClaimsPerNamespace, when above 0, bounds the namespaces the class
	// provisions for one tenant namespace; a claim beyond it is refused until
	// another one of the tenant's goes.
	MaxClaimsPerNamespace int `json:"maxClaimsPerNamespace,omitempty"`
	// ClusterRole is bound to the ServiceAccount in the namespace. Default "edit".
	ClusterRole string `json:"clusterRole,omitempty"`
	// ResourceQuota and LimitRange, when set, are created in the namespace.
	ResourceQuota *corev1.ResourceQuotaSpec `json:"resourceQuota,omitempty"`
	LimitRange    *corev1.LimitRangeSpec    `json:"limitRange,omitempty"`
	// AllowInsecureSkipTLSVerify is passed to the DeploymentTarget.
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify,omitempty"`
}

// Provisioner provisions namespaces.
type Provisioner struct {
	// Client is the sidecar's client on the local cluster; Local its config.
	Client client.Client
	Local  *rest.Config
	// APIReader reads the admin's cluster Secret uncached.
	APIReader client.Reader
	// SidecarNamespace holds the admins' cluster kubeconfig Secrets.
	SidecarNamespace string

	// mu makes counting a tenant's namespaces and creating one a single
	// step, so concurrent claims never pass maxClaimsPerNamespace together.
	mu sync.Mutex
}

// Name implements provisioner.Provisioner.
func (p *Provisioner) Name() as.Provisioner { return as.ProvisionerNamespace }

// cluster is a target cluster: a client and how Argo CD reaches it.
type cluster struct {
	c      client.Client
	apiURL string
	caData []byte
}

func refuse(format string, args ...any) error {
	return kernel.Refuse(as.DeploymentTargetReasonProvisioningFailed, format, args...)
}

const (
	// ReasonRightsMissing: the API server forbade the provisioner a write.
	ReasonRightsMissing = "ProvisionerRightsMissing"
	// ClusterRoleName and Component are what grants the provisioner its
	// rights on the local cluster: they are not in the sidecar's main
	// ClusterRole, so that a platform that does not offer namespaces does
	// not give the sidecar namespace creation and RoleBinding bind. The
	// installed ClusterRole's name is instance-scoped: this, a dot and the
	// sidecar's namespace (manifests/install/instance-names.yaml).
	ClusterRoleName = "gitops-service-namespace-provisioner"
	Component       = "manifests/install/components/namespace-provisioner"
)

// forbidden says what to do about the API server's Forbidden on a write of
// the provisioner: on the local cluster, install the component that grants
// its ClusterRole; on an admin's cluster, grant the rights to the identity of
// the class's cluster Secret. Any other error is returned as it is. The
// server's message (it names the user, verb and resource, nothing a tenant
// chose) is kept after the advice.
func forbidden(err error, clusterSecret, verb, what string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	if clusterSecret == "" {
		return kernel.Refuse(ReasonRightsMissing,
			"the GitOps Service may not %s %s on this cluster: install the kustomize component %s (ClusterRole %s bound to the sidecar's ServiceAccount) to provision namespaces here: %v",
			verb, what, Component, ClusterRoleName, err)
	}
	return kernel.Refuse(ReasonRightsMissing,
		"the identity of the cluster Secret %s may not %s %s on its cluster: grant it the rules of ClusterRole %s there: %v",
		clusterSecret, verb, what, ClusterRoleName, err)
}

// cluster connects to the local cluster or the one of the admin's Secret.
func (p *Provisioner) cluster(ctx context.Context, secretName, apiURL string) (*cluster, error) {
	cfg := p.Local
	if secretName != "" {
		s := &corev1.Secret{}
		if err := p.APIReader.Get(ctx, types.NamespacedName{Namespace: p.SidecarNamespace, Name: secretName}, s); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, refuse("the cluster Secret %s named by the class does not exist in the GitOps Service's namespace", secretName)
			}
			return nil, err
		}
		raw, err := clientcmd.Load(s.Data[kubeconfigKey])
		if err != nil {
			return nil, refuse("the cluster Secret %s has no valid kubeconfig", secretName)
		}
		if cfg, err = clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig(); err != nil {
			// The reason stays in the sidecar's log: the kubeconfig is the
			// admin's, and the refusal is shown to the tenant.
			log.FromContext(ctx).Info("cluster Secret has no usable kubeconfig", "secret", secretName, "error", err.Error())
			return nil, refuse("the cluster Secret %s has no usable kubeconfig", secretName)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: p.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the cluster's CA: %w", err)
		}
	}
	if apiURL == "" {
		apiURL = cfg.Host
	}
	return &cluster{c: c, apiURL: apiURL, caData: ca}, nil
}

// namespaceName is the claim's namespace name from the pattern.
func namespaceName(pattern string, claim *as.DeploymentTargetClaim) (string, error) {
	if pattern == "" {
		return DefaultNamespaceName(claim.Namespace, claim.Name), nil
	}
	name := strings.NewReplacer("{namespace}", claim.Namespace, "{claim}", claim.Name,
		"{hash}", claimHash(claim.Namespace, claim.Name)).Replace(pattern)
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return "", refuse("the namespace name %q (from pattern %q) is not valid: %s", name, pattern, strings.Join(errs, "; "))
	}
	return name, nil
}

// DefaultNamespaceName is dt-<namespace>-<claim>-<hash>: a claim's dots
// become dashes, the middle is cut so the whole is a valid namespace name,
// and the hash of the unchanged namespace and claim keeps the names of two
// claims apart.
func DefaultNamespaceName(namespace, claim string) string {
	middle := strings.ReplaceAll(namespace+"-"+claim, ".", "-")
	if room := validation.DNS1123LabelMaxLength - len(DefaultNamespacePrefix) - 1 - hashLength; len(middle) > room {
		middle = middle[:room]
	}
	return DefaultNamespacePrefix + strings.TrimRight(middle, "-") + "-" + claimHash(namespace, claim)
}

func claimHash(namespace, claim string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + claim))
	return hex.EncodeToString(sum[:])[:hashLength]
}

// classLabel is the value of LabelClass for a class name.
func classLabel(class string) string {
	if len(validation.IsValidLabelValue(class)) == 0 {
		return class
	}
	sum := sha256.Sum256([]byte(class))
	return "sha256-" + hex.EncodeToString(sum[:])[:16]
}

// permitted refuses a claim whose tenant namespace the class's selector
// does not select (read uncached: an admin's label change counts at once).
func (p *Provisioner) permitted(ctx context.Context, class *as.DeploymentTargetClass, params Parameters, claim *as.DeploymentTargetClaim) error {
	sel, err := tenantSelector(class.Name, params)
	if sel == nil || err != nil {
		return err
	}
	ns := &corev1.Namespace{}
	if err := p.APIReader.Get(ctx, types.NamespacedName{Name: claim.Namespace}, ns); err != nil {
		return fmt.Errorf("reading namespace %s: %w", claim.Namespace, err)
	}
	return selected(sel, class.Name, ns)
}

// tenantSelector is the class's tenantNamespaceSelector, nil when it has
// none; an invalid one is refused.
func tenantSelector(class string, params Parameters) (labels.Selector, error) {
	if params.TenantNamespaceSelector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(params.TenantNamespaceSelector)
	if err != nil {
		return nil, refuse("the tenantNamespaceSelector of DeploymentTargetClass %s is invalid: %v", class, err)
	}
	return sel, nil
}

// selected refuses a claim of tenant namespace ns that sel does not select.
func selected(sel labels.Selector, class string, ns *corev1.Namespace) error {
	if !sel.Matches(labels.Set(ns.Labels)) {
		return kernel.Refuse(as.DeploymentTargetReasonClassNotPermitted,
			"the DeploymentTargetClass %s may not be used from namespace %s (its tenantNamespaceSelector does not select it): ask the platform admin", class, ns.Name)
	}
	return nil
}

// withinLimit refuses a claim whose namespace does not exist yet when the
// tenant already has maxClaimsPerNamespace namespaces of the class on its
// cluster (a fresh list, under p.mu).
func withinLimit(ctx context.Context, c client.Client, class *as.DeploymentTargetClass, params Parameters, name string, claim *as.DeploymentTargetClaim) error {
	if params.MaxClaimsPerNamespace <= 0 {
		return nil
	}
	own := &corev1.Namespace{}
	err := c.Get(ctx, types.NamespacedName{Name: name}, own)
	if err == nil {
		// Made before (ours or not: ensureNamespace decides), counted already.
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading namespace %s: %w", name, err)
	}
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{
		ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelOwnerKind: OwnerKindClaim,
		ownership.LabelTenantNS: claim.Namespace, LabelClass: classLabel(class.Name),
	}); err != nil {
		return fmt.Errorf("listing the namespaces provisioned for %s: %w", claim.Namespace, err)
	}
	return belowLimit(class.Name, params.MaxClaimsPerNamespace, claim, list.Items)
}

// belowLimit refuses a new namespace for claim when its tenant has limit of the
// class's namespaces (provisioned) already, not counting claim's own or one
// being deleted (its claim is gone).
func belowLimit(class string, limit int, claim *as.DeploymentTargetClaim, provisioned []corev1.Namespace) error {
	n := 0
	for _, ns := range provisioned {
		if ns.Labels[ownership.LabelOwnerUID] != string(claim.UID) && ns.DeletionTimestamp.IsZero() {
			n++
		}
	}
	if n >= limit {
		return kernel.Refuse(as.DeploymentTargetReasonClaimLimitReached,
			"namespace %s has %d targets of DeploymentTargetClass %s, the most the class allows (maxClaimsPerNamespace %d): delete a claim of the class first",
			claim.Namespace, n, class, limit)
	}
	return nil
}

func ownerLabels(claim *as.DeploymentTargetClaim) map[string]string {
	return map[string]string{
		ownership.LabelManagedBy: ownership.ManagedByValue,
		ownership.LabelTenantNS:  claim.Namespace,
		ownership.LabelOwnerKind: OwnerKindClaim,
		ownership.LabelOwnerUID:  string(claim.UID),
	}
}

// Provision implements provisioner.Provisioner.
func (p *Provisioner) Provision(ctx context.Context, claim *as.DeploymentTargetClaim, class *as.DeploymentTargetClass) (*as.DeploymentTarget, error) {
	var params Parameters
	if err := provisioner.ParseParameters(class, &params); err != nil {
		return nil, err
	}
	name, err := namespaceName(params.NamespacePattern, claim)
	if err != nil {
		return nil, err
	}
	role := params.ClusterRole
	if role == "" {
		role = defaultRole
	}
	if err := p.permitted(ctx, class, params, claim); err != nil {
		return nil, err
	}
	cl, err := p.cluster(ctx, params.ClusterSecret, params.APIURL)
	if err != nil {
		return nil, err
	}
	ns, err := p.ensureNamespace(ctx, cl.c, class, params, name, claim)
	if err != nil {
		return nil, err
	}
	labels := ownerLabels(claim)
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: ServiceAccountName, Labels: labels}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: ServiceAccountName, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: name, Name: ServiceAccountName}},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: tokenSecretName, Labels: labels,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: ServiceAccountName}},
			Type: corev1.SecretTypeServiceAccountToken,
		},
	}
	if params.ResourceQuota != nil {
		objs = append(objs, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: limitsName, Labels: labels}, Spec: *params.ResourceQuota})
	}
	if params.LimitRange != nil {
		objs = append(objs, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: limitsName, Labels: labels}, Spec: *params.LimitRange})
	}
	for _, obj := range objs {
		if err := cl.c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			if apierrors.IsForbidden(err) {
				if _, ok := obj.(*rbacv1.RoleBinding); ok {
					return nil, forbidden(err, params.ClusterSecret, "create", fmt.Sprintf("the RoleBinding %s in namespace %s (to bind ClusterRole %q it needs the bind verb on it)", obj.GetName(), name, role))
				}
				return nil, forbidden(err, params.ClusterSecret, "create", fmt.Sprintf("%T %s in namespace %s", obj, obj.GetName(), name))
			}
			return nil, fmt.Errorf("creating %T %s/%s: %w", obj, name, obj.GetName(), err)
		}
	}
	token := &corev1.Secret{}
	if err := cl.c.Get(ctx, types.NamespacedName{Namespace: name, Name: tokenSecretName}, token); err != nil {
		return nil, err
	}
	if len(token.Data[corev1.ServiceAccountTokenKey]) == 0 {
		// The cluster's token controller fills it soon.
		return nil, nil
	}
	kubeconfig, err := kubeconfigFor(cl, name, token.Data[corev1.ServiceAccountTokenKey])
	if err != nil {
		return nil, err
	}
	secretName := provisioner.TargetName(claim.Name) + "-kubeconfig"
	if err := p.writeKubeconfig(ctx, claim, secretName, kubeconfig); err != nil {
		return nil, err
	}
	dt := provisioner.NewTarget(as.ProvisionerNamespace, claim, as.DeploymentTargetKubernetesClusterCredentials{
		DefaultNamespace: name, APIURL: cl.apiURL, ClusterCredentialsSecret: secretName,
		AllowInsecureSkipTLSVerify: params.AllowInsecureSkipTLSVerify,
	})
	dt.Annotations[AnnotationNamespace] = name
	dt.Annotations[AnnotationNamespaceUID] = string(ns.UID)
	if params.ClusterSecret != "" {
		dt.Annotations[AnnotationClusterSecret] = params.ClusterSecret
	}
	return provisioner.CreateTarget(ctx, p.Client, dt)
}

// ensureNamespace creates the namespace (within the class's limit), or
// returns it when it is ours for this claim. Anyone else's is never used.
func (p *Provisioner) ensureNamespace(ctx context.Context, c client.Client, class *as.DeploymentTargetClass, params Parameters, name string, claim *as.DeploymentTargetClaim) (*corev1.Namespace, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := withinLimit(ctx, c, class, params, name, claim); err != nil {
		return nil, err
	}
	nsLabels := ownerLabels(claim)
	nsLabels[LabelClass] = classLabel(class.Name)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nsLabels,
		Annotations: map[string]string{ownership.AnnotationOwnerName: claim.Namespace + "/" + claim.Name}}}
	err := c.Create(ctx, ns)
	if apierrors.IsAlreadyExists(err) {
		if err := c.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
			return nil, err
		}
		if !ownership.IsOwnedBy(ns.Labels, OwnerKindClaim, string(claim.UID)) || !ns.DeletionTimestamp.IsZero() {
			return nil, refuse("the namespace %s exists and was not provisioned for this claim", name)
		}
		return ns, nil
	}
	if err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", name, forbidden(err, params.ClusterSecret, "create", "namespace "+name))
	}
	return ns, nil
}

// kubeconfigFor is a kubeconfig for the ServiceAccount's token, in namespace ns.
func kubeconfigFor(cl *cluster, ns string, token []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cl.apiURL, CertificateAuthorityData: cl.caData}
	cfg.AuthInfos["deployer"] = &clientcmdapi.AuthInfo{Token: string(token)}
	cfg.Contexts["deployer"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "deployer", Namespace: ns}
	cfg.CurrentContext = "deployer"
	return clientcmd.Write(*cfg)
}

// writeKubeconfig writes the tenant's kubeconfig Secret, typed so the
// Environment reconciler's Secret watch sees it change.
func (p *Provisioner) writeKubeconfig(ctx context.Context, claim *as.DeploymentTargetClaim, name string, kubeconfig []byte) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: name}}
	err := kernel.Ensure(ctx, p.APIReader, p.Client, s, func(o client.Object) bool {
		return ownership.IsOwnedBy(o.GetLabels(), OwnerKindClaim, string(claim.UID))
	}, func() {
		if s.ResourceVersion == "" { // new: ours from the start
			s.Labels, s.Type = ownerLabels(claim), v1.ManagedEnvironmentSecretType
		}
		s.Data = map[string][]byte{kubeconfigKey: kubeconfig}
	})
	if errors.As(err, new(*kernel.NotOursError)) {
		return refuse("the Secret %s exists in namespace %s and was not made for this claim; it is left alone", name, claim.Namespace)
	}
	return err
}

// Release implements provisioner.Provisioner: the Namespace the target
// stands for is deleted (only that one: our labels and its UID), and the
// tenant's kubeconfig Secret with it; done once the Namespace is gone.
func (p *Provisioner) Release(ctx context.Context, dt *as.DeploymentTarget) (bool, error) {
	name, uid := dt.Annotations[AnnotationNamespace], dt.Annotations[AnnotationNamespaceUID]
	if name == "" {
		return true, nil
	}
	cl, err := p.cluster(ctx, p.releaseSecret(ctx, dt), "")
	if err != nil {
		return false, err
	}
	// Targets are tenants' objects: the annotations alone never make a
	// namespace ours. It must also carry our labels for a claim of the
	// target's own namespace.
	gone, err := deleteNamespace(ctx, cl.c, name, func(ns *corev1.Namespace) bool {
		return string(ns.UID) == uid && ns.Labels[ownership.LabelOwnerKind] == OwnerKindClaim && ns.Labels[ownership.LabelTenantNS] == dt.Namespace
	})
	if err != nil || !gone {
		return false, err
	}
	s := &corev1.Secret{}
	err = p.APIReader.Get(ctx, types.NamespacedName{Namespace: dt.Namespace, Name: dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret}, s)
	if err == nil && s.Labels[ownership.LabelOwnerKind] == OwnerKindClaim && s.Labels[ownership.LabelManagedBy] == ownership.ManagedByValue {
		suid := s.UID
		if err := p.Client.Delete(ctx, s, client.Preconditions{UID: &suid}); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	return true, nil
}

// releaseSecret is the cluster Secret a target's namespace is released with.
// The target's annotation is the tenant's to edit, and the Secret is one of
// the admin's: the target's class (the admin's) says which, as long as it
// exists; the annotation only when the class is gone.
func (p *Provisioner) releaseSecret(ctx context.Context, dt *as.DeploymentTarget) string {
	class := &as.DeploymentTargetClass{}
	if err := p.Client.Get(ctx, types.NamespacedName{Name: string(dt.Spec.DeploymentTargetClassName)}, class); err == nil {
		var params Parameters
		if provisioner.ParseParameters(class, &params) == nil {
			return params.ClusterSecret
		}
	}
	return dt.Annotations[AnnotationClusterSecret]
}

// Abandon implements provisioner.Provisioner: a namespace made for the claim
// before its target existed is deleted.
func (p *Provisioner) Abandon(ctx context.Context, claim *as.DeploymentTargetClaim) (bool, error) {
	class := &as.DeploymentTargetClass{}
	if err := p.Client.Get(ctx, types.NamespacedName{Name: string(claim.Spec.DeploymentTargetClassName)}, class); err != nil {
		// Without its class we cannot tell where it provisioned: nothing to do.
		return true, client.IgnoreNotFound(err)
	}
	var params Parameters
	if err := provisioner.ParseParameters(class, &params); err != nil {
		return true, nil
	}
	name, err := namespaceName(params.NamespacePattern, claim)
	if err != nil {
		return true, nil
	}
	cl, err := p.cluster(ctx, params.ClusterSecret, "")
	if err != nil {
		return false, err
	}
	names := []string{name}
	if params.NamespacePattern == "" {
		// A claim made before the default changed has its namespace under the old one.
		if legacy, err := namespaceName(legacyPattern, claim); err == nil {
			names = append(names, legacy)
		}
	}
	done := true
	for _, n := range names {
		gone, err := deleteNamespace(ctx, cl.c, n, func(ns *corev1.Namespace) bool {
			return ownership.IsOwnedBy(ns.Labels, OwnerKindClaim, string(claim.UID))
		})
		if err != nil {
			return false, err
		}
		done = done && gone
	}
	return done, nil
}

// deleteNamespace deletes the namespace when ours says so; true once it is gone
// (or is not one we may delete).
func deleteNamespace(ctx context.Context, c client.Client, name string, ours func(*corev1.Namespace) bool) (bool, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	if !ours(ns) || ns.Labels[ownership.LabelManagedBy] != ownership.ManagedByValue {
		return true, nil
	}
	if ns.DeletionTimestamp.IsZero() {
		uid := ns.UID
		if err := c.Delete(ctx, ns, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting namespace %s: %w", name, err)
		}
	}
	return false, nil
}
