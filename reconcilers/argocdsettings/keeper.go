package argocdsettings

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;patch,namespace=argocd,resourceNames=argocd-cm;argocd-cmd-params-cm;argocd-rbac-cm

// Mode is what the sidecar does with our settings (--argocd-settings).
type Mode string

const (
	// Ensure writes our keys and puts back any that go missing (an Argo CD
	// re-apply or upgrade) within Interval: manifests/install's way.
	Ensure Mode = "ensure"
	// Verify writes nothing and reports missing or different keys (log,
	// Warning Event on the sidecar's Pod, metric): for Argo CD installed by
	// Helm or its operator, which own these ConfigMaps and set our keys from
	// their values.
	Verify Mode = "verify"
	// Off neither writes nor checks.
	Off Mode = "off"
)

// ParseMode reads --argocd-settings.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Ensure, Verify, Off:
		return m, nil
	}
	return "", fmt.Errorf("--argocd-settings %q: ensure, verify or off", s)
}

// DefaultInterval is how often the keeper reads the three ConfigMaps: a key
// an Argo CD upgrade removed is back within it (three GETs each time; no
// watch, so the sidecar needs no list/watch on ConfigMaps).
const DefaultInterval = 10 * time.Second

// Reasons of the Events on the sidecar's Pod.
const (
	ReasonSettingsMissing = "ArgoCDSettingsMissing"
	ReasonSettingsWritten = "ArgoCDSettingsWritten"
	ReasonSettingsLeft    = "ArgoCDSettingsLeftAsSet"
)

var (
	missingGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitops_service_argocd_settings_missing",
		Help: "1 for each key the GitOps Service needs in Argo CD's ConfigMaps that is missing (state=missing, or configmap-missing) or set to another value (state=different), as last checked.",
	}, []string{"configmap", "key", "state"})
	registerOnce sync.Once
)

// Keeper checks our keys every Interval, and in Ensure mode applies them.
type Keeper struct {
	// Client applies (only in Ensure mode); Reader reads the ConfigMaps uncached.
	Client    client.Client
	Reader    client.Reader
	Namespace string
	Names     Names
	Mode      Mode
	Interval  time.Duration
	// Events records Events on the sidecar's Pod; nil: only the log.
	Events *kernel.ObjectEvents
	Log    logr.Logger

	// last is the last report, so an unchanged state is not logged again.
	last string
}

// NeedLeaderElection: one replica writes.
func (k *Keeper) NeedLeaderElection() bool { return true }

// Start checks at once, then every Interval until ctx ends.
func (k *Keeper) Start(ctx context.Context) error {
	registerOnce.Do(func() { ctrlmetrics.Registry.MustRegister(missingGauge) })
	interval := k.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := k.Check(ctx); err != nil && ctx.Err() == nil {
			k.Log.Error(err, "checking Argo CD's settings; trying again", "after", interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check reads each ConfigMap, applies our keys in Ensure mode and reports
// what is not as wanted.
func (k *Keeper) Check(ctx context.Context) error {
	desired, err := Desired(k.Names)
	if err != nil {
		return err
	}
	missingGauge.Reset()
	var problems, written, left []string
	var errs []error
	for _, s := range desired {
		cm := &corev1.ConfigMap{}
		if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: s.ConfigMap}, cm); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("reading %s/%s: %w", k.Namespace, s.ConfigMap, err))
				continue
			}
			// Never created here: without it Argo CD is not installed (or named otherwise).
			for _, key := range sortedKeys(s.Data) {
				missingGauge.WithLabelValues(s.ConfigMap, key, "configmap-missing").Set(1)
			}
			problems = append(problems, fmt.Sprintf("ConfigMap %s/%s does not exist (is Argo CD installed here, or are its ConfigMaps named otherwise: --argocd-cm, --argocd-cmd-params-cm, --argocd-rbac-cm?)", k.Namespace, s.ConfigMap))
			continue
		}
		p := PlanFor(cm, s.Data)
		if k.Mode == Ensure && !p.UpToDate {
			if err := k.apply(ctx, cm, p.Apply); err != nil {
				errs = append(errs, err)
			} else {
				if fixed := slices.Concat(p.Missing, without(p.Different, p.Theirs)); len(fixed) > 0 {
					written = append(written, s.ConfigMap+": "+strings.Join(fixed, ", "))
				}
				p.Missing, p.Different = nil, p.Theirs
			}
		}
		for _, key := range p.Missing {
			missingGauge.WithLabelValues(s.ConfigMap, key, "missing").Set(1)
		}
		for _, key := range p.Different {
			missingGauge.WithLabelValues(s.ConfigMap, key, "different").Set(1)
		}
		if k.Mode == Ensure {
			if len(p.Theirs) > 0 {
				left = append(left, s.ConfigMap+": "+strings.Join(p.Theirs, ", "))
			}
			continue
		}
		if len(p.Missing) > 0 {
			problems = append(problems, fmt.Sprintf("%s lacks %s", s.ConfigMap, strings.Join(p.Missing, ", ")))
		}
		if len(p.Different) > 0 {
			problems = append(problems, fmt.Sprintf("%s sets %s to other values", s.ConfigMap, strings.Join(p.Different, ", ")))
		}
	}
	if len(written) > 0 {
		msg := "wrote the GitOps Service's keys into Argo CD's ConfigMaps (" + strings.Join(written, "; ") + "); argocd-server and the applicationset controller read argocd-cmd-params-cm only when they start"
		k.Log.Info(msg)
		k.Events.Normal(ReasonSettingsWritten, msg)
	}
	report := strings.Join(problems, "; ")
	if len(left) > 0 {
		report += "|left:" + strings.Join(left, "; ")
	}
	if report != k.last {
		k.last = report
		if len(left) > 0 {
			msg := "left keys someone else set to other values as they are (" + strings.Join(left, "; ") + ")"
			k.Log.Info(msg)
			k.Events.Normal(ReasonSettingsLeft, msg)
		}
		if len(problems) > 0 {
			msg := "Argo CD's settings for the GitOps Service are not complete: " + strings.Join(problems, "; ")
			if k.Mode == Verify {
				msg += " (--argocd-settings=verify: set them where Argo CD's ConfigMaps are managed, docs/install.md)"
			}
			k.Log.Info(msg)
			k.Events.Warning(ReasonSettingsMissing, msg)
		}
	}
	return errorsJoin(errs)
}

// apply server-side applies data as our keys of cm, only to the version
// just read (resourceVersion): never creates Argo CD's ConfigMap and never
// writes over a change made meanwhile (the next check sees it).
func (k *Keeper) apply(ctx context.Context, cm *corev1.ConfigMap, data map[string]string) error {
	obj := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, ResourceVersion: cm.ResourceVersion},
		Data:       data,
	}
	if err := k.Client.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("applying our keys to %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

func without(all, drop []string) []string {
	var out []string
	for _, s := range all {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}
