package install

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitops-service/gitops-service/test/stack"
)

// netPod is a pod as NetworkPolicies see it: its namespace (and that
// namespace's labels), its labels and its container ports.
type netPod struct {
	name, namespace string
	nsLabels        map[string]string
	labels          map[string]string
	ports           map[string]int32 // named container ports
}

// netPolicies evaluates NetworkPolicy semantics (networking.k8s.io/v1) for
// pod-to-pod TCP connections: a pod selected by no policy of a direction is
// not isolated in it; an isolated pod admits what any rule of any policy
// selecting it admits (policies add up).
type netPolicies []networkingv1.NetworkPolicy

func selects(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		panic(err)
	}
	return s.Matches(labels.Set(l))
}

func hasType(p networkingv1.NetworkPolicy, t networkingv1.PolicyType) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		// The API's default: Ingress, and Egress when egress rules are given.
		return t == networkingv1.PolicyTypeIngress || len(p.Spec.Egress) > 0
	}
	for _, pt := range p.Spec.PolicyTypes {
		if pt == t {
			return true
		}
	}
	return false
}

// peerMatches: a peer of policy p (in p's namespace) matches pod.
func peerMatches(p networkingv1.NetworkPolicy, peer networkingv1.NetworkPolicyPeer, pod netPod) bool {
	if peer.IPBlock != nil {
		return false // pod IPs are not modelled: ipBlocks admit no pod here
	}
	if peer.NamespaceSelector == nil {
		if pod.namespace != p.Namespace {
			return false
		}
	} else if !selects(peer.NamespaceSelector, pod.nsLabels) {
		return false
	}
	return peer.PodSelector == nil || selects(peer.PodSelector, pod.labels)
}

func portMatches(ports []networkingv1.NetworkPolicyPort, dst netPod, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, pp := range ports {
		if pp.Protocol != nil && *pp.Protocol != corev1.ProtocolTCP {
			continue
		}
		if pp.Port == nil {
			return true
		}
		want := pp.Port.IntVal
		if pp.Port.Type != 0 {
			want = dst.ports[pp.Port.StrVal]
		}
		end := want
		if pp.EndPort != nil {
			end = *pp.EndPort
		}
		if port >= want && port <= end {
			return true
		}
	}
	return false
}

// allowed says whether src may open a TCP connection to dst's port.
func (ps netPolicies) allowed(src, dst netPod, port int32) bool {
	egressIsolated, egressOK := false, false
	ingressIsolated, ingressOK := false, false
	for _, p := range ps {
		if p.Namespace == src.namespace && hasType(p, networkingv1.PolicyTypeEgress) && selects(&p.Spec.PodSelector, src.labels) {
			egressIsolated = true
			for _, r := range p.Spec.Egress {
				if !portMatches(r.Ports, dst, port) {
					continue
				}
				if len(r.To) == 0 {
					egressOK = true
				}
				for _, peer := range r.To {
					if peerMatches(p, peer, dst) {
						egressOK = true
					}
				}
			}
		}
		if p.Namespace == dst.namespace && hasType(p, networkingv1.PolicyTypeIngress) && selects(&p.Spec.PodSelector, dst.labels) {
			ingressIsolated = true
			for _, r := range p.Spec.Ingress {
				if !portMatches(r.Ports, dst, port) {
					continue
				}
				if len(r.From) == 0 {
					ingressOK = true
				}
				for _, peer := range r.From {
					if peerMatches(p, peer, src) {
						ingressOK = true
					}
				}
			}
		}
	}
	return (!egressIsolated || egressOK) && (!ingressIsolated || ingressOK)
}

// objects decodes multi-document YAML.
func objects(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			require.NoError(t, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// render builds a kustomization with kustomize's Go API (no kubectl needed).
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err)
	b, err := resources.AsYaml()
	require.NoError(t, err)
	return objects(t, b)
}

// collect reads NetworkPolicies (into namespace ns when they name none) and
// the pods of Deployments and StatefulSets.
func collect(t *testing.T, ns string, objs []*unstructured.Unstructured, nsLabels map[string]string) (netPolicies, []netPod) {
	t.Helper()
	var ps netPolicies
	var pods []netPod
	for _, u := range objs {
		namespace := u.GetNamespace()
		if namespace == "" {
			namespace = ns
		}
		switch u.GetKind() {
		case "NetworkPolicy":
			var p networkingv1.NetworkPolicy
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p))
			p.Namespace = namespace
			ps = append(ps, p)
		case "Deployment", "StatefulSet":
			var d appsv1.Deployment // the pod template is at the same path in both
			tmpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"spec": map[string]any{"template": tmpl}}, &d))
			pod := netPod{name: u.GetName(), namespace: namespace, nsLabels: nsLabels, labels: d.Spec.Template.Labels, ports: map[string]int32{}}
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, p := range c.Ports {
					if p.Name != "" {
						pod.ports[p.Name] = p.ContainerPort
					}
				}
			}
			pods = append(pods, pod)
		}
	}
	return ps, pods
}

func byName(t *testing.T, pods []netPod, name string) netPod {
	t.Helper()
	for _, p := range pods {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no pod %s", name)
	return netPod{}
}

// The sidecar reaches Argo CD's Redis and repo-server, argocd-server and the
// applicationset controller reach it, metrics only from the monitoring
// namespace; Argo CD's own connections stay as they were: on an Argo CD with
// its own policies (install.yaml, with components/argocd-network-policies)
// and on one without (the install alone); and the egress example lets the
// sidecar reach what it needs and no other pod.
func TestNetworkPolicies(t *testing.T) {
	argoMod, err := stack.ArgoCDModuleDir()
	if err != nil {
		t.Skip("needs Argo CD's module (its install.yaml):", err)
	}
	installYAML, err := os.ReadFile(filepath.Join(argoMod, "manifests", "install.yaml"))
	require.NoError(t, err)
	const ns = "argocd"
	argoNS := map[string]string{"kubernetes.io/metadata.name": ns}
	argoPolicies, argoPods := collect(t, ns, objects(t, installYAML), argoNS)
	require.NotEmpty(t, argoPolicies, "install.yaml ships NetworkPolicies")

	install := filepath.Join(repoRoot(t), "manifests", "install")
	withComponent := filepath.Join("testdata", "with-argocd-network-policies")
	ours, ourPods := collect(t, ns, render(t, install), argoNS)
	oursWith, _ := collect(t, ns, render(t, withComponent), argoNS)
	sidecar := byName(t, ourPods, "gitops-service")

	pod := func(namespace string, l map[string]string) netPod {
		return netPod{name: "x", namespace: namespace, nsLabels: map[string]string{"kubernetes.io/metadata.name": namespace}, labels: l}
	}
	prometheusInMonitoring := pod("monitoring", map[string]string{"app.kubernetes.io/name": "prometheus"})
	anyPodInMonitoring := pod("monitoring", map[string]string{"app": "grafana-agent"})
	prometheusOfATenant := pod("tenant-a", map[string]string{"app.kubernetes.io/name": "prometheus"})
	tenant := pod("tenant-a", map[string]string{"app": "web"})
	redis, repo := byName(t, argoPods, "argocd-redis"), byName(t, argoPods, "argocd-repo-server")
	server, appset := byName(t, argoPods, "argocd-server"), byName(t, argoPods, "argocd-applicationset-controller")
	controller := byName(t, argoPods, "argocd-application-controller")

	type conn struct {
		what     string
		src, dst netPod
		port     int32
		want     bool
	}
	toSidecar := []conn{
		{"argocd-server to the ui-proxy", server, sidecar, 8091, true},
		{"the applicationset controller to the plugin generator", appset, sidecar, 8090, true},
		{"Prometheus in the monitoring namespace to metrics", prometheusInMonitoring, sidecar, 8080, true},
		{"another pod of the monitoring namespace to metrics", anyPodInMonitoring, sidecar, 8080, true},
		{"a tenant's pod labelled prometheus to metrics", prometheusOfATenant, sidecar, 8080, false},
		{"a tenant's pod to the ui-proxy", tenant, sidecar, 8091, false},
		{"a tenant's pod to the generator", tenant, sidecar, 8090, false},
		{"argocd-server to the generator", server, sidecar, 8090, false},
		// The API server is no pod: the PromotionPolicy webhook's port is
		// open to any source (it only answers admission reviews).
		{"any pod to the PromotionPolicy webhook", tenant, sidecar, 9443, true},
	}
	argoOwn := []conn{
		{"argocd-server to Redis", server, redis, 6379, true},
		{"the application controller to Redis", controller, redis, 6379, true},
		{"the application controller to the repo-server", controller, repo, 8081, true},
		{"argocd-server to the repo-server", server, repo, 8081, true},
	}
	cases := map[string]struct {
		policies netPolicies
		conns    []conn
	}{
		"Argo CD with its own policies": {append(append(netPolicies{}, argoPolicies...), oursWith...), append(append([]conn{
			{"the sidecar to Redis", sidecar, redis, 6379, true},
			{"the sidecar to the repo-server", sidecar, repo, 8081, true},
			{"a tenant's pod to Redis (Argo CD's policy)", tenant, redis, 6379, false},
			{"a tenant's pod to the repo-server (Argo CD's policy)", tenant, repo, 8081, false},
		}, toSidecar...), argoOwn...)},
		"Argo CD without policies": {ours, append(append([]conn{
			{"the sidecar to Redis", sidecar, redis, 6379, true},
			{"the sidecar to the repo-server", sidecar, repo, 8081, true},
			// Not isolated by us: what could reach them before still can.
			{"a tenant's pod to Redis", tenant, redis, 6379, true},
			{"a tenant's pod to the repo-server", tenant, repo, 8081, true},
		}, toSidecar...), argoOwn...)},
		// Why components/argocd-network-policies is opt-in: on an Argo CD
		// without policies it would isolate Redis and the repo-server.
		"the component on Argo CD without policies": {oursWith, []conn{
			{"argocd-server to Redis", server, redis, 6379, false},
			{"the application controller to the repo-server", controller, repo, 8081, false},
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			for _, cn := range c.conns {
				assert.Equal(t, cn.want, c.policies.allowed(cn.src, cn.dst, cn.port), "%s (port %d)", cn.what, cn.port)
			}
		})
	}

	// The egress example (manifests/examples): what the sidecar needs, no other pod.
	example, err := os.ReadFile(filepath.Join(repoRoot(t), "manifests", "examples", "sidecar-egress-networkpolicy.yaml"))
	require.NoError(t, err)
	egress, _ := collect(t, ns, objects(t, example), argoNS)
	require.Len(t, egress, 1)
	all := append(append(append(netPolicies{}, argoPolicies...), oursWith...), egress...)
	dns := pod("kube-system", map[string]string{"k8s-app": "kube-dns"})
	for _, cn := range []conn{
		{"the sidecar to Redis", sidecar, redis, 6379, true},
		{"the sidecar to the repo-server", sidecar, repo, 8081, true},
		{"the sidecar to DNS", sidecar, dns, 53, true},
		{"the sidecar to argocd-server", sidecar, server, 8080, false},
		{"the sidecar to a tenant's pod", sidecar, tenant, 443, false},
		{"the sidecar to the repo-server's metrics", sidecar, repo, 8084, false},
	} {
		assert.Equal(t, cn.want, all.allowed(cn.src, cn.dst, cn.port), "egress example: %s (port %d)", cn.what, cn.port)
	}
}

// The evaluator itself: default-deny, named ports, namespace and pod
// selectors together, and policies adding up.
func TestNetworkPolicyEvaluator(t *testing.T) {
	tcp := corev1.ProtocolTCP
	named := func(s string) *networkingv1.NetworkPolicyPort {
		p := networkingv1.NetworkPolicyPort{Protocol: &tcp}
		v := intstr.FromString(s)
		p.Port = &v
		return &p
	}
	a := netPod{namespace: "n1", nsLabels: map[string]string{"team": "a"}, labels: map[string]string{"app": "a"}}
	b := netPod{namespace: "n2", nsLabels: map[string]string{"team": "b"}, labels: map[string]string{"app": "b"}, ports: map[string]int32{"web": 8080}}
	none := netPolicies{}
	assert.True(t, none.allowed(a, b, 80), "no policy: allowed")
	deny := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "n2"}, Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	assert.False(t, netPolicies{deny}.allowed(a, b, 80), "selected with no rules: denied")
	allowA := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "n2"}, Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}},
			Ports: []networkingv1.NetworkPolicyPort{*named("web")},
		}},
	}}
	assert.True(t, netPolicies{deny, allowA}.allowed(a, b, 8080), "policies add up; named port")
	assert.False(t, netPolicies{deny, allowA}.allowed(a, b, 8081), "other port")
	other := a
	other.labels = map[string]string{"app": "x"}
	assert.False(t, netPolicies{allowA}.allowed(other, b, 8080), "namespace and pod selector both must match")
	podOnly := allowA
	podOnly.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}}}
	assert.False(t, netPolicies{podOnly}.allowed(a, b, 8080), "a podSelector alone is the policy's own namespace")
}
