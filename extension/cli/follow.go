package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// follow refreshes obj (a run the backend made) until done says so,
// --timeout passes or ctx ends.
func (c *cli) follow(ctx context.Context, obj client.Object, done func() bool) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	return c.followError(parent, ctx, c.be.follow(ctx, obj, done))
}

// followError maps how following ended to exit codes.
func (c *cli) followError(parent, ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case parent.Err() != nil:
		return &exitError{code: exitFailed, msg: fmt.Sprintf("interrupted; the run goes on in the cluster: follow it with `%s status` or kubectl", c.prog)}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &exitError{code: exitTimedOut, msg: fmt.Sprintf("not finished after %s; it goes on in the cluster: follow it with `%s status` or kubectl", c.opts.timeout, c.prog)}
	}
	return err
}

// progress shows a run as it goes: on a terminal one live line rewritten in
// place (notes stay above it), piped one line per change.
type progress struct {
	w    io.Writer
	tty  bool
	last string
	live bool
}

func (c *cli) progress() *progress {
	if !c.text() {
		return &progress{w: io.Discard}
	}
	return &progress{w: c.out, tty: c.opts.tty}
}

// update replaces the live line (a new line when piped) if it changed.
func (p *progress) update(line string) {
	if line == p.last {
		return
	}
	p.last = line
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.live = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// note prints a line that stays.
func (p *progress) note(line string) {
	if p.tty && p.live {
		fmt.Fprintf(p.w, "\r\x1b[K%s\n%s", line, p.last)
		return
	}
	fmt.Fprintln(p.w, line)
}

// end leaves the live line as it is.
func (p *progress) end() {
	if p.tty && p.live {
		fmt.Fprintln(p.w)
		p.live = false
	}
}

// printObjects prints objects through o's -o printer with their apiVersion
// and kind; more than one, or asList, as a v1 List (as kubectl get does).
func printObjects(out io.Writer, o *options, scheme *runtime.Scheme, asList bool, objs ...client.Object) error {
	printer, err := o.print.ToPrinter()
	if err != nil {
		return usageError("-o %s: %v", o.output, err)
	}
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	// -o name prints each object's kind/name (its printer takes no lists).
	if (!asList && len(objs) == 1) || o.output == "name" {
		for _, obj := range objs {
			if err := printer.PrintObj(obj, out); err != nil {
				return err
			}
		}
		return nil
	}
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{}}
	for _, obj := range objs {
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	return printer.PrintObj(list, out)
}
