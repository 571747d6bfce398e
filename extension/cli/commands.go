package main

import (
	"context"
	"encoding/json"
	"fmt"
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
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not do this in namespace %q (%s): ask your platform admin for the `edit` role there, or pick your namespace with -n", ns, apierrors.ReasonForError(err))
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster does not accept your credentials: log in again (your kubeconfig's token may have expired)")
	case apierrors.IsNotFound(err) && what != "":
		return fmt.Errorf("%s not found in namespace %q: `list` shows what there is, -n picks another namespace", what, ns)
	case meta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind"):
		return fmt.Errorf("the GitOps Service is not installed in this cluster (its CRDs are missing): ask your platform admin")
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s already exists in namespace %q", what, ns)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("the cluster refused %s: %s", what, apierrors.ReasonForError(err))
	}
	return fmt.Errorf("talking to the cluster: %v", err)
}

// print writes v as JSON or YAML when asked to; it reports whether it did.
func (c *cli) print(v any) (bool, error) {
	switch c.opts.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(c.out, string(b))
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = c.out.Write(b)
		return true, err
	}
	return false, nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listResult is what `list -o json|yaml` prints.
type listResult struct {
	Namespace   string                          `json:"namespace"`
	Deployments []v1.GitOpsDeployment           `json:"gitopsDeployments"`
	Bindings    []as.SnapshotEnvironmentBinding `json:"snapshotEnvironmentBindings"`
}

func (c *cli) list(ctx context.Context) error {
	var gds v1.GitOpsDeploymentList
	if err := c.List(ctx, &gds, client.InNamespace(c.namespace)); err != nil {
		return explain(err, "GitOpsDeployments", c.namespace)
	}
	var sebs as.SnapshotEnvironmentBindingList
	if err := c.List(ctx, &sebs, client.InNamespace(c.namespace)); err != nil {
		return explain(err, "SnapshotEnvironmentBindings", c.namespace)
	}
	if done, err := c.print(listResult{Namespace: c.namespace, Deployments: gds.Items, Bindings: sebs.Items}); done {
		return err
	}
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "DEPLOYMENT\tTYPE\tSYNC\tHEALTH\tREVISION\tARGO CD APPLICATION")
	for i := range gds.Items {
		gd := &gds.Items[i]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", gd.Name, gd.Spec.Type, dash(string(gd.Status.Sync.Status)),
			dash(string(gd.Status.Health.Status)), dash(short(gd.Status.Sync.Revision)), v1.ApplicationName(string(gd.UID)))
	}
	if len(sebs.Items) > 0 {
		fmt.Fprintln(w, "\nBINDING\tAPPLICATION\tENVIRONMENT\tSNAPSHOT\tCOMPONENTS (SYNC/HEALTH)")
		for i := range sebs.Items {
			b := &sebs.Items[i]
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", b.Name, b.Spec.Application, b.Spec.Environment, b.Spec.Snapshot, componentsOf(b))
		}
	}
	return w.Flush()
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
	gd := &v1.GitOpsDeployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, gd)
	if apierrors.IsNotFound(err) {
		seb := &as.SnapshotEnvironmentBinding{}
		if berr := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, seb); berr == nil {
			return c.bindingStatus(seb)
		}
	}
	if err != nil {
		return explain(err, fmt.Sprintf("no GitOpsDeployment or SnapshotEnvironmentBinding %q:", name), c.namespace)
	}
	if done, err := c.print(gd); done {
		return err
	}
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "GitOpsDeployment:\t%s/%s (%s)\n", gd.Namespace, gd.Name, gd.Spec.Type)
	fmt.Fprintf(w, "Source:\t%s %s@%s\n", gd.Spec.Source.RepoURL, gd.Spec.Source.Path, dash(gd.Spec.Source.TargetRevision))
	fmt.Fprintf(w, "Sync:\t%s at %s\n", dash(string(gd.Status.Sync.Status)), dash(gd.Status.Sync.Revision))
	fmt.Fprintf(w, "Health:\t%s\n", dash(string(gd.Status.Health.Status)))
	fmt.Fprintf(w, "Argo CD Application:\t%s (argocd app get argocd/%s)\n", v1.ApplicationName(string(gd.UID)), v1.ApplicationName(string(gd.UID)))
	fmt.Fprintf(w, "Resources:\t%d\n", len(gd.Status.Resources))
	if op := gd.Status.OperationState; op != nil {
		fmt.Fprintf(w, "Last operation:\t%s: %s\n", op.Phase, op.Message)
	}
	for _, cond := range gd.Status.Conditions {
		fmt.Fprintf(w, "Condition %s:\t%s %s %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	return w.Flush()
}

func (c *cli) bindingStatus(b *as.SnapshotEnvironmentBinding) error {
	if done, err := c.print(b); done {
		return err
	}
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
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

// follow polls get every interval until done says so or the timeout passes.
func (c *cli) follow(ctx context.Context, get func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	for {
		done, err := get(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return &exitError{code: 1, msg: fmt.Sprintf("not finished after %s; it goes on in the cluster: follow it with `%s status` or kubectl", c.opts.timeout, c.prog)}
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *cli) sync(ctx context.Context, deployment string) error {
	gd := &v1.GitOpsDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: deployment}, gd); err != nil {
		return explain(err, fmt.Sprintf("GitOpsDeployment %q", deployment), c.namespace)
	}
	if gd.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated {
		return &exitError{code: 1, msg: fmt.Sprintf("GitOpsDeployment %q is automated: Argo CD syncs it by itself; push to Git, or set spec.type: manual to sync by hand", deployment)}
	}
	run := &v1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, GenerateName: deployment + "-sync-"},
		Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: c.opts.revision},
	}
	if err := c.Create(ctx, run); err != nil {
		return explain(err, "the GitOpsDeploymentSyncRun", c.namespace)
	}
	if c.opts.output == "" {
		fmt.Fprintf(c.out, "GitOpsDeploymentSyncRun %s created: syncing %s to %s\n", run.Name, deployment, dash(c.opts.revision))
	}
	last := ""
	err := c.follow(ctx, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
			return false, explain(err, "GitOpsDeploymentSyncRun "+run.Name, c.namespace)
		}
		st := run.Status
		line := fmt.Sprintf("%s: phase %s, sync %s, health %s, revision %s", run.Name, dash(string(st.Phase)), dash(string(st.SyncStatus)), dash(string(st.Health)), dash(short(st.Revision)))
		if cond := findCondition(st.Conditions, v1.GitOpsDeploymentConditionErrorOccurred); cond != nil && cond.Message != "" {
			line += ": " + cond.Message
		}
		if line != last && c.opts.output == "" {
			fmt.Fprintln(c.out, line)
			last = line
		}
		return st.Finished() || st.Refused(), nil
	})
	if err != nil {
		return err
	}
	if done, err := c.print(run); done && err != nil {
		return err
	}
	if !syncRunSucceeded(run.Status) {
		return &exitError{code: 1, msg: fmt.Sprintf("sync of %s did not succeed (phase %s): `%s status %s` shows why", deployment, dash(string(run.Status.Phase)), c.prog, deployment)}
	}
	return nil
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

func (c *cli) promote(ctx context.Context, snapshotName string) error {
	if (c.opts.to == "") == (c.opts.autoFrom == "") {
		return &exitError{code: 2, msg: "promote needs exactly one of --to <environment> (one Environment) or --auto-from <environment> (along the Environment graph)"}
	}
	snap := &as.Snapshot{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: snapshotName}, snap); err != nil {
		return explain(err, fmt.Sprintf("Snapshot %q", snapshotName), c.namespace)
	}
	run := &as.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, GenerateName: snapshotName + "-promote-"},
		Spec:       as.PromotionRunSpec{Snapshot: snapshotName, Application: snap.Spec.Application},
	}
	if c.opts.to != "" {
		run.Spec.ManualPromotion = &as.ManualPromotionConfiguration{TargetEnvironment: c.opts.to}
	} else {
		run.Spec.AutomatedPromotion = &as.AutomatedPromotionConfiguration{InitialEnvironment: c.opts.autoFrom}
	}
	if err := c.Create(ctx, run); err != nil {
		return explain(err, "the PromotionRun", c.namespace)
	}
	if c.opts.output == "" {
		fmt.Fprintf(c.out, "PromotionRun %s created: %s of application %s\n", run.Name, snapshotName, snap.Spec.Application)
	}
	seen := map[string]string{}
	lastState := ""
	err := c.follow(ctx, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
			return false, explain(err, "PromotionRun "+run.Name, c.namespace)
		}
		if c.opts.output == "" {
			if s := string(run.Status.State); s != lastState {
				fmt.Fprintf(c.out, "%s: %s\n", run.Name, dash(s))
				lastState = s
			}
			for _, step := range run.Status.EnvironmentStatus {
				line := fmt.Sprintf("  step %d %s: %s %s", step.Step, step.EnvironmentName, step.Status, step.DisplayStatus)
				if seen[step.EnvironmentName] != line {
					fmt.Fprintln(c.out, line)
					seen[step.EnvironmentName] = line
				}
			}
		}
		return run.Status.State == as.PromotionRunStateCompleted, nil
	})
	if err != nil {
		return err
	}
	if done, err := c.print(run); done && err != nil {
		return err
	}
	if run.Status.CompletionResult != as.PromotionRunCompleteResultSuccess {
		msg := ""
		if cond := meta.FindStatusCondition(run.Status.Conditions, "ErrorOccurred"); cond != nil {
			msg = ": " + cond.Message
		}
		return &exitError{code: 1, msg: fmt.Sprintf("promotion %s: %s%s", run.Name, dash(string(run.Status.CompletionResult)), msg)}
	}
	if c.opts.output == "" {
		fmt.Fprintf(c.out, "%s: Success\n", run.Name)
	}
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
	var envs as.EnvironmentList
	if err := c.List(ctx, &envs, client.InNamespace(c.namespace)); err != nil {
		return explain(err, "Environments", c.namespace)
	}
	var sebs as.SnapshotEnvironmentBindingList
	if err := c.List(ctx, &sebs, client.InNamespace(c.namespace)); err != nil {
		return explain(err, "SnapshotEnvironmentBindings", c.namespace)
	}
	graph := environmentGraph(envs.Items, sebs.Items)
	if done, err := c.print(graph); done {
		return err
	}
	if len(graph) == 0 {
		fmt.Fprintf(c.out, "no Environments in namespace %s\n", c.namespace)
		return nil
	}
	for _, n := range graph {
		indent := strings.Repeat("   ", n.Depth)
		arrow := ""
		if n.Depth > 0 {
			arrow = "└─ "
		}
		fmt.Fprintf(c.out, "%s%s%s (%s)\n", indent, arrow, n.Name, dash(n.Strategy))
		for _, r := range n.Runs {
			fmt.Fprintf(c.out, "%s     %s: %s (binding %s, deployed %s)\n", indent, r.Application, r.Snapshot, r.Binding, dash(r.Deployed))
		}
	}
	return nil
}
