package stack

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const helpSample = `Usage of gitops-service:
  -allow-file-repositories
    	Let tenants use file:// repository URLs.
  -generator-token-file string
    	File with the bearer token Argo CD's applicationset-controller presents
    	(mount the Secret). (default "/etc/gitops-service/generator/token")
  -kube-api-qps float
    	Client-side rate limit. (default 1000)
  -leader-elect
    	Elect a leader. (default true)
  -ui-proxy-token-file string
    	File with the secret header value. (default "/etc/gitops-service/ui-proxy/token")
`

func TestParseFlagUsage(t *testing.T) {
	assert.Equal(t, []Flag{
		{Name: "allow-file-repositories", Usage: "Let tenants use file:// repository URLs."},
		{Name: "generator-token-file", Type: "string", Usage: "File with the bearer token Argo CD's applicationset-controller presents (mount the Secret).", Default: "/etc/gitops-service/generator/token"},
		{Name: "kube-api-qps", Type: "float", Usage: "Client-side rate limit.", Default: "1000"},
		{Name: "leader-elect", Usage: "Elect a leader.", Default: "true"},
		{Name: "ui-proxy-token-file", Type: "string", Usage: "File with the secret header value.", Default: "/etc/gitops-service/ui-proxy/token"},
	}, ParseFlagUsage(helpSample))
}

func TestRerootFlags(t *testing.T) {
	flags := ParseFlagUsage(helpSample)
	for name, c := range map[string]struct {
		args   []string
		mounts map[string]string
		want   []string
	}{
		"defaults under the mounts": {
			mounts: map[string]string{"/etc/gitops-service/generator": "/tmp/x/gen", "/etc/gitops-service/ui-proxy": "/tmp/x/ui"},
			want:   []string{"--generator-token-file=/tmp/x/gen/token", "--ui-proxy-token-file=/tmp/x/ui/token"},
		},
		// The Deployment mounts the Secret where the binary does not look: the
		// default stays, and the sidecar finds no token, as in a cluster.
		"a mount elsewhere": {
			mounts: map[string]string{"/var/run/generator": "/tmp/x/gen"},
		},
		"an arg points into a mount": {
			args:   []string{"--generator-token-file=/var/run/generator/token", "--leader-elect"},
			mounts: map[string]string{"/var/run/generator": "/tmp/x/gen"},
			want:   []string{"--generator-token-file=/tmp/x/gen/token"},
		},
		"a sibling of the mount path is not under it": {
			mounts: map[string]string{"/etc/gitops-service/gen": "/tmp/x/gen"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			assert.ElementsMatch(t, c.want, rerootFlags(flags, c.args, c.mounts))
		})
	}
}
