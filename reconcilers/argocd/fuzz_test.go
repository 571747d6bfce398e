package argocd

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// FuzzApplication: whatever a tenant writes in a GitOpsDeployment, the
// translation keeps the Application inside the target it was given (server,
// namespace, project), keeps the name the clients rely on, marks it as ours, and
// survives the trip through JSON unchanged.
func FuzzApplication(f *testing.F) {
	f.Add("https://git.example.com/a.git", "guestbook", "main", "automated", "CreateNamespace=true", "jane", "env", "ns")
	f.Add("", "/", "", "manual", "", "", "", "")
	f.Add("file:///tmp/x", "../../etc", "HEAD~1", "Automated", "CreateNamespace=true,Replace=true", "kube-system", "../x", "*")
	f.Add("ssh://git@host:22/r", "a\x00b", "\xff", "", "Prune=false", "ns/with/slash", "e\n", "a b")
	f.Fuzz(func(t *testing.T, repo, path, rev, typ, option, destNS, env, targetNS string) {
		gd := &v1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "gd", UID: types.UID("uid-1")},
			Spec: v1.GitOpsDeploymentSpec{
				Source:      v1.ApplicationSource{RepoURL: repo, Path: path, TargetRevision: rev},
				Destination: v1.ApplicationDestination{Environment: env, Namespace: destNS},
				Type:        v1.GitOpsDeploymentSpecType(typ),
				SyncPolicy:  &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOption(option)}},
			},
		}
		target := Target{Server: LocalServer, Namespace: targetNS, Project: ProjectName("ns-uid")}
		app := Application("argocd", gd, target)
		if app.Name != "gitopsdepl-uid-1" || app.Namespace != "argocd" {
			t.Fatalf("name/namespace %s/%s", app.Namespace, app.Name)
		}
		if app.Spec.Destination.Server != target.Server || app.Spec.Destination.Namespace != target.Namespace || app.Spec.Project != target.Project {
			t.Fatalf("destination %+v / project %q escaped the target %+v", app.Spec.Destination, app.Spec.Project, target)
		}
		if !ownership.IsOwnedBy(app.Labels, ownership.KindGitOpsDeployment, "uid-1") {
			t.Fatalf("not marked as ours: %v", app.Labels)
		}
		automated := app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.Automated != nil
		if automated != (gd.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated) {
			t.Fatalf("type %q gave automated=%v", typ, automated)
		}
		for _, s := range []string{repo, path, rev, typ, option, destNS, env, targetNS} {
			if !utf8.ValidString(s) {
				return // the API server only stores valid UTF-8; JSON would rewrite it
			}
		}
		raw, err := json.Marshal(app)
		if err != nil {
			t.Fatal(err)
		}
		back := &argov1alpha1.Application{}
		if err := json.Unmarshal(raw, back); err != nil {
			t.Fatal(err)
		}
		if !Equal(back.Spec, app.Spec) {
			t.Fatalf("spec changed through JSON")
		}
	})
}
