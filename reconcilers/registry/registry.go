// Package registry is how the sidecar reaches a tenant's OCI registry: with
// the credentials of a docker-config Secret in the tenant's own namespace
// (never another's) and only to addresses the egress policy allows (the
// check runs on the address dialled, so a registry URL cannot probe the
// cluster or the cloud's metadata service). Subscriptions list tags and
// resolve digests through it; the signature gate fetches signatures and
// attestations through it.
package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/reconcilers/egress"
)

// Timeout bounds one request to a registry.
const Timeout = 30 * time.Second

// Access says how to reach registries for one tenant namespace.
type Access struct {
	// Namespace is the tenant's; SecretName, when set, names a Secret in it
	// of type kubernetes.io/dockerconfigjson (or kubernetes.io/dockercfg).
	Namespace  string
	SecretName string
	// Egress refuses addresses a tenant may not make the sidecar reach.
	Egress *egress.Policy
	// Transport, when set, replaces the egress-checked one (tests that serve
	// a registry on loopback pass the policy that allows it instead).
	Transport http.RoundTripper
}

// Options are the go-containerregistry remote options for a.Access: the
// tenant's credentials (anonymous when it names no Secret or the Secret has
// none for the registry) over an egress-checked transport. The Secret is
// read from a.Namespace only: the reader cannot be pointed elsewhere.
func Options(ctx context.Context, c client.Reader, a Access) ([]remote.Option, error) {
	kc := authn.Keychain(anonymous{})
	if a.SecretName != "" {
		var s corev1.Secret
		if err := c.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.SecretName}, &s); err != nil {
			return nil, fmt.Errorf("registry credentials Secret %q in namespace %q: %w", a.SecretName, a.Namespace, err)
		}
		k, err := keychainOf(&s)
		if err != nil {
			return nil, fmt.Errorf("registry credentials Secret %q: %w", a.SecretName, err)
		}
		kc = k
	}
	tr := a.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:               nil, // a proxy would dial for us, past the egress check
			DialContext:         a.Egress.DialContext(&net.Dialer{Timeout: Timeout}),
			TLSHandshakeTimeout: Timeout,
			MaxIdleConnsPerHost: 4,
			// A transport is made per use: its idle connections must not
			// outlive it for as long as the registry keeps them open.
			IdleConnTimeout: Timeout,
		}
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(tr)}, nil
}

// dockerConfig is the shape of .dockerconfigjson (and, under "auths", of
// the older .dockercfg without it).
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// keychain answers credentials per registry host from a docker config.
type keychain map[string]authn.AuthConfig

func keychainOf(s *corev1.Secret) (keychain, error) {
	var cfg dockerConfig
	switch {
	case len(s.Data[corev1.DockerConfigJsonKey]) > 0:
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
			return nil, fmt.Errorf("key %s is not a docker config", corev1.DockerConfigJsonKey)
		}
	case len(s.Data[corev1.DockerConfigKey]) > 0:
		if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &cfg.Auths); err != nil {
			return nil, fmt.Errorf("key %s is not a docker config", corev1.DockerConfigKey)
		}
	default:
		return nil, fmt.Errorf("it has neither %s nor %s", corev1.DockerConfigJsonKey, corev1.DockerConfigKey)
	}
	k := keychain{}
	for host, a := range cfg.Auths {
		ac := authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if a.Auth != "" && ac.Username == "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			user, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok {
				return nil, fmt.Errorf("the auth of registry %q is not base64 of user:password", host)
			}
			ac.Username, ac.Password = user, pass
		}
		k[hostOf(host)] = ac
	}
	return k, nil
}

// hostOf reduces a docker config key (a host, or a URL such as
// https://index.docker.io/v1/) to the registry host it names.
func hostOf(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	if host == "index.docker.io" {
		return name.DefaultRegistry
	}
	return strings.ToLower(host)
}

func (k keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if ac, ok := k[strings.ToLower(r.RegistryStr())]; ok {
		return authn.FromConfig(ac), nil
	}
	return authn.Anonymous, nil
}

type anonymous struct{}

func (anonymous) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }
