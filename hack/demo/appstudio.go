package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitops-service/gitops-service/reconcilers/provisioner/namespace"
)

// appStudio applies the App Studio sample (manifests/samples/appstudio): the
// binding deploys Snapshot shop-v1 to Environment dev, then a PromotionRun
// promotes shop-v2 there. Each wait shows the kubectl table whenever it changes.
func (d *demo) appStudio() error {
	samples := filepath.Join("manifests", "samples", "appstudio")
	fmt.Printf("\n==> App Studio: application shop, component web, Environment dev, Snapshot shop-v1 and its SnapshotEnvironmentBinding\n")
	if err := d.show("-n", tenant, "apply", "-f", filepath.Join(d.root, samples, "appstudio.yaml")); err != nil {
		return err
	}
	// App Studio's application-service says where a Component's manifests are.
	gitops := fmt.Sprintf(`{"status":{"gitops":{"repositoryURL":%q,"branch":"main","context":"components/web/base"}}}`, d.repo.URL)
	if err := d.show("-n", tenant, "patch", "component", "web", "--subresource=status", "--type=merge", "-p", gitops); err != nil {
		return err
	}
	start := time.Now()
	if err := d.waitFor("the binding to deploy shop-v1 (2 replicas of quay.io/example/web:v1)",
		[]string{"-n", tenant, "get", "snapshotenvironmentbindings"},
		func(string) (string, bool, error) { return d.webRuns("quay.io/example/web:v1", "2") },
		func(status string) string {
			return "the web Deployment is not 2 available replicas of quay.io/example/web:v1: " + status
		}); err != nil {
		return err
	}
	fmt.Printf("\n==> deployed %.1fs after the kubectl apply\n", time.Since(start).Seconds())
	if err := d.show("-n", tenant, "get", "deployment", "web", "-o", "wide"); err != nil {
		return err
	}

	fmt.Printf("\n==> promoting Snapshot shop-v2 to dev with a PromotionRun\n")
	if err := d.show("-n", tenant, "apply", "-f", filepath.Join(d.root, samples, "promotionrun.yaml")); err != nil {
		return err
	}
	start = time.Now()
	if err := d.waitFor("the PromotionRun to complete",
		[]string{"-n", tenant, "get", "promotionruns"},
		func(string) (string, bool, error) {
			out, err := d.kubectl("", "-n", tenant, "get", "promotionrun", "shop-v2-to-dev", "-o",
				"jsonpath={.status.state}/{.status.completionResult}: {.status.environmentStatus[*].displayStatus}")
			if err != nil || !strings.HasPrefix(out, "Completed/") {
				return out, false, err
			}
			if !strings.HasPrefix(out, "Completed/Success") {
				return out, false, fmt.Errorf("the PromotionRun failed: %s", out)
			}
			return out, true, nil
		}, func(status string) string { return "the PromotionRun did not complete: " + status }); err != nil {
		return err
	}
	fmt.Printf("\n==> promoted %.1fs after the kubectl apply: dev runs shop-v2\n", time.Since(start).Seconds())
	if err := d.show("-n", tenant, "get", "promotionrun", "shop-v2-to-dev", "-o", "jsonpath={.status.environmentStatus}{\"\\n\"}"); err != nil {
		return err
	}
	if err := d.show("-n", tenant, "get", "deployment", "web", "-o", "wide"); err != nil {
		return err
	}
	return d.provisionedEnvironment()
}

// provisionedEnvironment applies manifests/samples/deploymenttargets: a
// DeploymentTargetClass of our namespace provisioner, a claim and an
// Environment through it, and a binding of shop-v2 to that Environment, and
// waits until web runs in the provisioned namespace.
func (d *demo) provisionedEnvironment() error {
	samples := filepath.Join(d.root, "manifests", "samples", "deploymenttargets")
	fmt.Printf("\n==> a provisioned Environment: DeploymentTargetClass isolation-level-namespace, claim and Environment staging, binding shop-staging\n")
	if err := d.show("apply", "-f", filepath.Join(samples, "deploymenttargetclass.yaml")); err != nil {
		return err
	}
	if err := d.show("-n", tenant, "apply", "-f", filepath.Join(samples, "environment.yaml"), "-f", filepath.Join(samples, "binding.yaml")); err != nil {
		return err
	}
	start := time.Now()
	// The class names it by the provisioner's default pattern.
	provisioned := namespace.DefaultNamespaceName(tenant, "staging")
	if err := d.waitFor("the binding to deploy shop-v2 into the provisioned namespace "+provisioned,
		[]string{"-n", tenant, "get", "deploymenttargetclaims,deploymenttargets"},
		func(string) (string, bool, error) {
			out, err := d.kubectl("", "-n", provisioned, "get", "deployment", "web", "--ignore-not-found",
				"-o", "jsonpath={.spec.template.spec.containers[0].image} {.status.availableReplicas}")
			return out, strings.HasPrefix(out, "quay.io/example/web:v2 ") && !strings.HasSuffix(out, " "), err
		}, func(status string) string {
			return "web does not run quay.io/example/web:v2 in " + provisioned + ": " + status
		}); err != nil {
		return err
	}
	fmt.Printf("\n==> deployed %.1fs after the kubectl apply\n", time.Since(start).Seconds())
	if err := d.show("-n", tenant, "get", "deploymenttargetclaims,deploymenttargets", "-o", "wide"); err != nil {
		return err
	}
	return d.show("-n", provisioned, "get", "deployment", "web", "-o", "wide")
}

// webRuns says whether the sample's Deployment runs image with replicas
// available; its status is the image and available replicas it has.
func (d *demo) webRuns(image, replicas string) (string, bool, error) {
	out, err := d.kubectl("", "-n", tenant, "get", "deployment", "web", "--ignore-not-found",
		"-o", "jsonpath={.spec.template.spec.containers[0].image} {.status.availableReplicas}")
	return out, out == image+" "+replicas, err
}
