package subscription

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/gitprobe"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
	"github.com/gitops-service/gitops-service/reconcilers/registry"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
)

// resolve asks one Component's sources what they hold now.
func (r *Reconciler) resolve(ctx context.Context, namespace string, w as.ComponentSubscription) (found, error) {
	f := found{Name: w.Name}
	if w.Image != nil {
		tag, image, err := r.image(ctx, namespace, w.Name, w.Image)
		if err != nil {
			return f, err
		}
		f.Tag, f.Image = tag, image
	}
	if w.Git != nil {
		rev, err := r.revision(ctx, namespace, w.Name, w.Git)
		if err != nil {
			return f, err
		}
		f.Revision = rev
	}
	return f, nil
}

// image picks the tag by the policy and pins it by digest: the image is
// repository@sha256:..., whatever the tag names later.
func (r *Reconciler) image(ctx context.Context, namespace, component string, img *as.ImageSubscription) (tag, image string, err error) {
	repo, err := name.NewRepository(img.Repository)
	if err != nil {
		return "", "", kernel.Refuse(as.SubscriptionReasonInvalidSpec,
			"component %q: image.repository %q is not an image repository (registry/path, without tag or digest)", component, img.Repository)
	}
	opts, err := registry.Options(ctx, r.APIReader, registry.Access{Namespace: namespace, SecretName: img.CredentialsSecret, Egress: r.Egress})
	switch {
	case apierrors.IsNotFound(err):
		return "", "", kernel.Refuse(as.SubscriptionReasonSecretNotFound,
			"component %q: Secret %q was not found in namespace %q", component, img.CredentialsSecret, namespace)
	case err != nil && apierrors.ReasonForError(err) != "":
		return "", "", err // the API server's
	case err != nil:
		return "", "", kernel.Refuse(as.SubscriptionReasonInvalidSecret, "component %q: %v", component, err)
	}
	failed := func(err error, what string) error {
		msg, refused := registry.Describe(err)
		reason := as.SubscriptionReasonRegistryFailed
		if refused {
			reason = as.SubscriptionReasonEgressRefused
		}
		return kernel.Refuse(reason, "component %q: %s of %s: %s", component, what, img.Repository, msg)
	}
	tag = img.Tag
	if tag == "" {
		tags, err := registry.Tags(repo, opts)
		if err != nil {
			return "", "", failed(err, "listing the tags")
		}
		var ok bool
		if tag, ok = pickTag(img, tags); !ok {
			return "", "", kernel.Refuse(as.SubscriptionReasonNoMatchingTag,
				"component %q: none of the %d tags of %s matches %s", component, len(tags), img.Repository, policyOf(img))
		}
	}
	digest, err := registry.Digest(repo.Tag(tag), opts)
	if err != nil {
		return "", "", failed(err, "resolving tag "+tag)
	}
	return tag, repo.Name() + "@" + digest, nil
}

func policyOf(img *as.ImageSubscription) string {
	if img.Semver != "" {
		return fmt.Sprintf("the range %q", img.Semver)
	}
	return fmt.Sprintf("the expression %q", img.Regex)
}

// revision is the commit the branch or tag names now.
func (r *Reconciler) revision(ctx context.Context, namespace, component string, g *as.GitSubscription) (string, error) {
	var user, password string
	if g.CredentialsSecret != "" {
		s, err := tenantsecret.Read(ctx, r.APIReader, namespace, g.CredentialsSecret, kernel.Refuse(as.SubscriptionReasonSecretNotFound,
			"component %q: Secret %q was not found in namespace %q", component, g.CredentialsSecret, namespace))
		if err != nil {
			return "", err
		}
		user, password = string(s.Data["username"]), string(s.Data["password"])
		if password == "" {
			return "", kernel.Refuse(as.SubscriptionReasonInvalidSecret, "component %q: Secret %q has no key password", component, g.CredentialsSecret)
		}
	}
	roots, err := gitprobe.TrustedCAs(ctx, r.APIReader, r.ArgoNamespace, g.URL)
	if err != nil {
		return "", err
	}
	refs, res := gitprobe.List(ctx, r.Egress, g.URL, user, password, roots)
	ref, what := "refs/heads/"+g.Branch, "branch "+g.Branch
	if g.Tag != "" {
		ref, what = "refs/tags/"+g.Tag, "tag "+g.Tag
	}
	fail := func(format string, args ...any) error {
		return kernel.Refuse(as.SubscriptionReasonGitFailed, "component %q: repository %s: %s", component, g.URL, fmt.Sprintf(format, args...))
	}
	switch res.Answer {
	case gitprobe.Readable:
	case gitprobe.Refused:
		return "", fail("it refused the credentials (HTTP %d)", res.Status)
	case gitprobe.NotFound:
		return "", fail("not found (HTTP 404)")
	case gitprobe.NotGit:
		return "", fail("not a git repository (HTTP %d)", res.Status)
	default:
		if res.Detail == netfailure.NotAllowed.String() {
			return "", kernel.Refuse(as.SubscriptionReasonEgressRefused, "component %q: repository %s: %s", component, g.URL, res.Detail)
		}
		return "", fail("%s", res.Detail)
	}
	rev, ok := refs[ref]
	if !ok {
		return "", fail("it has no %s", what)
	}
	return rev, nil
}
