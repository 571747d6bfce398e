// Command demo is `make demo`: it starts a local Kubernetes (etcd,
// kube-apiserver, kube-controller-manager) and Argo CD with test/stack,
// installs the GitOps Service CRDs, runs the gitops-service sidecar
// (bin/gitops-service) beside them, pushes manifests/samples/guestbook and
// manifests/samples/appstudio/gitops to a local git repository, deploys the
// guestbook with the sample GitOpsDeployment, then the App Studio sample (an
// application deployed to an Environment by a SnapshotEnvironmentBinding, and a
// PromotionRun of its next Snapshot), using kubectl the way a user would. It
// then keeps everything running until Ctrl-C.
//
// DEMO_EXIT=1 exits right after the samples are shown deployed (smoke checks).
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	tenant      = "jane"
	sampleName  = "guestbook" // metadata.name in manifests/samples/gitopsdeployment.yaml
	appPath     = "guestbook" // spec.source.path there
	syncTimeout = 3 * time.Minute
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	d := &demo{ctx: ctx, stopSignals: stop, start: time.Now()}
	err := d.run()
	interrupted := d.cleanup(err)
	switch {
	case err == nil:
	case interrupted:
		fmt.Fprintln(os.Stderr, "interrupted; everything is stopped")
		os.Exit(130)
	default:
		fmt.Fprintf(os.Stderr, "\nmake demo failed: %v\n", err)
		os.Exit(1)
	}
}

type demo struct {
	ctx         context.Context
	stopSignals func()
	start       time.Time

	root string // repository root
	dir  string // the demo's own dir: git repository, saved logs
	bins *stack.BinaryPaths
	kube *stack.Kube
	argo *stack.ArgoCD
	side *stack.Process
	repo *stack.GitRepo
	// proxyAddr and token: the UI proxy extension backend's address and token.
	proxyAddr, token string
	// extDir is the panel's folder under /tmp/extensions; uiPassword is uiUser's.
	extDir, uiPassword string
}

func (d *demo) run() error {
	var err error
	if d.root, err = stack.RepoRoot(); err != nil {
		return err
	}
	if d.bins, err = stack.Binaries(); err != nil {
		return fmt.Errorf("%w\n(`make demo` builds them; `make deps` installs etcd, redis and git)", err)
	}
	sidecarBin := filepath.Join(d.root, "bin", "gitops-service")
	if _, err := os.Stat(sidecarBin); err != nil {
		return fmt.Errorf("%s not found: run `make build` (or `make demo`, which builds it)", sidecarBin)
	}
	if d.dir, err = os.MkdirTemp("", "gitops-demo-"); err != nil {
		return err
	}
	fmt.Printf("GitOps Service demo: Kubernetes %s, Argo CD %s and the gitops-service sidecar, all local (files in %s)\n\n",
		stack.KubeVersion, stack.ArgoCDVersion, d.dir)

	if err := d.step("starting etcd, kube-apiserver, kube-controller-manager (no kubelet: Pods are reported running, nothing is executed)", func() (err error) {
		d.kube, err = stack.StartKube(d.ctx, stack.KubeOptions{Name: "demo", ControllerManager: true,
			Controllers: append(append([]string{}, stack.DefaultControllers...), stack.WorkloadControllers...)})
		if err != nil {
			return err
		}
		return d.kube.RunPods(d.ctx, "")
	}); err != nil {
		return err
	}
	if err := d.step("starting Argo CD (redis, repo-server, application-controller, applicationset-controller, server)", func() (err error) {
		// The UI panel's API goes through argocd-server's proxy extension.
		d.argo, err = stack.StartArgoCD(d.ctx, d.kube, stack.ArgoOptions{ExtraCmdParams: map[string]string{"server.enable.proxy.extension": "true"}})
		return err
	}); err != nil {
		return err
	}
	if err := d.step("installing the GitOps Service CRDs from manifests/crd", func() error {
		return d.kube.InstallCRDs(d.ctx, filepath.Join(d.root, "manifests", "crd"))
	}); err != nil {
		return err
	}
	if err := d.step("starting the sidecar bin/gitops-service", func() error { return d.startSidecar(sidecarBin) }); err != nil {
		return err
	}
	if err := d.step("creating a git repository with manifests/samples/guestbook/ as "+appPath+"/ and manifests/samples/appstudio/gitops/ at its root", d.createRepo); err != nil {
		return err
	}

	deployStart := time.Now()
	if err := d.deploySample(); err != nil {
		return err
	}
	if err := d.waitSynced(); err != nil {
		return err
	}
	fmt.Printf("\n==> deployed %.1fs after the kubectl apply (%.0fs in all); what Argo CD put into namespace %s:\n",
		time.Since(deployStart).Seconds(), time.Since(d.start).Seconds(), tenant)
	if err := d.show("-n", tenant, "get", "configmap,service"); err != nil {
		return err
	}
	if err := d.appStudio(); err != nil {
		return err
	}
	// "applications" alone would be the appstudio.redhat.com kind, also installed.
	if err := d.show("-n", "argocd", "get", "applications.argoproj.io"); err != nil {
		return err
	}
	if err := d.step("adding the GitOps Service panel to Argo CD's web UI", d.startUI); err != nil {
		return err
	}
	if os.Getenv("DEMO_EXIT") == "1" {
		fmt.Println("\nDEMO_EXIT=1: stopping")
		return nil
	}
	d.printHowTo()
	return d.waitForever()
}

// step prints what is starting, runs f and prints how long it took.
func (d *demo) step(what string, f func() error) error {
	fmt.Printf("==> %s... ", what)
	t := time.Now()
	if err := f(); err != nil {
		if d.ctx.Err() != nil {
			fmt.Println("interrupted")
		} else {
			fmt.Println("FAILED")
		}
		return err
	}
	fmt.Printf("%.1fs\n", time.Since(t).Seconds())
	return nil
}

// startSidecar runs the sidecar the way it runs beside Argo CD in a cluster,
// with the admin kubeconfig instead of a service account (test/stack's
// start, as the tests use), and registers its ApplicationSet plugin generator
// with Argo CD as the install manifests do (SnapshotEnvironmentBindings use it).
func (d *demo) startSidecar(bin string) error {
	// The demo's repositories are file:// URLs on this machine (allowed by default).
	s, err := stack.StartSidecar(d.ctx, d.kube, stack.SidecarOptions{Bin: bin, ArgoRedisAddr: d.argo.RedisAddr})
	if s != nil && s.Process() != nil {
		d.side = s.Process()
	}
	if err != nil {
		return err
	}
	d.token, d.proxyAddr = s.UIProxyToken, strings.TrimPrefix(s.UIProxyURL, "http://")
	return d.argo.RegisterGenerator(d.ctx, argocd.GeneratorConfigMap, s.GeneratorURL, s.GeneratorToken)
}

// createRepo makes the git repository Argo CD reads (bare, file://) with the
// guestbook sample committed under appPath/.
func (d *demo) createRepo() error {
	var err error
	if d.repo, err = stack.NewGitRepo(d.dir, "apps"); err != nil {
		return err
	}
	files := map[string]string{}
	for src, dst := range map[string]string{
		filepath.Join(d.root, "manifests", "samples", "guestbook"):           appPath,
		filepath.Join(d.root, "manifests", "samples", "appstudio", "gitops"): ".",
	} {
		n := 0
		if err := filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, path)
			files[filepath.ToSlash(filepath.Join(dst, rel))] = string(b)
			n++
			return nil
		}); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no *.yaml in %s", src)
		}
	}
	if _, err := d.repo.Commit(files, "samples"); err != nil {
		return err
	}
	// So that the user can commit in the work clone without a git identity of their own.
	for _, kv := range [][2]string{{"user.name", "GitOps demo"}, {"user.email", "demo@gitops-service.invalid"}} {
		if out, err := exec.Command(d.bins.Git, "-C", d.repo.Work, "config", kv[0], kv[1]).CombinedOutput(); err != nil {
			return fmt.Errorf("git config %s: %w: %s", kv[0], err, out)
		}
	}
	return nil
}

// deploySample creates the tenant namespace and applies the sample
// GitOpsDeployment into it with kubectl, pointing it at the demo repository.
func (d *demo) deploySample() error {
	sample := filepath.Join(d.root, "manifests", "samples", "gitopsdeployment.yaml")
	b, err := os.ReadFile(sample)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte("REPO_URL")) {
		return fmt.Errorf("%s has no REPO_URL placeholder for the demo's repository URL", sample)
	}
	manifest := strings.ReplaceAll(string(b), "REPO_URL", d.repo.URL)
	fmt.Printf("\n==> deploying the sample into tenant namespace %s (kubectl: %s)\n", tenant, d.bins.Kubectl)
	if err := d.show("create", "namespace", tenant); err != nil {
		return err
	}
	fmt.Printf("$ sed 's|REPO_URL|%s|' manifests/samples/gitopsdeployment.yaml | kubectl -n %s apply -f -\n", d.repo.URL, tenant)
	out, err := d.kubectl(manifest, "-n", tenant, "apply", "-f", "-")
	fmt.Print(out)
	return err
}

// waitSynced shows `kubectl get gitopsdeployments` until the sample is Synced
// and Healthy.
func (d *demo) waitSynced() error {
	// Decided from the very table shown, so what is printed last is what ended the wait.
	synced := func(table string) (string, bool, error) {
		status := sampleStatus(table)
		return status, status == "Synced/Healthy", nil
	}
	return d.waitFor("the sidecar and Argo CD to sync it", []string{"-n", tenant, "get", "gitopsdeployments"}, synced, func(status string) string {
		syncSt, health, _ := strings.Cut(status, "/")
		why := fmt.Sprintf("the GitOpsDeployment %s/%s is not Synced and Healthy after %s (sync status %q, health %q)",
			tenant, sampleName, syncTimeout, syncSt, health)
		// Its true conditions say why, e.g. "ComparisonError: ... app path does not exist".
		conds, _ := d.kubectl("", "-n", tenant, "get", "gitopsdeployment", sampleName, "-o",
			`jsonpath={range .status.conditions[?(@.status=="True")]}{.type}: {.message}{"\n"}{end}`)
		if conds = strings.TrimSpace(conds); conds != "" {
			why += "; its conditions:\n  " + strings.ReplaceAll(conds, "\n", "\n  ")
		}
		return why
	})
}

// waitFor shows the table of `kubectl args` whenever the status check makes of
// it changes (and every 20s) until check says done, a component dies or
// syncTimeout passes; timedOut says why it was not done then.
func (d *demo) waitFor(what string, args []string, check func(table string) (status string, done bool, err error), timedOut func(status string) string) error {
	fmt.Printf("\n==> waiting for %s (up to %s)\n", what, syncTimeout)
	crashed := d.watchProcesses()
	deadline := time.Now().Add(syncTimeout)
	var last string
	var lastPrint time.Time
	for {
		table, err := d.kubectl("", args...)
		if err != nil {
			return err
		}
		status, done, err := check(table)
		if err != nil {
			return d.syncFailed(err.Error())
		}
		if status != last || done || time.Since(lastPrint) >= 20*time.Second {
			fmt.Printf("$ kubectl %s\n%s", strings.Join(args, " "), table)
			last, lastPrint = status, time.Now()
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return d.syncFailed(timedOut(status))
		}
		select {
		case <-d.ctx.Done():
			return d.ctx.Err()
		case p := <-crashed:
			return d.syncFailed(p.Name + " exited unexpectedly")
		case <-time.After(time.Second):
		}
	}
}

// sampleStatus reads "SYNC/HEALTH" of the sample from `kubectl get
// gitopsdeployments` output: each value starts where its column header does.
func sampleStatus(table string) string {
	lines := strings.Split(table, "\n")
	if len(lines) < 2 {
		return "/"
	}
	header := lines[0]
	syncCol, healthCol := strings.Index(header, "SYNC STATUS"), strings.Index(header, "HEALTH STATUS")
	field := func(line string, col int) string {
		if col < 0 || col >= len(line) {
			return ""
		}
		f := strings.Fields(line[col:])
		if len(f) == 0 || line[col] == ' ' {
			return ""
		}
		return f[0]
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == sampleName {
			return field(l, syncCol) + "/" + field(l, healthCol)
		}
	}
	return "/"
}

// syncFailed prints what there is to know about a sample that did not deploy
// and returns the error that says where to look next.
func (d *demo) syncFailed(why string) error {
	w := os.Stderr
	fmt.Fprintf(w, "\n==> %s; last lines of each component's log:\n", why)
	for _, p := range d.processes() {
		n := 25
		if p == d.side {
			n = 80
		}
		p.WriteLog(w, n)
	}
	fmt.Fprintln(w, "\n==> what the API server holds:")
	for _, args := range [][]string{
		{"-n", tenant, "get", "gitopsdeployment", sampleName, "-o", "yaml"},
		{"-n", tenant, "get", "snapshotenvironmentbindings,promotionruns", "-o", "yaml"},
		{"-n", "argocd", "get", "applications.argoproj.io", "-o", "yaml"},
		{"-n", tenant, "get", "events"},
	} {
		fmt.Fprintf(w, "$ kubectl %s\n", strings.Join(args, " "))
		out, _ := d.kubectl("", args...)
		fmt.Fprint(w, out)
	}
	logs := filepath.Join(d.dir, "logs") // filled by cleanup
	return fmt.Errorf("%s\n"+
		"The component logs above say why; their full versions are in %s.\n"+
		"Look for errors in gitops-service.log first (the sidecar), then application-controller.log and repo-server.log (Argo CD)",
		why, logs)
}

// saveLogs copies every component's log into the demo dir (the stack's own
// dirs go away on stop) and returns where.
func (d *demo) saveLogs() string {
	dst := filepath.Join(d.dir, "logs")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return d.dir
	}
	for _, p := range d.processes() {
		if p == d.side {
			continue // copied below as gitops-service.log
		}
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			continue
		}
		_ = os.WriteFile(filepath.Join(dst, filepath.Base(p.LogPath)), b, 0o644)
	}
	if d.side != nil {
		if b, err := os.ReadFile(d.side.LogPath); err == nil {
			_ = os.WriteFile(filepath.Join(dst, "gitops-service.log"), b, 0o644)
		}
	}
	return dst
}

// processes lists every running component.
func (d *demo) processes() []*stack.Process {
	var ps []*stack.Process
	if d.kube != nil {
		ps = append(ps, d.kube.Processes()...)
	}
	if d.argo != nil {
		ps = append(ps, d.argo.Processes()...)
	}
	if d.side != nil {
		ps = append(ps, d.side)
	}
	return ps
}

// watchProcesses reports the first component that exits.
func (d *demo) watchProcesses() <-chan *stack.Process {
	ps := d.processes()
	ch := make(chan *stack.Process, len(ps))
	for _, p := range ps {
		go func() {
			<-p.Done()
			ch <- p
		}()
	}
	return ch
}

func (d *demo) printHowTo() {
	kbin, abin := filepath.Dir(d.bins.Kubectl), filepath.Dir(d.bins.ArgoCD)
	argoLogs := filepath.Join(d.argo.Dir, "logs")
	kubeLogs := filepath.Join(d.kube.Dir, "logs")
	fmt.Printf(`
Everything is running. In another terminal:

  export KUBECONFIG=%[1]s
  export PATH=%[2]s:%[3]s:$PATH     # kubectl and argocd as built by make test-stack
  kubectl -n %[4]s get gitopsdeployments -w

Change the app and watch it deploy (Argo CD polls the repository every 10s):

  cd %[5]s
  sed -i 's/Hello from the GitOps Service/Hello again/' %[6]s/configmap.yaml
  git commit -qam 'new greeting' && git push -q origin HEAD:main
  kubectl -n %[4]s get configmap guestbook-settings -o jsonpath='{.data.greeting}'

Argo CD's web UI with the GitOps Service panel (open an Application, click its top
node, tab "GitOps Service"; the header shows the environment and Snapshot):

  http://%[7]s    login: %[14]s / %[15]s (tenant %[4]s), or admin / %[13]s

and the argocd CLI:

  argocd login %[7]s --plaintext --username admin --password %[13]s
  argocd app list
  kubectl -n argocd get applications.argoproj.io    # plain "applications" are appstudio.redhat.com's

What the UI panel shows for an Application (argocd-server's proxy extension
adds these headers; here you play argocd-server):

  app=$(kubectl -n argocd get applications.argoproj.io -o name | head -1 | cut -d/ -f2)
  proj=$(kubectl -n argocd get applications.argoproj.io $app -o jsonpath='{.spec.project}')
  curl -s -H 'Gitops-Service-Token: %[11]s' -H "Argocd-Application-Name: argocd:$app" \
    -H "Argocd-Project-Name: $proj" http://%[12]s/api/v1/deployment

Logs: sidecar %[8]s, Argo CD %[9]s, Kubernetes %[10]s

Press Ctrl-C to stop everything.
`, d.kube.Kubeconfig, kbin, abin, tenant, d.repo.Work, appPath, d.argo.ServerAddr,
		d.side.LogPath, argoLogs, kubeLogs, d.token, d.proxyAddr, d.argo.AdminPassword, uiUser, d.uiPassword)
}

// waitForever waits for Ctrl-C (or SIGTERM), or for a component to die.
func (d *demo) waitForever() error {
	crashed := d.watchProcesses()
	select {
	case <-d.ctx.Done():
		fmt.Println()
		return nil
	case p := <-crashed:
		fmt.Fprintf(os.Stderr, "\n%s exited unexpectedly; last lines of its log:\n", p.Name)
		p.WriteLog(os.Stderr, 60)
		return fmt.Errorf("%s exited; every component's full log is in %s", p.Name, filepath.Join(d.dir, "logs"))
	}
}

// cleanup stops every component (sidecar first) and removes the demo dir
// unless something failed. It reports whether the demo was interrupted.
func (d *demo) cleanup(runErr error) (interrupted bool) {
	interrupted = d.ctx.Err() != nil
	d.stopSignals() // cancels d.ctx; a second Ctrl-C now kills the demo at once
	if d.dir == "" {
		return interrupted
	}
	failed := runErr != nil && !interrupted
	if failed && d.kube != nil {
		d.saveLogs() // the stack removes its own dirs on stop
	}
	fmt.Print("==> stopping everything... ")
	t := time.Now()
	d.side.Stop()
	d.argo.Stop()
	d.kube.Stop()
	if d.extDir != "" {
		os.RemoveAll(d.extDir)
	}
	fmt.Printf("%.1fs\n", time.Since(t).Seconds())
	if failed {
		fmt.Fprintf(os.Stderr, "kept %s (component logs, git repository) for a look\n", d.dir)
		return interrupted
	}
	os.RemoveAll(d.dir)
	return interrupted
}

// kubectl runs the cached kubectl against the demo cluster and returns its
// combined output.
func (d *demo) kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(d.ctx, d.bins.Kubectl, append([]string{"--kubeconfig", d.kube.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	out = dropFinalizerWarning(out)
	if err != nil {
		if d.ctx.Err() != nil {
			return string(out), d.ctx.Err()
		}
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// show prints a kubectl command line and runs it, printing its output.
func (d *demo) show(args ...string) error {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	out, err := d.kubectl("", args...)
	if err != nil {
		return err
	}
	fmt.Print(out)
	return nil
}

// dropFinalizerWarning removes the API server's advice to put a "/" in
// finalizer names, which the sample's resources-finalizer.managed-gitops.redhat.com
// (named like Argo CD's own) draws on every apply: noise in a demo.
func dropFinalizerWarning(out []byte) []byte {
	var keep [][]byte
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("Warning: metadata.finalizers: ")) {
			keep = append(keep, l)
		}
	}
	return bytes.Join(keep, nil)
}
