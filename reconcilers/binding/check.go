package binding

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Bounds of an env list, as the CRDs' (api/appstudio EnvVarPair) markers say.
const (
	MaxEnv          = 128
	MaxEnvNameLen   = 256
	MaxEnvValueLen  = 16384
	maxShownInError = 64
)

// Check says why Argo CD must not be given params (a *kernel.Refusal whose
// reason is a bindingConditions reason), or nil. The binding reconciler
// checks before it writes the ApplicationSet and the plugin generator before
// it answers, so an ApplicationSet left from before a refusal gets nothing
// the reconciler would refuse. allowFile is the admin's switch for file://
// repositories.
func Check(params []argocd.GeneratorParams, allowFile bool) error {
	for _, p := range params {
		if msg := textProblem(p.Component); msg != "" {
			return Refuse(ReasonInvalidParameter, "component %s", msg)
		}
		// Every value reaches Argo CD's templates and the Application: none
		// may carry control or line-break characters, whatever the template
		// does with it (first: the repository checks below refuse
		// them too, as a repository problem).
		v := reflect.ValueOf(p)
		for i := 0; i < v.NumField(); i++ {
			key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if msg := textProblem(v.Field(i).String()); msg != "" {
				return Refuse(ReasonInvalidParameter, "component %v: %s %s", p.Component, key, msg)
			}
		}
		// Refused before the project lists it: Argo CD then refuses the
		// generated Application too.
		if msg := argocd.CheckRepoURL(p.RepoURL, allowFile); msg != "" {
			return kernel.Refuse(appstudiov1alpha1.BindingReasonGitOpsRepoNotReady, "component %v: GitOps repository: %s", p.Component, msg)
		}
		// The path and branch go to the repo-server as they are: refused like a
		// GitOpsDeployment's (a path leaving the repository, an option-like branch).
		if msg := argocd.CheckPath(p.Path); msg != "" {
			return kernel.Refuse(appstudiov1alpha1.BindingReasonGitOpsRepoNotReady, "component %v: GitOps repository: %s", p.Component, msg)
		}
		if msg := argocd.CheckRevision(p.TargetRevision); msg != "" {
			return kernel.Refuse(appstudiov1alpha1.BindingReasonGitOpsRepoNotReady, "component %v: GitOps repository branch: %s", p.Component, msg)
		}
		if strings.Trim(p.Replicas, "0123456789") != "" || len(p.Replicas) > 9 {
			return Refuse(ReasonInvalidReplicas, "component %v: replicas %s is not a count", p.Component, shown(p.Replicas))
		}
		// The images become the argument name=image of kustomize's
		// "edit set image": no option, no second '='. Argo CD expands $VAR
		// and ${VAR} in it first (its build environment: the tenant's path,
		// repository URL, ...), which would bring both back; no image
		// reference has a '$'.
		for key, img := range map[string]string{"image": p.Image, "imageName": p.ImageName} {
			if strings.HasPrefix(img, "-") || strings.ContainsAny(img, "= $") {
				return Refuse(ReasonInvalidImage,
					"component %v: %s %s is not an image reference (no leading '-', '=', '$' or blanks)", p.Component, key, shown(img))
			}
		}
	}
	return nil
}

// checkEnv says why an env list (where says whose) is refused, or nil.
func checkEnv(where string, env []appstudiov1alpha1.EnvVarPair) error {
	refuse := func(format string, args ...any) error {
		return Refuse(ReasonInvalidEnv, "%s: %s", where, fmt.Sprintf(format, args...))
	}
	if len(env) > MaxEnv {
		return refuse("%d env variables, at most %d", len(env), MaxEnv)
	}
	for i, e := range env {
		switch {
		case e.Name == "" || len(e.Name) > MaxEnvNameLen:
			return refuse("env[%d].name must have 1 to %d characters", i, MaxEnvNameLen)
		case strings.IndexFunc(e.Name, func(r rune) bool { return r < ' ' || r > '~' || r == '=' }) >= 0:
			return refuse("env[%d].name %s must be printable ASCII without '='", i, shown(e.Name))
		case len(e.Value) > MaxEnvValueLen:
			return refuse("env[%d] (%s) value has %d bytes, at most %d", i, e.Name, len(e.Value), MaxEnvValueLen)
		}
		if msg := textProblem(e.Value); msg != "" {
			return refuse("env[%d] (%s) value %s", i, e.Name, msg)
		}
	}
	return nil
}

// textProblem says what makes s unfit for a value of a generated Argo CD
// object, or "": not UTF-8, control characters (NEL among them) and Unicode
// line or paragraph separators, which YAML parsers take for line breaks.
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%s is not UTF-8", shown(s))
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("%s has the control or line-break character %U", shown(s), r)
	}
	return ""
}

// shown quotes s for a message, cut short: messages land in conditions and
// Events, which are bounded.
func shown(s string) string {
	if utf8.RuneCountInString(s) > maxShownInError {
		return fmt.Sprintf("%q...", string([]rune(s)[:maxShownInError]))
	}
	return fmt.Sprintf("%q", s)
}
