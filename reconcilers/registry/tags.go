package registry

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
)

// Tags lists the tags of repo (every page) with opts (from Options).
func Tags(repo name.Repository, opts []remote.Option) ([]string, error) {
	return remote.List(repo, opts...)
}

// Digest is the digest ref names now ("sha256:..."), from the manifest's
// HEAD: no layer or manifest body is fetched.
func Digest(ref name.Reference, opts []remote.Option) (string, error) {
	d, err := remote.Head(ref, opts...)
	if err != nil {
		return "", err
	}
	return d.Digest.String(), nil
}

// Describe says what went wrong in a few fixed words: the registry's own
// text (its error messages) and the address dialled are never repeated, as
// the URL is a tenant's and the request goes out from inside the platform.
// refused says the platform's egress rule refused the address.
func Describe(err error) (msg string, refused bool) {
	var notAllowed *egress.RefusedError
	if errors.As(err, &notAllowed) {
		return notAllowed.Error(), true
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("the registry refused the credentials (HTTP %d)", terr.StatusCode), false
		case http.StatusNotFound:
			return "the registry does not know this repository or tag (HTTP 404)", false
		default:
			return fmt.Sprintf("the registry answered HTTP %d", terr.StatusCode), false
		}
	}
	return netfailure.Classify(err).String(), false
}
