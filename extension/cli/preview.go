package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// preview creates a PromotionPreview of the Snapshot to --to, follows it
// until it completes and shows what the promotion would change: exit 0 when
// it would apply cleanly, 1 when the dry-run (or the render) found errors, 3
// when the GitOps Service refused the preview.
func (c *cli) preview(ctx context.Context, snapshot string) error {
	pp, err := c.be.preview(ctx, snapshot, c.opts.to)
	if err != nil {
		return err
	}
	p := c.progress()
	p.note(fmt.Sprintf("PromotionPreview %s created: %s of application %s to %s", pp.Name, snapshot, pp.Spec.Application, previewedTo(pp)))
	var refused *metav1.Condition
	err = c.follow(ctx, pp, func() bool {
		refused = meta.FindStatusCondition(pp.Status.Conditions, as.PromotionPreviewConditionFailed)
		if refused != nil && (refused.Status != metav1.ConditionTrue || refused.ObservedGeneration != pp.Generation) {
			refused = nil
		}
		p.update(fmt.Sprintf("%s: %s", pp.Name, previewState(pp)))
		return refused != nil || (pp.Status.CompletedAt != nil && pp.Status.ObservedGeneration == pp.Generation)
	})
	p.end()
	return c.previewResult(err, pp, refused)
}

// previewResult ends following preview pp: the error of following, the
// GitOps Service's refusal (exit 3), or the completed preview shown (or
// printed with -o) with exit 0 when the promotion would apply cleanly, 1
// when not.
func (c *cli) previewResult(followErr error, pp *as.PromotionPreview, refused *metav1.Condition) error {
	if followErr != nil {
		return followErr
	}
	if refused != nil {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("the GitOps Service refused the preview %s: %s", pp.Name, refused.Message)}
	}
	if done, err := c.printObjects(false, pp); done {
		if err != nil {
			return err
		}
	} else {
		writePreview(c.out, pp, c.opts.tty)
	}
	if !pp.Status.Clean {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("promoting %s to %s would fail: %s", pp.Spec.Snapshot, previewedTo(pp), previewProblems(pp))}
	}
	return nil
}

// previewedTo names what pp previews the promotion to.
func previewedTo(pp *as.PromotionPreview) string {
	if pp.Spec.AllEnvironments {
		return "every Environment"
	}
	return pp.Spec.TargetEnvironment
}

func previewState(pp *as.PromotionPreview) string {
	if pp.Status.CompletedAt != nil {
		return "Completed"
	}
	if c := meta.FindStatusCondition(pp.Status.Conditions, "Ready"); c != nil && c.Reason != "" {
		return c.Reason
	}
	return "Running"
}

// previewProblems counts what made a preview unclean.
func previewProblems(pp *as.PromotionPreview) string {
	errs, render, skipped := 0, 0, 0
	components := pp.Status.Components
	for _, e := range pp.Status.Environments {
		components = append(components, e.Components...)
		if e.Error != "" {
			skipped++
		}
	}
	for _, c := range components {
		errs += c.Errors
		if c.RenderError != "" {
			render++
		}
	}
	var parts []string
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d Environment(s) not previewed", skipped))
	}
	if errs > 0 {
		parts = append(parts, fmt.Sprintf("%d dry-run error(s)", errs))
	}
	if render > 0 {
		parts = append(parts, fmt.Sprintf("%d component(s) not rendered", render))
	}
	if len(parts) == 0 {
		return "see its status"
	}
	return strings.Join(parts, ", ")
}

// ANSI colors of the diff, as git colors it.
const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
	ansiBold  = "\x1b[1m"
	ansiReset = "\x1b[0m"
)

// writePreview shows a completed preview: per component what would be
// added, changed and removed, the dry-run's errors, then the unified diff,
// colored when color is set.
func writePreview(out io.Writer, pp *as.PromotionPreview, color bool) {
	if !pp.Spec.AllEnvironments {
		writeComponents(out, pp.Status.Components, pp.Status.Diff, pp.Status.DiffTruncated, color)
		return
	}
	// A release preview: the Environments in the path's order, each as a
	// preview of one, with its render hashes.
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENVIRONMENT\tCOMPONENT\tRENDER HASH\tCLEAN")
	for _, e := range pp.Status.Environments {
		if e.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\tnot previewed\n", e.Name)
		}
		for _, c := range e.Components {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\n", e.Name, c.Name, shortHash(c.RenderHash), e.Clean)
		}
	}
	_ = tw.Flush()
	for _, e := range pp.Status.Environments {
		fmt.Fprintf(out, "\n== Environment %s\n", e.Name)
		if e.Error != "" {
			fmt.Fprintf(out, "not previewed: %s\n", e.Error)
			continue
		}
		writeComponents(out, e.Components, e.Diff, e.DiffTruncated, color)
	}
}

// shortHash is a render hash cut for a table ("sha256:" and 12 digits).
func shortHash(h string) string {
	if len(h) > len("sha256:")+12 {
		return h[:len("sha256:")+12]
	}
	return h
}

// writeComponents shows one Environment's result: its components, the
// dry-run's errors, then the unified diff, colored when color is set.
func writeComponents(out io.Writer, components []as.PreviewComponentSummary, diff string, truncated, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tADDED\tCHANGED\tREMOVED\tUNCHANGED\tERRORS")
	for _, c := range components {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", c.Name, c.Added, c.Changed, c.Removed, c.Unchanged, c.Errors)
	}
	_ = tw.Flush()
	for _, c := range components {
		if c.RenderError != "" {
			fmt.Fprintf(out, "%s: %s\n", paint(ansiRed, c.Name+": not rendered"), c.RenderError)
		}
		for _, e := range c.DryRunErrors {
			obj := e.Kind + " " + e.Name
			if e.Namespace != "" {
				obj = e.Kind + " " + e.Namespace + "/" + e.Name
			}
			fmt.Fprintf(out, "%s %s: %s\n", paint(ansiRed, c.Name+": dry-run refused"), obj, e.Message)
		}
		if shown := len(c.DryRunErrors); c.Errors > shown {
			fmt.Fprintf(out, "%s: %d more dry-run error(s)\n", c.Name, c.Errors-shown)
		}
	}
	if diff != "" {
		fmt.Fprintln(out)
	}
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		text, nl := strings.CutSuffix(line, "\n")
		switch {
		case strings.HasPrefix(text, "---"), strings.HasPrefix(text, "+++"):
			text = paint(ansiBold, text)
		case strings.HasPrefix(text, "@@"):
			text = paint(ansiCyan, text)
		case strings.HasPrefix(text, "-"):
			text = paint(ansiRed, text)
		case strings.HasPrefix(text, "+"):
			text = paint(ansiGreen, text)
		}
		fmt.Fprint(out, text)
		if nl {
			fmt.Fprintln(out)
		}
	}
	if truncated {
		fmt.Fprintf(out, "... the diff is cut here: the panel's Preview shows all of it\n")
	}
}
