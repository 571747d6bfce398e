package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// explain turns an API error into what the user should do next.
func explain(err error, what, ns string) error {
	if err == nil {
		return nil
	}
	switch {
	case apierrors.IsForbidden(err) && ns == "":
		return refusedIn(ns, string(apierrors.ReasonForError(err)), "ask your platform admin for the `view` role, or pick your namespace with -n")
	case apierrors.IsForbidden(err):
		return refusedIn(ns, string(apierrors.ReasonForError(err)), "ask your platform admin for the `edit` role there, or pick your namespace with -n")
	case apierrors.IsUnauthorized(err):
		return &exitError{code: exitRefused, msg: "the cluster does not accept your credentials: log in again (your kubeconfig's token may have expired)"}
	case apierrors.IsNotFound(err) && what != "":
		return notFound(what, ns)
	case meta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind"):
		return fmt.Errorf("the GitOps Service is not installed in this cluster (its CRDs are missing): ask your platform admin")
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s already exists in namespace %q", what, ns)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("the cluster refused %s: %s", what, apierrors.ReasonForError(err))
	}
	return fmt.Errorf("talking to the cluster: %v", err)
}

// print writes v as JSON or YAML when asked to (views that are not API
// objects: the Environment graph, the version); it reports whether it did.
func (c *cli) print(v any) (bool, error) {
	return printView(c.out, c.opts.output, v)
}

func printView(out io.Writer, output string, v any) (bool, error) {
	switch output {
	case "json":
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(out, string(b))
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = out.Write(b)
		return true, err
	}
	return false, nil
}

// printObjects prints API objects through -o's printer (apiVersion and kind
// set); more than one, or asList, as a List, as kubectl get does. It reports
// whether -o asked for it.
func (c *cli) printObjects(asList bool, objs ...client.Object) (bool, error) {
	if c.text() {
		return false, nil
	}
	return true, printObjects(c.out, c.opts, c.scheme, asList, objs...)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// applicationName is the Argo CD Application of a GitOpsDeployment.
func applicationName(gd *v1.GitOpsDeployment) string { return v1.ApplicationName(string(gd.UID)) }

func (c *cli) list(ctx context.Context) error {
	gds, sebs, err := c.be.objects(ctx, c.opts.selector)
	if err != nil {
		return err
	}
	return c.printList(gds, sebs)
}

// printList prints deployments and bindings: a List with -o, else tables.
func (c *cli) printList(gds []v1.GitOpsDeployment, sebs []as.SnapshotEnvironmentBinding) error {
	var objs []client.Object
	for i := range gds {
		objs = append(objs, &gds[i])
	}
	for i := range sebs {
		objs = append(objs, &sebs[i])
	}
	if done, err := c.printObjects(true, objs...); done {
		return err
	}
	if len(objs) == 0 {
		// As kubectl get says it, on stderr.
		_, err := fmt.Fprintln(c.opts.streams.ErrOut, noResources(c.namespace))
		return err
	}
	return writeTables(c.out, gds, sebs, c.namespace == "", c.wide())
}

// noResources is kubectl's line for an empty list.
func noResources(ns string) string {
	if ns == "" {
		return "No resources found"
	}
	return fmt.Sprintf("No resources found in %s namespace.", ns)
}

// writeTables is list's text output: one table of deployments, one of
// bindings (when there are any); allNamespaces adds a NAMESPACE column,
// wide the source, destination and conditions.
func writeTables(out io.Writer, gds []v1.GitOpsDeployment, sebs []as.SnapshotEnvironmentBinding, allNamespaces, wide bool) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(ns string, cols ...string) {
		if allNamespaces {
			cols = append([]string{ns}, cols...)
		}
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
	head := []string{"DEPLOYMENT", "TYPE", "SYNC", "HEALTH", "REVISION", "ARGO CD APPLICATION"}
	if wide {
		head = append(head, "SOURCE", "DESTINATION", "CONDITIONS")
	}
	row("NAMESPACE", head...)
	for i := range gds {
		gd := &gds[i]
		cols := []string{gd.Name, string(gd.Spec.Type), dash(string(gd.Status.Sync.Status)),
			dash(string(gd.Status.Health.Status)), dash(short(gd.Status.Sync.Revision)), applicationName(gd)}
		if wide {
			src := gd.Spec.Source
			dst := gd.Spec.Destination
			cols = append(cols, fmt.Sprintf("%s %s@%s", src.RepoURL, dash(src.Path), dash(src.TargetRevision)),
				dash(dst.Environment)+"/"+dash(dst.Namespace), gitopsConditionsOf(gd.Status.Conditions))
		}
		row(gd.Namespace, cols...)
	}
	if len(sebs) > 0 {
		fmt.Fprintln(w)
		head := []string{"BINDING", "APPLICATION", "ENVIRONMENT", "SNAPSHOT", "COMPONENTS (SYNC/HEALTH)"}
		if wide {
			head = append(head, "CONDITIONS")
		}
		row("NAMESPACE", head...)
		for i := range sebs {
			b := &sebs[i]
			cols := []string{b.Name, b.Spec.Application, b.Spec.Environment, b.Spec.Snapshot, componentsOf(b)}
			if wide {
				cols = append(cols, conditionsOf(append(append([]metav1.Condition{}, b.Status.BindingConditions...), b.Status.ComponentDeploymentConditions...)))
			}
			row(b.Namespace, cols...)
		}
	}
	return w.Flush()
}

// conditionsOf is Type=Status of each condition.
func conditionsOf(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, c.Type+"="+string(c.Status))
	}
	return dash(strings.Join(parts, ","))
}

func gitopsConditionsOf(conds []v1.GitOpsDeploymentCondition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, string(c.Type)+"="+string(c.Status))
	}
	return dash(strings.Join(parts, ","))
}

func componentsOf(b *as.SnapshotEnvironmentBinding) string {
	var parts []string
	for _, d := range b.Status.GitOpsDeployments {
		parts = append(parts, fmt.Sprintf("%s %s/%s", d.ComponentName, dash(d.GitOpsDeploymentSyncStatus), dash(d.GitOpsDeploymentHealthStatus)))
	}
	return dash(strings.Join(parts, ", "))
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

func (c *cli) status(ctx context.Context, name string) error {
	obj, err := c.be.find(ctx, name, false)
	if err != nil {
		return err
	}
	if b, ok := obj.(*as.SnapshotEnvironmentBinding); ok {
		return c.bindingStatus(ctx, b)
	}
	return c.deploymentStatus(obj.(*v1.GitOpsDeployment))
}

func (c *cli) deploymentStatus(gd *v1.GitOpsDeployment) error {
	if done, err := c.printObjects(false, gd); done {
		return err
	}
	return writeDeploymentStatus(c.out, gd)
}

func writeDeploymentStatus(out io.Writer, gd *v1.GitOpsDeployment) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "GitOpsDeployment:\t%s/%s (%s)\n", gd.Namespace, gd.Name, gd.Spec.Type)
	fmt.Fprintf(w, "Source:\t%s %s@%s\n", gd.Spec.Source.RepoURL, gd.Spec.Source.Path, dash(gd.Spec.Source.TargetRevision))
	fmt.Fprintf(w, "Sync:\t%s at %s\n", dash(string(gd.Status.Sync.Status)), dash(gd.Status.Sync.Revision))
	fmt.Fprintf(w, "Health:\t%s\n", dash(string(gd.Status.Health.Status)))
	fmt.Fprintf(w, "Argo CD Application:\t%s (argocd app get argocd/%s)\n", applicationName(gd), applicationName(gd))
	fmt.Fprintf(w, "Resources:\t%d\n", len(gd.Status.Resources))
	if op := gd.Status.OperationState; op != nil {
		fmt.Fprintf(w, "Last operation:\t%s: %s\n", op.Phase, op.Message)
	}
	for _, cond := range gd.Status.Conditions {
		fmt.Fprintf(w, "Condition %s:\t%s %s %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	return w.Flush()
}

func (c *cli) bindingStatus(ctx context.Context, b *as.SnapshotEnvironmentBinding) error {
	if done, err := c.printObjects(false, b); done {
		return err
	}
	if err := writeBindingStatus(c.out, b); err != nil {
		return err
	}
	runs, err := c.be.promotionRuns(ctx, b)
	if err != nil {
		// The binding's status stands without it (a user who may not list runs).
		_, err = fmt.Fprintf(c.out, "Analysis:  not shown: %v\n", err)
		return err
	}
	return writeAnalysis(c.out, b.Spec.Environment, runs)
}

// writeAnalysis prints the analysis of the newest promotion into env that
// has one: each check's phase, value, successes and failures, and when the
// next measurement is due (or when the last was made).
func writeAnalysis(out io.Writer, env string, runs []as.PromotionRun) error {
	for _, run := range runs {
		for _, s := range run.Status.EnvironmentStatus {
			if s.EnvironmentName != env || len(s.Analysis) == 0 {
				continue
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "Analysis:	of PromotionRun %s (Snapshot %s), step %s\n", run.Name, run.Spec.Snapshot, s.Status)
			for _, a := range s.Analysis {
				fmt.Fprintf(w, "Check %s:\t%s\n", a.Name, analysisLine(a))
			}
			return w.Flush()
		}
	}
	return nil
}

// analysisLine is one check's result in one line.
func analysisLine(a as.AnalysisCheckStatus) string {
	line := fmt.Sprintf("%s, value %s, %d ok, %d failed", a.Phase, dash(a.Value), a.Successes, a.Failures)
	if a.Message != "" {
		line += ": " + a.Message
	}
	switch {
	case a.NextCheckTime != nil:
		line += "; next check at " + a.NextCheckTime.UTC().Format(time.RFC3339)
	case a.LastCheckTime != nil:
		line += "; last check at " + a.LastCheckTime.UTC().Format(time.RFC3339)
	}
	return line
}

func writeBindingStatus(out io.Writer, b *as.SnapshotEnvironmentBinding) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "SnapshotEnvironmentBinding:\t%s/%s\n", b.Namespace, b.Name)
	fmt.Fprintf(w, "Application:\t%s\nEnvironment:\t%s\nSnapshot:\t%s\n", b.Spec.Application, b.Spec.Environment, b.Spec.Snapshot)
	for _, d := range b.Status.GitOpsDeployments {
		fmt.Fprintf(w, "Component %s:\t%s/%s at %s (GitOpsDeployment %s)\n", d.ComponentName,
			dash(d.GitOpsDeploymentSyncStatus), dash(d.GitOpsDeploymentHealthStatus), dash(d.GitOpsDeploymentCommitID), dash(d.GitOpsDeployment))
	}
	for _, set := range [][]metav1.Condition{b.Status.BindingConditions, b.Status.ComponentDeploymentConditions} {
		for _, cond := range set {
			fmt.Fprintf(w, "Condition %s:\t%s %s %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
	return w.Flush()
}

func (c *cli) sync(ctx context.Context, deployment string) error {
	obj, err := c.be.find(ctx, deployment, true)
	if err != nil {
		return err
	}
	gd := obj.(*v1.GitOpsDeployment)
	if gd.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("GitOpsDeployment %q is automated: Argo CD syncs it by itself; push to Git, or set spec.type: manual to sync by hand", deployment)}
	}
	run, err := c.be.sync(ctx, gd, c.opts.revision)
	if err != nil {
		return err
	}
	p := c.progress()
	p.note(fmt.Sprintf("GitOpsDeploymentSyncRun %s created: syncing %s to %s", run.Name, deployment, dash(c.opts.revision)))
	err = c.follow(ctx, run, func() bool {
		p.update(syncRunLine(run))
		return run.Status.Finished() || run.Status.Refused()
	})
	p.end()
	if err != nil {
		return err
	}
	return c.syncResult(deployment, run, run.Status.StartedAt == nil)
}

// syncRunLine is the progress line of a SyncRun.
func syncRunLine(run *v1.GitOpsDeploymentSyncRun) string {
	st := run.Status
	line := fmt.Sprintf("%s: phase %s, sync %s, health %s, revision %s", run.Name, dash(string(st.Phase)), dash(string(st.SyncStatus)), dash(string(st.Health)), dash(short(st.Revision)))
	if cond := findCondition(st.Conditions, v1.GitOpsDeploymentConditionErrorOccurred); cond != nil && cond.Message != "" {
		line += ": " + cond.Message
	}
	return line
}

// syncResult prints the finished run (-o) and says how it ended; notStarted:
// the run ended without an operation (the GitOps Service refused it).
func (c *cli) syncResult(deployment string, run *v1.GitOpsDeploymentSyncRun, notStarted bool) error {
	if done, err := c.printObjects(false, run); done && err != nil {
		return err
	}
	if syncRunSucceeded(run.Status) {
		return nil
	}
	why := ""
	if cond := findCondition(run.Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred); cond != nil && cond.Message != "" {
		why = ": " + cond.Message
	}
	if notStarted && run.Status.Phase == "" {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("the GitOps Service refused the sync of %s (run %s)%s", deployment, run.Name, why)}
	}
	return &exitError{code: exitFailed, msg: fmt.Sprintf("sync of %s did not succeed (phase %s)%s: `%s status %s` shows why", deployment, dash(string(run.Status.Phase)), why, c.prog, deployment)}
}

func findCondition(conds []v1.GitOpsDeploymentCondition, t v1.GitOpsConditionType) *v1.GitOpsDeploymentCondition {
	for i := range conds {
		if conds[i].Type == t && conds[i].Status == v1.GitOpsConditionStatusTrue {
			return &conds[i]
		}
	}
	return nil
}

func syncRunSucceeded(st v1.GitOpsDeploymentSyncRunStatus) bool {
	return st.Phase == v1.OperationSucceeded && findCondition(st.Conditions, v1.GitOpsDeploymentConditionErrorOccurred) == nil
}

func (c *cli) promote(ctx context.Context, snapshot string) error {
	if (c.opts.to == "") == (c.opts.autoFrom == "") {
		return usageError("promote needs exactly one of --to <environment> (one Environment) or --auto-from <environment> (along the Environment graph)")
	}
	if c.opts.preview {
		return c.preview(ctx, snapshot)
	}
	run, err := c.be.promote(ctx, snapshot, c.opts.to, c.opts.autoFrom)
	if err != nil {
		return err
	}
	return c.followPromotion(ctx, run, fmt.Sprintf("PromotionRun %s created: %s of application %s", run.Name, snapshot, run.Spec.Application))
}

// followPromotion follows a PromotionRun (a promotion or a rollback) until it
// completes, step by step, and says how it ended.
func (c *cli) followPromotion(ctx context.Context, run *as.PromotionRun, intro string) error {
	p := c.progress()
	p.note(intro)
	steps := promotionSteps{}
	err := c.follow(ctx, run, func() bool {
		steps.show(p, run)
		return run.Status.State == as.PromotionRunStateCompleted
	})
	p.end()
	if err != nil {
		return err
	}
	return c.promotionResult(p, run)
}

// promotionSteps remembers the lines shown of a PromotionRun.
type promotionSteps map[string]string

// show writes the run's state (live) and each changed step (kept).
func (s promotionSteps) show(p *progress, run *as.PromotionRun) {
	for _, step := range run.Status.EnvironmentStatus {
		line := fmt.Sprintf("  step %d %s: %s %s", step.Step, step.EnvironmentName, step.Status, step.DisplayStatus)
		if s[step.EnvironmentName] != line {
			p.note(line)
			s[step.EnvironmentName] = line
		}
		for _, a := range step.Analysis {
			key, line := step.EnvironmentName+"\x00"+a.Name, fmt.Sprintf("    analysis %s: %s", a.Name, analysisLine(a))
			if s[key] != line {
				p.note(line)
				s[key] = line
			}
		}
	}
	state := dash(string(run.Status.State))
	// A run that does not move says what it waits for (and until when).
	if w := meta.FindStatusCondition(run.Status.Conditions, as.PromotionRunConditionWaiting); w != nil && w.Status == metav1.ConditionTrue {
		state += " (" + w.Reason + ": " + w.Message + ")"
		if s["\x00waiting"] != w.Message {
			p.note(fmt.Sprintf("  waiting: %s", w.Message))
			s["\x00waiting"] = w.Message
		}
	}
	p.update(fmt.Sprintf("%s: %s", run.Name, state))
}

// promotionResult prints the finished run (-o) and says how it ended: a run
// that failed before any step was refused.
func (c *cli) promotionResult(p *progress, run *as.PromotionRun) error {
	if done, err := c.printObjects(false, run); done && err != nil {
		return err
	}
	if run.Status.CompletionResult != as.PromotionRunCompleteResultSuccess {
		msg := ""
		if cond := meta.FindStatusCondition(run.Status.Conditions, "ErrorOccurred"); cond != nil {
			msg = ": " + cond.Message
		}
		code := exitFailed
		if len(run.Status.EnvironmentStatus) == 0 {
			code = exitRefused
		}
		return &exitError{code: code, msg: fmt.Sprintf("promotion %s: %s%s", run.Name, dash(string(run.Status.CompletionResult)), msg)}
	}
	p.note(fmt.Sprintf("%s: Success", run.Name))
	return nil
}

// envNode is one Environment in `envs` output.
type envNode struct {
	Name     string    `json:"name"`
	Parent   string    `json:"parentEnvironment,omitempty"`
	Strategy string    `json:"deploymentStrategy,omitempty"`
	Runs     []envRuns `json:"runs,omitempty"`
	Children []string  `json:"children,omitempty"`
	// Depth indents the tree; not part of -o json|yaml output.
	Depth int `json:"-"`
}

// envRuns is what an Environment runs: an application's Snapshot.
type envRuns struct {
	Application string `json:"application"`
	Snapshot    string `json:"snapshot"`
	Binding     string `json:"binding"`
	Deployed    string `json:"deployed,omitempty"`
}

// environmentGraph lays out the digraph of envs depth first (roots first,
// children in name order) with what each runs according to bindings.
func environmentGraph(envs []as.Environment, bindings []as.SnapshotEnvironmentBinding) []envNode {
	g := as.NewEnvironmentGraph(envs)
	nodes := map[string]*envNode{}
	for _, e := range envs {
		nodes[e.Name] = &envNode{Name: e.Name, Parent: e.Spec.ParentEnvironment, Strategy: string(e.Spec.DeploymentStrategy), Children: g.Children(e.Name)}
	}
	for _, b := range bindings {
		if n := nodes[b.Spec.Environment]; n != nil {
			deployed := ""
			if cond := meta.FindStatusCondition(b.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed); cond != nil {
				deployed = string(cond.Status)
			}
			n.Runs = append(n.Runs, envRuns{Application: b.Spec.Application, Snapshot: b.Spec.Snapshot, Binding: b.Name, Deployed: deployed})
		}
	}
	var out []envNode
	for _, step := range g.DepthFirst() {
		n := nodes[step.Name]
		sort.Slice(n.Runs, func(i, j int) bool { return n.Runs[i].Application < n.Runs[j].Application })
		n.Depth = step.Depth
		out = append(out, *n)
	}
	return out
}

func (c *cli) envs(ctx context.Context) error {
	envs, sebs, err := c.be.environments(ctx, c.opts.selector)
	if err != nil {
		return err
	}
	return c.printGraph(environmentGraph(envs, sebs))
}

func (c *cli) printGraph(graph []envNode) error {
	if done, err := c.print(graph); done {
		return err
	}
	writeEnvTree(c.out, c.namespace, graph)
	return nil
}

// writeEnvTree is envs' text output: each Environment below its parent,
// with what runs there.
func writeEnvTree(out io.Writer, namespace string, graph []envNode) {
	if len(graph) == 0 {
		fmt.Fprintf(out, "no Environments in namespace %s\n", namespace)
		return
	}
	for _, n := range graph {
		indent := strings.Repeat("   ", n.Depth)
		arrow := ""
		if n.Depth > 0 {
			arrow = "└─ "
		}
		fmt.Fprintf(out, "%s%s%s (%s)\n", indent, arrow, n.Name, dash(n.Strategy))
		for _, r := range n.Runs {
			fmt.Fprintf(out, "%s     %s: %s (binding %s, deployed %s)\n", indent, r.Application, r.Snapshot, r.Binding, dash(r.Deployed))
		}
	}
}
