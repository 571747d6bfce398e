// Package egress decides which addresses the sidecar may connect to for a
// tenant (a repository it probes, a ManagedEnvironment's API server): not
// link-local (cloud metadata), loopback (the sidecar's own pod), unspecified,
// multicast, nor the cluster's service and pod ranges, unless the platform
// admin allows the host or the range. The check runs on the address actually
// dialled, after name resolution, so a name that resolves differently the
// second time (DNS rebinding) cannot get around it.
package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Policy is the platform admin's egress rule for tenant-chosen hosts. The zero
// Policy (and a nil *Policy) refuses the fixed ranges and allows the rest.
type Policy struct {
	// ClusterRanges are the cluster's service and pod CIDRs, refused too.
	ClusterRanges []netip.Prefix
	// AllowHosts are host names (or literal addresses) the admin allows
	// whatever they resolve to, compared without case.
	AllowHosts []string
	// AllowRanges are address ranges the admin allows.
	AllowRanges []netip.Prefix
}

// DefaultClusterRanges are kubeadm's and most distributions' defaults (the
// service range 10.96.0.0/12, pod ranges 10.244.0.0/16 of flannel/kind and
// 10.42.0.0/16 with 10.43.0.0/16 of k3s); --probe-cluster-cidrs replaces them.
var DefaultClusterRanges = []string{"10.96.0.0/12", "10.244.0.0/16", "10.42.0.0/16", "10.43.0.0/16"}

// RefusedError says a tenant-chosen host resolved to an address the policy
// refuses. Its message names the host (the tenant's own string) and the kind
// of address, never the address.
type RefusedError struct {
	Host, Kind string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s resolves to a %s address, which the platform does not let the GitOps Service connect to for tenants (an admin may allow it: --probe-allow-hosts, --probe-allow-cidrs)", e.Host, e.Kind)
}

// Check returns a *RefusedError when host, resolved to ip, may not be dialled.
func (p *Policy) Check(host string, ip netip.Addr) error {
	ip = ip.Unmap()
	kind := fixedKind(ip)
	if kind == "" && p != nil {
		for _, r := range p.ClusterRanges {
			if r.Contains(ip) {
				kind = "cluster-internal (service or pod range)"
				break
			}
		}
	}
	if kind == "" || p.allowed(host, ip) {
		return nil
	}
	return &RefusedError{Host: host, Kind: kind}
}

func (p *Policy) allowed(host string, ip netip.Addr) bool {
	if p == nil {
		return false
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	for _, h := range p.AllowHosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	for _, r := range p.AllowRanges {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

// fixedKind names the kind of address refused whatever the cluster, or "".
func fixedKind(ip netip.Addr) string {
	switch {
	case !ip.IsValid() || ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	return ""
}

// ForAPIServers is the policy for a ManagedEnvironment's API server: the
// cluster's service and pod ranges are allowed (an API server legitimately
// lives there: kubernetes.default.svc, hosted control planes, and Argo CD's
// application controller connects to the same address anyway); loopback,
// link-local and the rest stay refused unless allowed.
func (p *Policy) ForAPIServers() *Policy {
	if p == nil {
		return nil
	}
	return &Policy{AllowHosts: p.AllowHosts, AllowRanges: p.AllowRanges}
}

// DialContext dials as d does (a zero Dialer: net's defaults), checking every
// address it connects to, after resolution, against the policy.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{Timeout: 30 * time.Second}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		checked := *d
		inner := d.Control
		checked.Control = func(network, address string, c syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dialling %s: %w", host, err)
			}
			if err := p.Check(host, ap.Addr()); err != nil {
				return err
			}
			if inner != nil {
				return inner(network, address, c)
			}
			return nil
		}
		return checked.DialContext(ctx, network, addr)
	}
}

// ParsePrefixes reads CIDRs (or single addresses) of a flag.
func ParsePrefixes(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		if !strings.Contains(v, "/") {
			a, err := netip.ParseAddr(v)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR", v)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pfx, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR", v)
		}
		out = append(out, pfx.Masked())
	}
	return out, nil
}
