// Package policyrules compiles and evaluates the CEL rules of
// PromotionPolicies over the facts of a promotion. It is pure: the
// admission webhook and the policy's status compile with it, the
// PromotionRun's policy gate evaluates with it.
package policyrules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	apiservercel "k8s.io/apiserver/pkg/cel"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Limits of a rule. A rule whose estimated cost (over facts at their
// bounds) is above MaxCost is refused when written; one whose actual cost
// goes above it, or that runs longer than MaxEvalTime, denies.
const (
	MaxCost     = 5_000_000
	MaxEvalTime = time.Second
	// MaxPromotionTime bounds every rule of every policy of one promotion
	// into one Environment together (a tenant's Snapshot of many images
	// makes each rule cost more).
	MaxPromotionTime = 3 * time.Second
	// maxList and maxString are the bounds the estimate assumes for every
	// list (images, signatures, approvers, kinds, labels) and string.
	maxList   = 128
	maxString = 1024
	// MaxMessage bounds a denial's message (the Waiting condition's).
	MaxMessage = 1024
)

func str() *apiservercel.DeclType { return apiservercel.StringType }

func object(name string, fields map[string]*apiservercel.DeclType) *apiservercel.DeclType {
	fs := make(map[string]*apiservercel.DeclField, len(fields))
	for n, t := range fields {
		fs[n] = apiservercel.NewDeclField(n, t, true, nil, nil)
	}
	return apiservercel.NewObjectType(name, fs)
}

var (
	strList   = apiservercel.NewListType(apiservercel.StringType, maxList)
	imageType = object("policy.Image", map[string]*apiservercel.DeclType{
		"component": str(), "image": str(), "registry": str(), "repository": str(), "tag": str(), "digest": str(), "valid": apiservercel.BoolType,
	})
	signatureType = object("policy.Signature", map[string]*apiservercel.DeclType{
		"component": str(), "image": str(), "digest": str(), "verified": apiservercel.BoolType, "signers": strList, "attestations": strList, "message": str(),
	})
	environmentType = object("policy.Environment", map[string]*apiservercel.DeclType{
		"name": str(), "namespace": str(), "parent": str(), "labels": apiservercel.NewMapType(str(), str(), maxList),
	})
	previewType = object("policy.Preview", map[string]*apiservercel.DeclType{
		"found": apiservercel.BoolType, "clean": apiservercel.BoolType, "added": apiservercel.IntType, "changed": apiservercel.IntType,
		"removed": apiservercel.IntType, "unchanged": apiservercel.IntType, "errors": apiservercel.IntType, "kinds": strList,
		"completedAt": apiservercel.TimestampType,
	})
	sourceType = object("policy.Source", map[string]*apiservercel.DeclType{
		"environment": str(), "changes": apiservercel.IntType, "failures": apiservercel.IntType, "changeFailureRate": apiservercel.DoubleType,
	})
	// variables are the facts as CEL declares them (Facts.activation gives the values).
	variables = map[string]*apiservercel.DeclType{
		"application": str(), "snapshot": str(), "environment": environmentType,
		"images": apiservercel.NewListType(imageType, maxList), "signatures": apiservercel.NewListType(signatureType, maxList),
		"signaturesRequired": apiservercel.BoolType, "preview": previewType, "approvers": strList, "source": sourceType,
		"now": apiservercel.TimestampType, "rollback": apiservercel.BoolType,
	}
)

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// environment is the one CEL environment of every rule.
func environment() (*cel.Env, error) {
	envOnce.Do(func() {
		provider := apiservercel.NewDeclTypeProvider(imageType, signatureType, environmentType, previewType, sourceType)
		base, err := cel.NewEnv()
		if err != nil {
			envErr = err
			return
		}
		opts, err := provider.EnvOptions(base.CELTypeProvider())
		if err != nil {
			envErr = err
			return
		}
		for n, t := range variables {
			opts = append(opts, cel.Variable(n, t.CelType()))
		}
		opts = append(opts, ext.Strings(), ext.Sets())
		env, envErr = cel.NewEnv(opts...)
	})
	return env, envErr
}

// Rule is a compiled rule.
type Rule struct {
	Name, Message string
	program       cel.Program
	// facts are the variables the rule reads, in declaration order: what
	// a denial shows.
	facts []string
}

// CompileError says which rule did not compile and why.
type CompileError struct {
	Rule   string
	Index  int
	Reason string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("rule %s (rules[%d]): %s", e.Rule, e.Index, e.Reason)
}

// Compile compiles every rule of spec; the first that does not compile,
// is not a bool or may cost more than MaxCost is a *CompileError.
func Compile(rules []as.PolicyRule) ([]*Rule, error) {
	e, err := environment()
	if err != nil {
		return nil, err
	}
	out := make([]*Rule, 0, len(rules))
	for i, r := range rules {
		c, reason := compile(e, r)
		if reason != "" {
			return nil, &CompileError{Rule: r.Name, Index: i, Reason: reason}
		}
		out = append(out, c)
	}
	return out, nil
}

func compile(e *cel.Env, r as.PolicyRule) (*Rule, string) {
	ast, iss := e.Compile(r.Expression)
	if iss.Err() != nil {
		return nil, "does not compile: " + iss.Err().Error()
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Sprintf("evaluates to %s, not bool", ast.OutputType())
	}
	est, err := e.EstimateCost(ast, sizes{})
	if err != nil {
		return nil, "cannot estimate its cost: " + err.Error()
	}
	if est.Max > MaxCost {
		return nil, fmt.Sprintf("may cost up to %d, more than the limit %d (over facts at their bounds: %d images, strings of %d bytes)",
			est.Max, MaxCost, maxList, maxString)
	}
	p, err := e.Program(ast, cel.CostLimit(MaxCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err.Error()
	}
	checked, err := cel.AstToCheckedExpr(ast)
	if err != nil {
		return nil, err.Error()
	}
	read := map[string]bool{}
	for _, ref := range checked.GetReferenceMap() {
		if _, ok := variables[ref.GetName()]; ok {
			read[ref.GetName()] = true
		}
	}
	var facts []string
	for _, n := range factOrder {
		if read[n] {
			facts = append(facts, n)
		}
	}
	return &Rule{Name: r.Name, Message: r.Message, program: p, facts: facts}, ""
}

// factOrder is the order a denial lists the facts in.
var factOrder = []string{"application", "snapshot", "environment", "images", "signaturesRequired", "signatures", "preview", "approvers", "source", "now", "rollback"}

// sizes bounds every list, map and string for the cost estimate: the
// facts are at most that large (a Snapshot of more images costs more at
// run time, where the cost limit holds).
type sizes struct{}

func (sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	switch n.Type().Kind() {
	case types.ListKind, types.MapKind:
		return &checker.SizeEstimate{Min: 0, Max: maxList}
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: maxString}
	}
	return nil
}

func (sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Denial is a rule that did not hold.
type Denial struct {
	Policy, Rule string
	// Message is the rule's message, or why it could not be evaluated.
	Message string
	// Facts describe the facts the rule read.
	Facts []string
}

// String is the denial as the Waiting condition says it, at most MaxMessage bytes.
func (d *Denial) String() string {
	s := fmt.Sprintf("PromotionPolicy %s rule %s to allow the promotion", d.Policy, d.Rule)
	if d.Message != "" {
		s += " (" + d.Message + ")"
	}
	if len(d.Facts) > 0 {
		s += "; it saw " + strings.Join(d.Facts, "; ")
	}
	return cut(s, MaxMessage)
}

// Evaluate runs the rules of policy over facts in order and returns the
// first that does not hold, nil when all do. A rule that errs, runs over
// its cost or out of time denies: a policy is never skipped.
func Evaluate(ctx context.Context, policy string, rules []*Rule, facts *Facts) *Denial {
	act := facts.activation()
	for _, r := range rules {
		ok, why := eval(ctx, r, act)
		if ok {
			continue
		}
		d := &Denial{Policy: policy, Rule: r.Name, Message: r.Message}
		if why != "" {
			d.Message = strings.TrimSpace(r.Message + " " + why)
		}
		for _, f := range r.facts {
			if s := facts.describe(f); s != "" && !slices.Contains(d.Facts, s) {
				d.Facts = append(d.Facts, s)
			}
		}
		return d
	}
	return nil
}

func eval(ctx context.Context, r *Rule, act map[string]any) (bool, string) {
	if ctx.Err() != nil {
		return false, fmt.Sprintf("[not evaluated: the policies of the promotion ran longer than %s]", MaxPromotionTime)
	}
	rctx, cancel := context.WithTimeout(ctx, MaxEvalTime)
	defer cancel()
	out, _, err := r.program.ContextEval(rctx, act)
	if err != nil {
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return false, fmt.Sprintf("[not evaluated: ran longer than %s]", MaxEvalTime)
		}
		return false, "[not evaluated: " + cut(err.Error(), 200) + "]"
	}
	b, ok := out.Value().(bool)
	return ok && b, ""
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
