package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	cluster, err := ParsePrefixes(DefaultClusterRanges)
	require.NoError(t, err)
	p := &Policy{ClusterRanges: cluster}
	for _, tc := range []struct {
		ip, kind string
	}{
		{"127.0.0.1", "loopback"},
		{"127.1.2.3", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"::ffff:169.254.169.254", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "link-local"},
		{"239.1.1.1", "multicast"},
		{"10.96.0.1", "cluster-internal (service or pod range)"},
		{"10.244.3.7", "cluster-internal (service or pod range)"},
		{"::ffff:10.96.0.10", "cluster-internal (service or pod range)"},
		{"140.82.121.4", ""},
		{"10.0.0.5", ""},
		{"2606:50c0:8000::153", ""},
	} {
		err := p.Check("repo.example", netip.MustParseAddr(tc.ip))
		if tc.kind == "" {
			assert.NoError(t, err, tc.ip)
			continue
		}
		var refused *RefusedError
		require.True(t, errors.As(err, &refused), tc.ip)
		assert.Equal(t, tc.kind, refused.Kind, tc.ip)
		assert.NotContains(t, err.Error(), tc.ip, "the message names the host, not the address")
	}
	// A nil policy refuses the fixed ranges, not the cluster's (unknown).
	var none *Policy
	assert.Error(t, none.Check("h", netip.MustParseAddr("127.0.0.1")))
	assert.NoError(t, none.Check("h", netip.MustParseAddr("10.96.0.1")))
}

func TestCheckAllowed(t *testing.T) {
	ranges, err := ParsePrefixes([]string{"127.0.0.0/8", "10.96.0.1"})
	require.NoError(t, err)
	cluster, err := ParsePrefixes(DefaultClusterRanges)
	require.NoError(t, err)
	p := &Policy{ClusterRanges: cluster, AllowHosts: []string{"Git.Internal", "kubernetes.default.svc"}, AllowRanges: ranges}
	assert.NoError(t, p.Check("anything", netip.MustParseAddr("127.0.0.1")))
	assert.NoError(t, p.Check("anything", netip.MustParseAddr("10.96.0.1")), "a single address")
	assert.Error(t, p.Check("anything", netip.MustParseAddr("10.96.0.2")), "only that address of the range")
	assert.NoError(t, p.Check("git.internal.", netip.MustParseAddr("10.100.0.9")), "a named host, whatever it resolves to")
	assert.NoError(t, p.Check("kubernetes.default.svc", netip.MustParseAddr("10.96.0.2")))
	assert.Error(t, p.Check("git.internal.evil", netip.MustParseAddr("169.254.169.254")), "names are compared whole")
	assert.Error(t, p.Check("other", netip.MustParseAddr("::1")), "IPv6 loopback is not in 127.0.0.0/8")

	_, err = ParsePrefixes([]string{"10.0.0.0/33"})
	assert.Error(t, err)
	_, err = ParsePrefixes([]string{"not-an-ip"})
	assert.Error(t, err)
}

// The check runs on the address dialled, after resolution: "localhost" is
// refused as its address is, and an allowed range lets it through.
func TestDialContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())

	dial := (&Policy{}).DialContext(nil)
	for _, addr := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		_, err := dial(context.Background(), "tcp", addr)
		var refused *RefusedError
		require.True(t, errors.As(err, &refused), "%s: %v", addr, err)
		assert.Equal(t, "loopback", refused.Kind)
	}

	loopback, _ := ParsePrefixes([]string{"127.0.0.0/8"})
	c, err := (&Policy{AllowRanges: loopback}).DialContext(nil)(context.Background(), "tcp", "127.0.0.1:"+port)
	require.NoError(t, err)
	c.Close()
	c, err = (&Policy{AllowHosts: []string{"127.0.0.1"}}).DialContext(&net.Dialer{})(context.Background(), "tcp", "127.0.0.1:"+port)
	require.NoError(t, err)
	c.Close()
}
