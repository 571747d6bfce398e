package managedenvironment

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// What we create on a target cluster for createNewServiceAccount, and how long
// we wait for it.
const (
	serviceAccountNamespace = "kube-system"
	// annotationRoleNamespaces, on our ServiceAccount, lists the namespaces where
	// we created its Role and RoleBinding, so they can be removed when the
	// environment's namespaces change.
	annotationRoleNamespaces = "managed-gitops.redhat.com/role-namespaces"

	// connectTimeout bounds the credentials check (one request).
	connectTimeout = 10 * time.Second
	// installTimeout bounds installing the ServiceAccount, its roles and token.
	installTimeout = 30 * time.Second
	// tokenWait bounds the wait for the token controller to fill the token Secret.
	tokenWait = 15 * time.Second
)

func serviceAccountName(uid types.UID) string { return "argocd-manager-" + string(uid) }
func clusterRoleName(uid types.UID) string    { return "argocd-manager-cluster-role-" + string(uid) }
func clusterRoleBindingName(uid types.UID) string {
	return "argocd-manager-cluster-role-binding-" + string(uid)
}
func roleName(uid types.UID) string        { return "argocd-manager-role-" + string(uid) }
func roleBindingName(uid types.UID) string { return "argocd-manager-role-binding-" + string(uid) }
func tokenSecretName(uid types.UID) string { return "argocd-manager-token-" + string(uid) }

// ServiceAccountRef is <namespace>/<name> of the ServiceAccount we create for an environment.
func ServiceAccountRef(uid types.UID) string {
	return serviceAccountNamespace + "/" + serviceAccountName(uid)
}

// remoteScheme has the types we read and write on target clusters.
var remoteScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// RemoteClientFunc makes a client of a target cluster.
type RemoteClientFunc func(*rest.Config) (client.Client, error)

// NewRemoteClient is the default RemoteClientFunc. It follows no redirect:
// client-go's transport puts the bearer token on every request it sends, a
// redirected one too (Go's dropping of credentials on redirect applies only to
// the first request's own headers), so a tenant's URL that redirects to
// http:// or to another host or port would receive the token. No API server
// redirects the requests we make.
func NewRemoteClient(cfg *rest.Config) (client.Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return client.New(cfg, client.Options{Scheme: remoteScheme, HTTPClient: hc})
}

// restConfig connects to apiURL with exactly the given credentials: nothing is
// read from files, no plugin runs; only addresses the egress rule for API
// servers allows are dialled.
func (r *Reconciler) restConfig(apiURL string, creds argocd.ClusterCredentials) *rest.Config {
	cfg := &rest.Config{
		Dial:        r.Egress.ForAPIServers().DialContext(&net.Dialer{Timeout: connectTimeout}),
		Host:        apiURL,
		BearerToken: creds.BearerToken,
		Timeout:     connectTimeout,
		UserAgent:   "gitops-service",
		QPS:         20,
		Burst:       40,
	}
	if creds.Insecure {
		cfg.Insecure = true
	} else {
		cfg.CAData = append([]byte(nil), creds.CAData...)
	}
	return cfg
}

// verify checks that the credentials work the way Argo CD will use them: read
// every namespace of the list, or list namespaces for a cluster-wide
// environment. It returns a user-facing message, or "" when they work.
func verify(ctx context.Context, c client.Client, namespaces []string) string {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var err error
	// Every namespace: Argo CD uses the credentials in each of them.
	failed := ""
	for _, ns := range namespaces {
		err = c.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("Unable to validate the credentials provided in the ManagedEnvironment Secret: namespace '%s' of .spec.namespaces does not exist on the cluster.", ns)
		}
		if err != nil {
			failed = ns
			break
		}
	}
	if len(namespaces) == 0 {
		err = c.List(ctx, &corev1.NamespaceList{}, client.Limit(1))
	}
	if err == nil {
		return ""
	}
	switch {
	case apierrors.IsForbidden(err) && failed != "":
		return fmt.Sprintf("Provided service account does not have permission to access resources in the cluster (namespace '%s' of .spec.namespaces). Verify that the service account has the correct Role and RoleBinding.", failed)
	case apierrors.IsForbidden(err):
		return "Provided service account does not have permission to access resources in the cluster. Verify that the service account has the correct Role and RoleBinding."
	case isUnknownAuthority(err):
		return "Certificate signed by unknown authority. Note that the '.spec.allowInsecureSkipTLSVerify' field can be used to ignore this error."
	}
	return "Unable to validate the credentials provided in the ManagedEnvironment Secret. Verify the API URL, and service account token are correct: " + describe(err)
}

func isUnknownAuthority(err error) bool {
	var status apierrors.APIStatus
	// The text of an answer is the server's to choose: only a transport error's counts.
	return !errors.As(err, &status) && netfailure.Classify(err) == netfailure.UntrustedCertificate
}

// describe says in a few fixed words what went wrong talking to a cluster.
// The URL is the tenant's choice and the sidecar connects from inside the
// platform's network, so nothing the server sent (a status message, the body
// client-go quotes from an error answer, up to 2 KiB) and no address is
// repeated: conditions and Events show an HTTP code or a kind of network
// failure (netfailure), never an answer. Errors of client-go never contain
// the bearer token.
func describe(err error) string {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsUnauthorized(err):
		return "the API server did not accept the token (401 Unauthorized)"
	case errors.As(err, &status):
		if code := int(status.Status().Code); code >= 100 && code <= 599 {
			// Go's words for the code, not the server's.
			if text := http.StatusText(code); text != "" {
				return fmt.Sprintf("the API server answered HTTP %d (%s)", code, strings.ToLower(text))
			}
			return fmt.Sprintf("the API server answered HTTP %d", code)
		}
		return "the API server's answer was not understood"
	}
	switch k := netfailure.Classify(err); k {
	case netfailure.Timeout:
		return fmt.Sprintf("timeout: no answer from the API server within %s", connectTimeout)
	case netfailure.InvalidCertificate:
		return "TLS handshake failed: the API server's certificate is not valid for it"
	default:
		return k.String()
	}
}

func ownedBy(obj client.Object, uid types.UID) bool {
	return ownership.IsOwnedBy(obj.GetLabels(), ownership.KindManagedEnvironment, string(uid))
}

// ownerLabels mark what we create on a target cluster (names alone could collide).
func ownerLabels(into map[string]string, namespace string, uid types.UID) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	into[ownership.LabelManagedBy] = ownership.ManagedByValue
	into[ownership.LabelOwnerKind] = ownership.KindManagedEnvironment
	into[ownership.LabelOwnerUID] = string(uid)
	into[ownership.LabelTenantNS] = namespace
	return into
}

// ensure creates obj or brings an existing one of ours in line with mutate;
// someone else's object of the same name is never touched: a
// *kernel.NotOursError.
func ensure(ctx context.Context, c client.Client, obj client.Object, uid types.UID, mutate func()) error {
	err := kernel.Ensure(ctx, c, c, obj, func(o client.Object) bool { return ownedBy(o, uid) }, mutate)
	if notOurs := (*kernel.NotOursError)(nil); errors.As(err, &notOurs) {
		notOurs.Why = "for this environment"
		return notOurs
	}
	if err != nil {
		return &remoteError{what: describeKey(obj), err: err}
	}
	return nil
}

// remoteError is a failed request on a target cluster; its text is user-facing.
type remoteError struct {
	what string
	err  error
}

func (e *remoteError) Error() string { return e.what + ": " + describe(e.err) }
func (e *remoteError) Unwrap() error { return e.err }

func describeKey(obj client.Object) string {
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// remove deletes obj if it exists and is ours.
func remove(ctx context.Context, c client.Client, obj client.Object, uid types.UID) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return &remoteError{what: "reading " + describeKey(obj), err: err}
	}
	if !ownedBy(obj, uid) {
		return nil
	}
	objUID := obj.GetUID()
	if err := c.Delete(ctx, obj, client.Preconditions{UID: &objUID}); err != nil && !apierrors.IsNotFound(err) {
		return &remoteError{what: "deleting " + describeKey(obj), err: err}
	}
	return nil
}

// installServiceAccount creates, with the user's credentials, a ServiceAccount
// for Argo CD on the target cluster, with all rights on the cluster or, when
// namespaces is set, only in those namespaces, and returns its token.
func installServiceAccount(ctx context.Context, c client.Client, tenantNS string, uid types.UID, namespaces []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	if err := c.Get(ctx, types.NamespacedName{Name: serviceAccountNamespace}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: serviceAccountNamespace}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", &remoteError{what: "creating Namespace " + serviceAccountNamespace, err: err}
		}
	} else if err != nil && !apierrors.IsForbidden(err) {
		// Forbidden: we may still be allowed to create in it; the next call says.
		return "", &remoteError{what: "reading Namespace " + serviceAccountNamespace, err: err}
	}

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: serviceAccountNamespace, Name: serviceAccountName(uid)}}
	var previous []string
	if err := ensure(ctx, c, sa, uid, func() {
		previous = splitList(sa.Annotations[annotationRoleNamespaces])
		sa.Labels = ownerLabels(sa.Labels, tenantNS, uid)
		// Record the union until the stale Roles are gone (below).
		sa.Annotations = setAnnotation(sa.Annotations, annotationRoleNamespaces, strings.Join(union(previous, namespaces), ","))
	}); err != nil {
		return "", err
	}
	if err := grant(ctx, c, tenantNS, uid, namespaces, sa); err != nil {
		return "", err
	}
	if err := removeRoles(ctx, c, uid, sets.List(sets.New(previous...).Difference(sets.New(namespaces...)))); err != nil {
		return "", err
	}
	if err := ensure(ctx, c, sa, uid, func() {
		sa.Annotations = setAnnotation(sa.Annotations, annotationRoleNamespaces, strings.Join(namespaces, ","))
	}); err != nil {
		return "", err
	}
	return serviceAccountToken(ctx, c, tenantNS, uid, sa)
}

// grant gives sa all rights on the cluster or, when namespaces is set, only
// in those namespaces (and then none on the cluster).
func grant(ctx context.Context, c client.Client, tenantNS string, uid types.UID, namespaces []string, sa *corev1.ServiceAccount) error {
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
	if len(namespaces) == 0 {
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleName(uid)}}
		if err := ensure(ctx, c, cr, uid, func() {
			cr.Labels = ownerLabels(cr.Labels, tenantNS, uid)
			cr.Rules = []rbacv1.PolicyRule{
				{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
				{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
			}
		}); err != nil {
			return err
		}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleBindingName(uid)}}
		if err := ensure(ctx, c, crb, uid, func() {
			crb.Labels = ownerLabels(crb.Labels, tenantNS, uid)
			crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}
			crb.Subjects = subject
		}); err != nil {
			return err
		}
	} else {
		for _, ns := range namespaces {
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: roleName(uid)}}
			if err := ensure(ctx, c, role, uid, func() {
				role.Labels = ownerLabels(role.Labels, tenantNS, uid)
				role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
			}); err != nil {
				return err
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: roleBindingName(uid)}}
			if err := ensure(ctx, c, rb, uid, func() {
				rb.Labels = ownerLabels(rb.Labels, tenantNS, uid)
				// roleRef is immutable; a binding of ours always has this one.
				rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}
				rb.Subjects = subject
			}); err != nil {
				return err
			}
		}
		// A cluster-wide environment that became namespaced loses its cluster rights.
		if err := removeClusterRole(ctx, c, uid); err != nil {
			return err
		}
	}
	return nil
}

// serviceAccountToken makes a long-lived token Secret for the ServiceAccount and
// waits (bounded) for the token controller to fill it.
func serviceAccountToken(ctx context.Context, c client.Client, tenantNS string, uid types.UID, sa *corev1.ServiceAccount) (string, error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: tokenSecretName(uid)}}
	create := func() error {
		return ensure(ctx, c, secret, uid, func() {
			secret.Labels = ownerLabels(secret.Labels, tenantNS, uid)
			secret.Annotations = setAnnotation(secret.Annotations, corev1.ServiceAccountNameKey, sa.Name)
			secret.Type = corev1.SecretTypeServiceAccountToken
		})
	}
	if err := create(); err != nil {
		return "", err
	}
	var token string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, tokenWait, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			if apierrors.IsNotFound(err) {
				// The token controller deletes a token Secret whose ServiceAccount
				// it has not seen yet: make it again.
				secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: tokenSecretName(uid)}}
				return false, create()
			}
			return false, &remoteError{what: "reading " + describeKey(secret), err: err}
		}
		token = string(secret.Data[corev1.ServiceAccountTokenKey])
		return token != "", nil
	})
	if err != nil {
		if wait.Interrupted(err) {
			return "", fmt.Errorf("the cluster did not issue a token for ServiceAccount %s/%s within %s (is its token controller running?)", sa.Namespace, sa.Name, tokenWait)
		}
		return "", err
	}
	return token, nil
}

// uninstallServiceAccount removes, with the user's credentials, everything
// installServiceAccount created. Roles are looked for in the namespaces the
// ServiceAccount records and in extraNamespaces.
func uninstallServiceAccount(ctx context.Context, c client.Client, uid types.UID, extraNamespaces []string) error {
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: serviceAccountNamespace, Name: serviceAccountName(uid)}}
	namespaces := extraNamespaces
	if err := c.Get(ctx, client.ObjectKeyFromObject(sa), sa); err == nil && ownedBy(sa, uid) {
		namespaces = union(splitList(sa.Annotations[annotationRoleNamespaces]), extraNamespaces)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return &remoteError{what: "reading " + describeKey(sa), err: err}
	}
	if err := removeRoles(ctx, c, uid, namespaces); err != nil {
		return err
	}
	if err := removeClusterRole(ctx, c, uid); err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: serviceAccountNamespace, Name: tokenSecretName(uid)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: serviceAccountNamespace, Name: serviceAccountName(uid)}},
	} {
		if err := remove(ctx, c, obj, uid); err != nil {
			return err
		}
	}
	return nil
}

func removeClusterRole(ctx context.Context, c client.Client, uid types.UID) error {
	if err := remove(ctx, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleBindingName(uid)}}, uid); err != nil {
		return err
	}
	return remove(ctx, c, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleName(uid)}}, uid)
}

func removeRoles(ctx context.Context, c client.Client, uid types.UID, namespaces []string) error {
	for _, ns := range namespaces {
		if err := remove(ctx, c, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: roleBindingName(uid)}}, uid); err != nil {
			return err
		}
		if err := remove(ctx, c, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: roleName(uid)}}, uid); err != nil {
			return err
		}
	}
	return nil
}

func setAnnotation(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	if v == "" {
		delete(m, k)
		return m
	}
	m[k] = v
	return m
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
