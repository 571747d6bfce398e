package argocd

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	managedgitopsv1alpha1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// ApplicationName returns the name of the Application of a GitOpsDeployment
// (the API package's rule, shared with the CLI).
func ApplicationName(gitopsDeploymentUID string) string {
	return managedgitopsv1alpha1.ApplicationName(gitopsDeploymentUID)
}

// Target is where a GitOpsDeployment's Application deploys, already resolved and
// checked by the caller (server URL of the local cluster or of a ManagedEnvironment).
type Target struct {
	Server    string
	Namespace string
	Project   string
}

// The sync policy of automated deployments, as in the original service.
const (
	syncOptionPrunePropagation = "PrunePropagationPolicy=background"
	retryLimit                 = -1
	retryDuration              = "5s"
	retryFactor                = 2
	retryMaxDuration           = "3m"
)

// Application translates a GitOpsDeployment into its Argo CD Application.
func Application(argoNamespace string, gd *managedgitopsv1alpha1.GitOpsDeployment, t Target) *argov1alpha1.Application {
	labels, annotations := ownership.Meta(ownership.KindGitOpsDeployment, gd.Namespace, gd.Name, string(gd.UID))
	return &argov1alpha1.Application{
		TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ApplicationName(string(gd.UID)),
			Namespace:   argoNamespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: ApplicationSpec(gd, t),
	}
}

// ApplicationSpec is the part of the Application the sidecar owns and keeps in line.
func ApplicationSpec(gd *managedgitopsv1alpha1.GitOpsDeployment, t Target) argov1alpha1.ApplicationSpec {
	src := gd.Spec.Source
	return argov1alpha1.ApplicationSpec{
		Source: &argov1alpha1.ApplicationSource{
			RepoURL:        src.RepoURL,
			Path:           src.Path,
			TargetRevision: src.TargetRevision,
		},
		Destination: argov1alpha1.ApplicationDestination{Server: t.Server, Namespace: t.Namespace},
		Project:     t.Project,
		SyncPolicy:  syncPolicy(gd.Spec.Type == managedgitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated, userOptions(gd)),
	}
}

func userOptions(gd *managedgitopsv1alpha1.GitOpsDeployment) argov1alpha1.SyncOptions {
	var out argov1alpha1.SyncOptions
	if gd.Spec.SyncPolicy != nil {
		for _, o := range gd.Spec.SyncPolicy.SyncOptions {
			out = append(out, string(o))
		}
	}
	return out
}

// syncPolicy is the original service's: automated deployments prune, self-heal
// and retry forever with backoff; manual ones only carry the user's options.
func syncPolicy(automated bool, userOptions argov1alpha1.SyncOptions) *argov1alpha1.SyncPolicy {
	if !automated {
		if len(userOptions) == 0 {
			return nil
		}
		return &argov1alpha1.SyncPolicy{SyncOptions: userOptions}
	}
	return &argov1alpha1.SyncPolicy{
		Automated:   &argov1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true, AllowEmpty: true},
		SyncOptions: append(argov1alpha1.SyncOptions{syncOptionPrunePropagation}, userOptions...),
		Retry: &argov1alpha1.RetryStrategy{
			Limit: retryLimit,
			Backoff: &argov1alpha1.Backoff{
				Duration:    retryDuration,
				Factor:      ptr.To[int64](retryFactor),
				MaxDuration: retryMaxDuration,
			},
		},
	}
}
