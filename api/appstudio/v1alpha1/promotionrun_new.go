package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The three ways a PromotionRun is made — by a person (kubectl plugin, argocd
// CLI, panel), as a person's rollback, and as the rollback an Environment asks
// for when a promotion fails — built here so that every client names and
// labels them one way.

// NewPromotion is the promotion of snapshot (of application app) asked for by
// by: to the Environment to, or, when to is "", automated from the Environment
// from ("" for the root Environments). Its name is generated: <snapshot>-to-<env>-xxxxx
// or <snapshot>-promote-xxxxx.
func NewPromotion(ns, app, snapshot, to, from string, by *Requester) *PromotionRun {
	run := &PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec:       PromotionRunSpec{Snapshot: snapshot, Application: app, RequestedBy: by},
	}
	if to != "" {
		run.GenerateName = GenerateName(snapshot + "-to-" + to)
		run.Spec.ManualPromotion = &ManualPromotionConfiguration{TargetEnvironment: to}
		run.Labels = runLabels(app, to)
	} else {
		run.GenerateName = GenerateName(snapshot + "-promote")
		run.Spec.AutomatedPromotion = &AutomatedPromotionConfiguration{InitialEnvironment: from}
		run.Labels = runLabels(app, "")
	}
	return run
}

// NewRollback is the rollback of snapshot, bound for app in env, out of env
// (to the last other Snapshot verified there), asked for by by. Its name is
// generated: <app>-<env>-rollback-xxxxx.
func NewRollback(ns, app, env, snapshot string, by *Requester) *PromotionRun {
	return &PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: GenerateName(app + "-" + env + "-rollback"), Labels: runLabels(app, env)},
		Spec: PromotionRunSpec{Snapshot: snapshot, Application: app, RequestedBy: by,
			ManualPromotion: &ManualPromotionConfiguration{TargetEnvironment: env, Rollback: true}},
	}
}

// NewAutomaticRollback is the rollback that Environment env asks for when run
// fails there. Its name is fixed, <run>-rollback (shortened with a hash of the
// run's name when too long), so that asking twice creates it once.
func NewAutomaticRollback(run *PromotionRun, env string) *PromotionRun {
	name := run.Name + "-rollback"
	if len(name) > validation.DNS1123SubdomainMaxLength {
		sum := sha256.Sum256([]byte(run.Name))
		name = run.Name[:validation.DNS1123SubdomainMaxLength-len("-rollback")-17] + "-" + hex.EncodeToString(sum[:8]) + "-rollback"
	}
	return &PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: name, Labels: runLabels(run.Spec.Application, env)},
		Spec: PromotionRunSpec{Snapshot: run.Spec.Snapshot, Application: run.Spec.Application,
			ManualPromotion: &ManualPromotionConfiguration{TargetEnvironment: env, Rollback: true}},
	}
}

// GenerateName is base as a generateName prefix: at most 200 characters (the
// API server appends 5), ending in "-".
func GenerateName(base string) string {
	if len(base) > 200 {
		base = base[len(base)-200:]
	}
	return strings.Trim(base, "-.") + "-"
}

// runLabels labels a run with its application and Environment where they are
// label values (names up to 253 characters are not; the spec names them anyway).
func runLabels(app, env string) map[string]string {
	l := map[string]string{}
	if len(validation.IsValidLabelValue(app)) == 0 {
		l[LabelApplication] = app
	}
	if env != "" && len(validation.IsValidLabelValue(env)) == 0 {
		l[LabelEnvironment] = env
	}
	if len(l) == 0 {
		return nil
	}
	return l
}
