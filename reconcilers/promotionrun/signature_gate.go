package promotionrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/registry"
	"github.com/gitops-service/gitops-service/reconcilers/signatures"
)

// The signature gate (.spec.gates.signatures of an Environment): every
// image of the Snapshot must be signed and attested as the Environment
// requires before a promotion enters it. Gather verifies the images
// (verifySignatures, through the sidecar's signatures.Verifier, which
// caches by digest and requirement); the gate (signed) is a pure function
// of the results, which the PromotionHistory entry of the step records.

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get

// ReasonSignatureNotVerified: an image of the Snapshot is not signed as the
// Environment requires.
const ReasonSignatureNotVerified = as.WaitingReasonSignatureNotVerified

// verifyBudget bounds the verification of one Snapshot for one Environment;
// what is not done by then is not verified (the run looks again).
const verifyBudget = 90 * time.Second

// verifyParallel is how many images are verified at once.
const verifyParallel = 4

// signaturesRung: the gate never holds a rollback, which returns to a
// Snapshot that entered the Environment before (its history entry says
// what was verified then), chosen only once the rollback starts.
var signaturesRung = policy{signed, never}

// signed holds the promotion while an image of the Snapshot is not verified
// as in.Env requires, naming the image and what was expected.
func signed(in gateInput) *kernel.Waiting {
	g := in.Env.Spec.Gates
	if g == nil || g.Signatures == nil {
		return nil
	}
	if in.SignatureProblem != "" {
		return kernel.Wait(ReasonSignatureNotVerified, kernel.WaitingRetry, "signatures of Snapshot %s for Environment %s: %s (fix the Environment)",
			in.Snapshot, in.Env.Name, in.SignatureProblem)
	}
	if in.Signatures == nil {
		return kernel.Wait(ReasonSignatureNotVerified, kernel.WaitingRetry, "signatures of Snapshot %s for Environment %s to be verified", in.Snapshot, in.Env.Name)
	}
	var bad []as.ImageVerification
	for _, v := range in.Signatures {
		if !v.Verified {
			bad = append(bad, v)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	b := bad[0]
	digest := ""
	if b.Digest != "" && !strings.HasSuffix(b.Image, "@"+b.Digest) {
		digest = " (" + b.Digest + ")"
	}
	more := ""
	if len(bad) > 1 {
		more = fmt.Sprintf(" (and %d more images)", len(bad)-1)
	}
	return kernel.Wait(ReasonSignatureNotVerified, kernel.WaitingRetry, "a verified signature of image %s%s of component %s for Environment %s: %s%s",
		b.Image, digest, b.Component, in.Env.Name, b.Message, more)
}

// verifySignatures verifies the Snapshot's images against env's signature
// requirement into w (by Environment name); a requirement that cannot be
// used (a key missing or not a key) is a problem the gate reports. It does
// nothing when env requires no signatures, when no verifier is set up, or
// when it was done this pass.
func (r *Reconciler) verifySignatures(ctx context.Context, w *world, env *as.Environment, snap *as.Snapshot) error {
	if env == nil || env.Spec.Gates == nil || env.Spec.Gates.Signatures == nil || snap == nil {
		return nil
	}
	if _, done := w.Signatures[env.Name]; done {
		return nil
	}
	if _, done := w.SignatureProblems[env.Name]; done {
		return nil
	}
	g := env.Spec.Gates.Signatures
	if r.Signatures == nil {
		w.SignatureProblems[env.Name] = "the GitOps Service does not verify signatures here"
		return nil
	}
	pems := map[string]string{}
	for _, k := range g.Keys {
		if k.ConfigMapKeyRef == nil {
			pems[k.Name] = k.PublicKey
			continue
		}
		var cm corev1.ConfigMap
		// Read directly: the sidecar does not cache every ConfigMap of the cluster.
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: k.ConfigMapKeyRef.Name}, &cm); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			w.SignatureProblems[env.Name] = fmt.Sprintf("key %s: ConfigMap %s not found", k.Name, k.ConfigMapKeyRef.Name)
			return nil
		}
		pem, ok := cm.Data[k.ConfigMapKeyRef.Key]
		if !ok {
			w.SignatureProblems[env.Name] = fmt.Sprintf("key %s: ConfigMap %s has no key %s", k.Name, k.ConfigMapKeyRef.Name, k.ConfigMapKeyRef.Key)
			return nil
		}
		pems[k.Name] = pem
	}
	req, err := signatures.Compile(g, pems)
	if err != nil {
		w.SignatureProblems[env.Name] = err.Error()
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, verifyBudget)
	defer cancel()
	opts, err := registry.Options(ctx, r.APIReader, registry.Access{Namespace: env.Namespace, SecretName: g.RegistrySecret, Egress: r.Egress})
	if err != nil {
		w.SignatureProblems[env.Name] = err.Error()
		return nil
	}
	results := make([]as.ImageVerification, len(snap.Spec.Components))
	var eg errgroup.Group
	eg.SetLimit(verifyParallel)
	for i, c := range snap.Spec.Components {
		eg.Go(func() error {
			results[i] = r.Signatures.Check(ctx, c.Name, c.ContainerImage, req, opts...)
			return nil
		})
	}
	_ = eg.Wait() // Check always answers
	w.Signatures[env.Name] = results
	return nil
}
