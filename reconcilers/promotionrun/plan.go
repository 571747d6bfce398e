package promotionrun

import (
	"fmt"
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// blocker names the run that holds this one up, or "": an Active run of the
// same application, or an older one not yet completed. Runs of another
// namespace never count (tenants do not hold each other up), nor do deleted ones.
func blocker(run *as.PromotionRun, runs []as.PromotionRun) string {
	for i := range runs {
		o := &runs[i]
		if o.UID == run.UID || o.Namespace != run.Namespace || o.Spec.Application != run.Spec.Application ||
			o.Status.State == as.PromotionRunStateCompleted || !o.DeletionTimestamp.IsZero() {
			continue
		}
		if o.Status.State == as.PromotionRunStateActive || kernel.Older(o, run) {
			return o.Name
		}
	}
	return ""
}

// nextLevel is the next depth of an automated promotion: the children of
// level in the Environment graph whose strategy is AppStudioAutomated, sorted
// by name. Manual children are where the promotion stops; they are returned
// apart so the run can say so. Environments already promoted to (a cycle in
// the digraph) are never visited twice.
func nextLevel(envs []as.Environment, level, visited []string) (automated, manual []string) {
	g := as.NewEnvironmentGraph(envs)
	for _, parent := range level {
		for _, name := range g.Children(parent) {
			switch {
			case slices.Contains(visited, name):
			case g.Environment(name).Spec.DeploymentStrategy == as.DeploymentStrategyAppStudioAutomated:
				automated = append(automated, name)
			default:
				manual = append(manual, name)
			}
		}
	}
	slices.Sort(automated)
	slices.Sort(manual)
	return automated, manual
}

// verdict says whether every component of the Snapshot runs its image through
// the binding's Applications: Synced, Healthy, the Application generated for
// that image (so its status is not that of the previous Snapshot) and the image
// among the live images Argo CD reports. Otherwise it says what is missing.
func verdict(snap *as.Snapshot, apps []argov1alpha1.Application) (bool, string) {
	byComponent := map[string]*argov1alpha1.Application{}
	for i := range apps {
		byComponent[apps[i].Labels[as.LabelComponent]] = &apps[i]
	}
	done := 0
	var waiting []string
	for _, c := range snap.Spec.Components {
		app := byComponent[c.Name]
		switch {
		case app == nil:
			waiting = append(waiting, c.Name+": no GitOpsDeployment yet")
		case !generatedFor(app, c.ContainerImage):
			waiting = append(waiting, c.Name+": not yet generated for "+c.ContainerImage)
		case app.Status.Sync.Status != argov1alpha1.SyncStatusCodeSynced:
			waiting = append(waiting, fmt.Sprintf("%s: %s", c.Name, orUnknown(string(app.Status.Sync.Status))))
		case app.Status.Health.Status != health.HealthStatusHealthy:
			waiting = append(waiting, fmt.Sprintf("%s: %s", c.Name, orUnknown(string(app.Status.Health.Status))))
		case !slices.Contains(app.Status.Summary.Images, c.ContainerImage):
			waiting = append(waiting, c.Name+": "+c.ContainerImage+" not running yet")
		default:
			done++
		}
	}
	if len(waiting) == 0 {
		return true, msgSuccess
	}
	return false, fmt.Sprintf("%d of %d components deployed; waiting for %s", done, len(snap.Spec.Components), strings.Join(waiting, ", "))
}

// generatedFor says whether the Application's kustomize images set image.
func generatedFor(app *argov1alpha1.Application, image string) bool {
	src := app.Spec.Source
	if src == nil || src.Kustomize == nil {
		return false
	}
	for _, img := range src.Kustomize.Images {
		if strings.HasSuffix(string(img), "="+image) {
			return true
		}
	}
	return false
}

func orUnknown(s string) string {
	if s == "" {
		return string(health.HealthStatusUnknown)
	}
	return s
}
