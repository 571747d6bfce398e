package sidecar

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonKubernetesTooOld is the Warning Event on the sidecar's Pod when the
// API server lacks what the install needs.
const ReasonKubernetesTooOld = "KubernetesTooOld"

// setupArgoSettings adds the keeper of our keys in Argo CD's ConfigMaps (not
// with --argocd-settings=off) and the start-up check of the API server.
func setupArgoSettings(mgr ctrl.Manager, cfg *rest.Config, o Options) error {
	event := podEvents(mgr.GetEventRecorderFor("gitops-service"), o.Pod)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		checkKubernetes(cfg, event)
		return nil
	})); err != nil {
		return err
	}
	if o.ArgoSettings.Mode == "" || o.ArgoSettings.Mode == argocdsettings.Off {
		return nil
	}
	if err := o.ArgoSettings.Names.Validate(); err != nil {
		return err
	}
	return mgr.Add(&argocdsettings.Keeper{
		Client:    mgr.GetClient(),
		Reader:    mgr.GetAPIReader(),
		Namespace: o.ArgoNamespace,
		Names:     o.ArgoSettings.Names,
		Mode:      o.ArgoSettings.Mode,
		Interval:  o.ArgoSettings.Interval,
		Events:    event,
		Log:       ctrl.Log.WithName("argocd-settings"),
	})
}

// checkKubernetes says, in the log and an Event on the sidecar's Pod, when the
// API server lacks ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1,
// Kubernetes 1.30): manifests/install's admission policies (who approved and
// who requested a promotion) are then not enforced, or not even applied.
func checkKubernetes(cfg *rest.Config, event *kernel.ObjectEvents) {
	log := ctrl.Log.WithName("kubernetes")
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		log.Error(err, "checking the Kubernetes version")
		return
	}
	version := "unknown"
	if v, err := dc.ServerVersion(); err == nil {
		version = v.GitVersion
	}
	missing := MissingAPIs(dc)
	if len(missing) == 0 {
		log.Info("the API server has every API the install needs", "version", version)
		return
	}
	msg := fmt.Sprintf("Kubernetes %s lacks %v: the GitOps Service needs Kubernetes 1.30 or later, where manifests/install's ValidatingAdmissionPolicies (promotion-approvals.yaml, promotion-requesters.yaml) check who approves and who requests a promotion; without them those fields are not verified", version, missing)
	log.Error(nil, msg)
	event.Warning(ReasonKubernetesTooOld, msg)
}

// MissingAPIs are the APIs the install needs that the server does not serve.
func MissingAPIs(dc discovery.ServerResourcesInterface) []string {
	var missing []string
	need := map[string][]string{
		"admissionregistration.k8s.io/v1": {"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
	}
	for gv, resources := range need {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		served := map[string]bool{}
		if err == nil {
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
		}
		for _, r := range resources {
			if !served[r] {
				missing = append(missing, gv+" "+r)
			}
		}
	}
	return missing
}
