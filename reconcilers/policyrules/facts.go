package policyrules

import (
	"fmt"
	"slices"
	"strings"
	"time"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Facts are what the rules of a policy see of one promotion into one
// Environment. Each field is one CEL variable (docs/policies.md).
type Facts struct {
	Application string
	Snapshot    string
	Environment Environment
	Images      []Image
	// Signatures are the results of the signature gate, nil when the
	// Environment requires no signatures.
	Signatures []as.ImageVerification
	Preview    Preview
	// Approvers are the people whose approvals of the Snapshot into the
	// Environment count (one per person, sorted).
	Approvers []string
	Source    Source
	Now       time.Time
	Rollback  bool
}

// Environment is the Environment the promotion enters.
type Environment struct {
	Name, Namespace, Parent string
	Labels                  map[string]string
}

// Preview is the summary of the latest completed preview of the
// Snapshot into the Environment (for its current spec); Found is false when
// there is none.
type Preview struct {
	Found                                      bool
	Clean                                      bool
	Added, Changed, Removed, Unchanged, Errors int
	Kinds                                      []string
	CompletedAt                                time.Time
}

// PreviewOf summarizes a preview's status over its components.
func PreviewOf(p *as.PromotionPreview) Preview {
	if p == nil || p.Status.CompletedAt == nil {
		return Preview{}
	}
	out := Preview{Found: true, Clean: p.Status.Clean, CompletedAt: p.Status.CompletedAt.Time}
	for _, c := range p.Status.Components {
		out.Added += c.Added
		out.Changed += c.Changed
		out.Removed += c.Removed
		out.Unchanged += c.Unchanged
		out.Errors += c.Errors
		for _, k := range c.Kinds {
			if !slices.Contains(out.Kinds, k) {
				out.Kinds = append(out.Kinds, k)
			}
		}
	}
	slices.Sort(out.Kinds)
	return out
}

// Source is the Environment the Snapshot comes from (the parent of the
// one it enters) and its recent changes: promotions into it within the
// policy's window and how many of them failed (as.ChangeFailure).
type Source struct {
	Environment string
	Changes     int
	Failures    int
}

// Rate is the change failure rate, 0 without changes.
func (s Source) Rate() float64 {
	if s.Changes == 0 {
		return 0
	}
	return float64(s.Failures) / float64(s.Changes)
}

// activation is the facts as CEL values (lists and maps of plain values:
// the declared object types are read as maps at run time).
func (f *Facts) activation() map[string]any {
	images := make([]any, 0, len(f.Images))
	for _, i := range f.Images {
		images = append(images, map[string]any{"component": i.Component, "image": i.Image, "registry": i.Registry, "repository": i.Repository,
			"tag": i.Tag, "digest": i.Digest, "valid": i.Valid})
	}
	sigs := make([]any, 0, len(f.Signatures))
	for _, s := range f.Signatures {
		sigs = append(sigs, map[string]any{"component": s.Component, "image": s.Image, "digest": s.Digest, "verified": s.Verified,
			"signers": strs(s.Signers), "attestations": strs(s.Attestations), "message": s.Message})
	}
	labels := map[string]any{}
	for k, v := range f.Environment.Labels {
		labels[k] = v
	}
	p := f.Preview
	return map[string]any{
		"application":        f.Application,
		"snapshot":           f.Snapshot,
		"environment":        map[string]any{"name": f.Environment.Name, "namespace": f.Environment.Namespace, "parent": f.Environment.Parent, "labels": labels},
		"images":             images,
		"signatures":         sigs,
		"signaturesRequired": f.Signatures != nil,
		"preview": map[string]any{"found": p.Found, "clean": p.Clean, "added": int64(p.Added), "changed": int64(p.Changed), "removed": int64(p.Removed),
			"unchanged": int64(p.Unchanged), "errors": int64(p.Errors), "kinds": strs(p.Kinds), "completedAt": p.CompletedAt},
		"approvers": strs(f.Approvers),
		"source": map[string]any{"environment": f.Source.Environment, "changes": int64(f.Source.Changes), "failures": int64(f.Source.Failures),
			"changeFailureRate": f.Source.Rate()},
		"now":      f.Now,
		"rollback": f.Rollback,
	}
}

func strs(s []string) []any {
	out := make([]any, 0, len(s))
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// describe is what a denial says of the fact named: short, bounded by the
// caller, never a credential (none is a fact).
func (f *Facts) describe(fact string) string {
	switch fact {
	case "application":
		return "application=" + f.Application
	case "snapshot":
		return "snapshot=" + f.Snapshot
	case "environment":
		return fmt.Sprintf("environment=%s/%s labels=%v", f.Environment.Namespace, f.Environment.Name, f.Environment.Labels)
	case "images":
		parts := make([]string, 0, len(f.Images))
		for _, i := range f.Images {
			if !i.Valid {
				parts = append(parts, fmt.Sprintf("%s: %q (not a valid reference)", i.Component, i.Image))
				continue
			}
			ref := i.Registry + "/" + i.Repository
			if i.Tag != "" {
				ref += ":" + i.Tag
			}
			if i.Digest != "" {
				ref += "@" + i.Digest
			}
			parts = append(parts, i.Component+": "+ref)
		}
		return "images=[" + strings.Join(parts, ", ") + "]"
	case "signatures", "signaturesRequired":
		if f.Signatures == nil {
			return "signatures=not required"
		}
		parts := make([]string, 0, len(f.Signatures))
		for _, s := range f.Signatures {
			v := "unverified"
			if s.Verified {
				v = "verified by " + strings.Join(s.Signers, "+")
			}
			parts = append(parts, s.Component+": "+v)
		}
		return "signatures=[" + strings.Join(parts, ", ") + "]"
	case "preview":
		p := f.Preview
		if !p.Found {
			return "preview=none"
		}
		return fmt.Sprintf("preview=clean:%t added:%d changed:%d removed:%d errors:%d kinds:%v", p.Clean, p.Added, p.Changed, p.Removed, p.Errors, p.Kinds)
	case "approvers":
		return fmt.Sprintf("approvers=%v", f.Approvers)
	case "source":
		s := f.Source
		return fmt.Sprintf("source=%s changeFailureRate:%.2f (%d of %d)", orNone(s.Environment), s.Rate(), s.Failures, s.Changes)
	case "now":
		return "now=" + f.Now.UTC().Format(time.RFC3339)
	case "rollback":
		return fmt.Sprintf("rollback=%t", f.Rollback)
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
