package stack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StackPodName is the Pod name an installed stack sidecar is told it runs
// in (POD_NAME): its Events about itself name it.
const StackPodName = "gitops-service-stack"

// NamespaceProvisionerComponent grants the namespace provisioner its rights
// on the local cluster; the stack's installed sidecar gets it, as a platform
// that offers namespace DeploymentTargetClasses installs it.
const NamespaceProvisionerComponent = "components/namespace-provisioner"

// RenderInstall renders manifests/install with the given components (paths
// under manifests/install) as a platform admin's kustomization would list
// them, written into dir.
func RenderInstall(ctx context.Context, dir string, components ...string) (*Rendered, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	install := filepath.Join(root, "manifests", "install")
	if len(components) == 0 {
		return RenderKustomization(ctx, install)
	}
	overlay := filepath.Join(dir, "install-overlay")
	if err := os.MkdirAll(overlay, 0o700); err != nil {
		return nil, err
	}
	// kustomize takes only relative paths.
	rel, err := filepath.Rel(overlay, install)
	if err != nil {
		return nil, err
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + filepath.ToSlash(rel) + "\ncomponents:\n"
	for _, c := range components {
		k += "- " + filepath.ToSlash(filepath.Join(rel, c)) + "\n"
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		return nil, err
	}
	return RenderKustomization(ctx, overlay)
}

// Rendered is what `kubectl kustomize` made of a kustomization directory.
type Rendered struct {
	Objects []*unstructured.Unstructured
}

// RenderKustomization runs the stack's kubectl kustomize on dir.
func RenderKustomization(ctx context.Context, dir string) (*Rendered, error) {
	bins, err := Binaries()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bins.Kubectl, "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w\n%s", dir, err, stderr.String())
	}
	r := &Rendered{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return r, nil
			}
			return nil, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
		}
		if len(u.Object) > 0 {
			r.Objects = append(r.Objects, u)
		}
	}
}

// Find returns the rendered objects of kind.
func (r *Rendered) Find(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range r.Objects {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// Deployment is the rendered Deployment named name.
func (r *Rendered) Deployment(name string) (*appsv1.Deployment, error) {
	for _, u := range r.Find("Deployment") {
		if u.GetName() == name {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	return nil, fmt.Errorf("no Deployment %s rendered", name)
}

// rbacKinds are what gives the sidecar its identity and rights.
var rbacKinds = map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

// ApplyRBAC server-side applies the rendered ServiceAccounts, Roles,
// ClusterRoles and their bindings exactly as rendered.
func (r *Rendered) ApplyRBAC(ctx context.Context, k *Kube) error {
	c, err := client.New(k.Config, client.Options{})
	if err != nil {
		return err
	}
	for _, u := range r.Objects {
		if !rbacKinds[u.GetKind()] {
			continue
		}
		obj := u.DeepCopy()
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("gitops-service-install"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// ApplyInstalledSettings applies the ConfigMap manifests/install renders for
// Argo CD (the plugin generator's) into a's namespace as `kubectl apply
// --server-side` does, with only the in-cluster Service URLs replaced by the
// stack's (urls: rendered URL -> the stack's; every one must occur, so that a
// changed URL in the manifests is noticed here). Argo CD's own ConfigMaps
// are not rendered (the install fails if they are): the installed sidecar
// side writes our keys into them itself; this waits until it has
// (extension.config.gitops-service naming side's ui-proxy).
func (a *ArgoCD) ApplyInstalledSettings(ctx context.Context, side *Sidecar, urls map[string]string) error {
	c, err := client.New(a.Kube.Config, client.Options{})
	if err != nil {
		return err
	}
	r := side.Rendered
	found := map[string]bool{}
	for _, u := range r.Find("ConfigMap") {
		switch u.GetName() {
		case "argocd-cm", "argocd-rbac-cm", "argocd-cmd-params-cm":
			return fmt.Errorf("manifests/install renders Argo CD's ConfigMap %s: its partial apply takes over Argo CD's keys and labels (issue 32); the sidecar writes ours", u.GetName())
		case "gitops-service-generator":
		default:
			continue
		}
		obj := u.DeepCopy()
		obj.SetNamespace(a.Namespace)
		data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
		for k, v := range data {
			for from, to := range urls {
				if strings.Contains(v, from) {
					found[from] = true
					v = strings.ReplaceAll(v, from, to)
				}
			}
			data[k] = v
		}
		if err := unstructured.SetNestedStringMap(obj.Object, data, "data"); err != nil {
			return err
		}
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("gitops-service-install"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying ConfigMap %s: %w", u.GetName(), err)
		}
	}
	for from := range urls {
		if !found[from] {
			return fmt.Errorf("no rendered Argo CD setting names %s", from)
		}
	}
	return WaitForSidecarSettings(ctx, a.Kube, a.Namespace, "argocd-cm", side.UIProxyURL, 30*time.Second)
}

// WaitForSidecarSettings waits until the sidecar has written
// extension.config.gitops-service naming uiProxyURL into ConfigMap cm.
func WaitForSidecarSettings(ctx context.Context, k *Kube, namespace, cm, uiProxyURL string, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		got, err := cs.CoreV1().ConfigMaps(namespace).Get(ctx, cm, metav1.GetOptions{})
		if err == nil && strings.Contains(got.Data["extension.config.gitops-service"], "url: "+uiProxyURL+"\n") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sidecar did not write extension.config.gitops-service (url %s) into %s/%s within %s (last error: %v)", uiProxyURL, namespace, cm, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// installed is the sidecar as manifests/install runs it: its ServiceAccount's
// token, its container's args and environment, its Secrets as files.
type installed struct {
	rendered   *Rendered
	kubeconfig string
	args       []string
	env        []string
	// secrets are the Secrets the Deployment mounts, by name.
	secrets map[string]*corev1.Secret
	// mounts maps each Secret volume's mountPath to the directory holding its files.
	mounts map[string]string
}

// installSidecar renders manifests/install (with the namespace-provisioner
// component: the e2e tests provision namespaces), applies its RBAC and the Secrets
// the README has the platform admin create, and prepares what the rendered
// Deployment's container would get in a pod.
func installSidecar(ctx context.Context, k *Kube, argoNamespace, dir string) (*installed, error) {
	r, err := RenderInstall(ctx, dir, NamespaceProvisionerComponent)
	if err != nil {
		return nil, err
	}
	d, err := r.Deployment("gitops-service")
	if err != nil {
		return nil, err
	}
	if d.Namespace != argoNamespace {
		return nil, fmt.Errorf("manifests/install renders the Deployment into %q, the stack's Argo CD runs in %q", d.Namespace, argoNamespace)
	}
	if err := r.ApplyRBAC(ctx, k); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return nil, err
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return nil, fmt.Errorf("the Deployment has %d containers, the stack runs one", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	if len(ctr.Command) > 0 {
		return nil, fmt.Errorf("the Deployment overrides the image's entrypoint with %q", ctr.Command)
	}
	in := &installed{rendered: r, args: append([]string(nil), ctr.Args...), secrets: map[string]*corev1.Secret{}, mounts: map[string]string{}}

	// The token of the Deployment's ServiceAccount, as the kubelet would mount it.
	sa := pod.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := cs.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token of ServiceAccount %s/%s: %w", d.Namespace, sa, err)
	}
	in.kubeconfig = filepath.Join(dir, "serviceaccount.kubeconfig")
	kc, err := k.KubeconfigFor(tr.Status.Token)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(in.kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}

	// The Secrets the pod mounts: created once as the README says, then
	// written out as the kubelet would project them.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range ctr.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok || v.Secret == nil {
			continue
		}
		s, err := ensureTokenSecret(ctx, cs, d.Namespace, v.Secret.SecretName)
		if err != nil {
			return nil, err
		}
		in.secrets[s.Name] = s
		local := filepath.Join(dir, "mounts", m.Name)
		if err := os.MkdirAll(local, 0o700); err != nil {
			return nil, err
		}
		for key, val := range s.Data {
			if err := os.WriteFile(filepath.Join(local, key), val, 0o600); err != nil {
				return nil, err
			}
		}
		in.mounts[m.MountPath] = local
	}

	for _, e := range ctr.Env {
		val, set, err := envValue(ctx, cs, d, ctr, e)
		if err != nil {
			return nil, err
		}
		if set {
			in.env = append(in.env, e.Name+"="+val)
		}
	}
	return in, nil
}

// ensureTokenSecret is the README's "create it once": a Secret with a random
// "token", labelled for Argo CD (which reads the generator's through the plugin
// ConfigMap's "$<secret>:token"); an existing one is kept.
func ensureTokenSecret(ctx context.Context, cs kubernetes.Interface, ns, name string) (*corev1.Secret, error) {
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return s, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{argoPartOfLabel: "argocd"}},
		Data:       map[string][]byte{"token": []byte(randomHex(32))},
	}
	return cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
}

// envValue resolves an env entry as the kubelet does (the sources the
// Deployment uses); set is false for a missing optional source.
func envValue(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment, ctr corev1.Container, e corev1.EnvVar) (val string, set bool, err error) {
	if e.ValueFrom == nil {
		return e.Value, true, nil
	}
	switch {
	case e.ValueFrom.FieldRef != nil:
		switch e.ValueFrom.FieldRef.FieldPath {
		case "metadata.namespace":
			return d.Namespace, true, nil
		case "metadata.name":
			// No Pod runs here: the sidecar's Events about itself go to a
			// Pod of this name, which the tests may look for.
			return StackPodName, true, nil
		case "metadata.uid":
			return "", false, nil
		}
	case e.ValueFrom.ResourceFieldRef != nil:
		// As the kubelet: the container's limit in units of the divisor (1 = bytes).
		ref := e.ValueFrom.ResourceFieldRef
		name, ok := strings.CutPrefix(ref.Resource, "limits.")
		q, found := ctr.Resources.Limits[corev1.ResourceName(name)]
		if !ok || !found {
			return "", false, fmt.Errorf("env %s: %s is not a limit of the container", e.Name, ref.Resource)
		}
		divisor := int64(1)
		if !ref.Divisor.IsZero() {
			divisor = ref.Divisor.Value()
		}
		return fmt.Sprint(q.Value() / divisor), true, nil
	case e.ValueFrom.SecretKeyRef != nil:
		ref := e.ValueFrom.SecretKeyRef
		s, err := cs.CoreV1().Secrets(d.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := s.Data[ref.Key]; ok {
				return string(v), true, nil
			}
		} else if !apierrors.IsNotFound(err) {
			return "", false, err
		}
		if ptr.Deref(ref.Optional, false) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("env %s: Secret %s key %s is missing", e.Name, ref.Name, ref.Key)
	case e.ValueFrom.ConfigMapKeyRef != nil:
		ref := e.ValueFrom.ConfigMapKeyRef
		cm, err := cs.CoreV1().ConfigMaps(d.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := cm.Data[ref.Key]; ok {
				return v, true, nil
			}
		} else if !apierrors.IsNotFound(err) {
			return "", false, err
		}
		if ptr.Deref(ref.Optional, false) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("env %s: ConfigMap %s key %s is missing", e.Name, ref.Name, ref.Key)
	}
	return "", false, fmt.Errorf("env %s: a source the stack does not resolve", e.Name)
}

// Flag is one flag of the sidecar's --help.
type Flag struct {
	Name, Type, Usage, Default string
}

var (
	flagLine    = regexp.MustCompile(`^  -(\S+)(?: (\S+))?$`)
	defaultPart = regexp.MustCompile(` \(default (.*)\)$`)
)

// SidecarFlags parses the sidecar binary's --help (Go's flag package format).
func SidecarFlags(bin string) ([]Flag, error) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --help: %w\n%s", bin, err, out)
	}
	return ParseFlagUsage(string(out)), nil
}

// ParseFlagUsage reads the flag list Go's flag.PrintDefaults writes.
func ParseFlagUsage(help string) []Flag {
	var flags []Flag
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flags = append(flags, Flag{Name: m[1], Type: m[2]})
			continue
		}
		if len(flags) == 0 || !strings.HasPrefix(line, "    \t") {
			continue
		}
		f := &flags[len(flags)-1]
		text := strings.TrimPrefix(line, "    \t")
		if m := defaultPart.FindStringSubmatchIndex(text); m != nil {
			f.Default = strings.Trim(text[m[2]:m[3]], `"`)
			text = text[:m[0]]
		}
		if f.Usage != "" {
			f.Usage += " "
		}
		f.Usage += text
	}
	return flags
}

// rerootFlags returns, for every flag whose value (from args, else its
// default) is a path under one of mounts' mountPaths, that flag with the path
// moved to the local directory holding the mount's files. A default that lies
// under no mount stays as it is, so a Deployment that mounts a Secret where
// the binary does not look fails the tests as it would fail in a cluster.
func rerootFlags(flags []Flag, args []string, mounts map[string]string) []string {
	set := map[string]string{}
	for _, a := range args {
		name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if ok {
			set[name] = val
		}
	}
	var out []string
	for _, f := range flags {
		val, ok := set[f.Name]
		if !ok {
			val = f.Default
		}
		for mountPath, local := range mounts {
			if rel, err := filepath.Rel(mountPath, val); err == nil && filepath.IsAbs(val) && !strings.HasPrefix(rel, "..") {
				out = append(out, "--"+f.Name+"="+filepath.Join(local, rel))
			}
		}
	}
	return out
}
