package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func samplePreview(clean bool) *as.PromotionPreview {
	at := metav1.Now()
	pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop-v2-preview-x"},
		Spec: as.PromotionPreviewSpec{Snapshot: "shop-v2", Application: "shop", TargetEnvironment: "prod"}}
	pp.Status = as.PromotionPreviewStatus{CompletedAt: &at, Clean: clean,
		Components: []as.PreviewComponentSummary{
			{Name: "web", Added: 1, Changed: 1, Removed: 1, Unchanged: 2},
			{Name: "worker", Unchanged: 1},
		},
		Diff: `--- live/web/apps/Deployment prod/web
+++ preview/web/apps/Deployment prod/web
@@ -20,7 +20,7 @@
     spec:
       containers:
-      - image: quay.io/shop/web:v1
+      - image: quay.io/shop/web:v2
         name: app
--- live/web/ConfigMap prod/web-old
+++ /dev/null
@@ -1,4 +1,0 @@
-apiVersion: v1
-kind: ConfigMap
-metadata:
-  name: web-old
`}
	if !clean {
		pp.Status.Components[0].Errors = 2
		pp.Status.Components[0].DryRunErrors = []as.PreviewObjectError{
			{Kind: "Service", Namespace: "prod", Name: "web", Message: `services "web" is forbidden: exceeded quota: no-services`},
			{Kind: "rbac.authorization.k8s.io/ClusterRole", Name: "reader", Message: `clusterroles.rbac.authorization.k8s.io "reader" is forbidden`},
		}
		pp.Status.Components[1].RenderError = "rendering: kustomization.yaml not found"
		pp.Status.DiffTruncated = true
	}
	return pp
}

func TestGoldenPreview(t *testing.T) {
	var out bytes.Buffer
	writePreview(&out, samplePreview(true), false)
	golden(t, "preview", out.String())
	assert.NotContains(t, out.String(), "\x1b[", "no colors when piped")

	out.Reset()
	writePreview(&out, samplePreview(false), false)
	golden(t, "preview-errors", out.String())

	out.Reset()
	writePreview(&out, samplePreview(true), true)
	golden(t, "preview-color", out.String())
	assert.Contains(t, out.String(), "\x1b[31m-      - image: quay.io/shop/web:v1\x1b[0m\n")
	assert.Contains(t, out.String(), "\x1b[32m+      - image: quay.io/shop/web:v2\x1b[0m\n")
}

func TestPreviewProblems(t *testing.T) {
	assert.Equal(t, "2 dry-run error(s), 1 component(s) not rendered", previewProblems(samplePreview(false)))
	assert.Equal(t, "see its status", previewProblems(samplePreview(true)))
}

// sampleRelease is a release preview: staging clean, prod with the
// single preview's errors, qa not previewed.
func sampleRelease() *as.PromotionPreview {
	single, broken := samplePreview(true), samplePreview(false)
	pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop-v2-preview-y"},
		Spec: as.PromotionPreviewSpec{Snapshot: "shop-v2", Application: "shop", AllEnvironments: true}}
	hash := func(c byte) string { return "sha256:" + string(bytes.Repeat([]byte{c}, 64)) }
	staging := as.PreviewEnvironmentResult{Name: "staging", Clean: true, Components: single.Status.Components, Diff: single.Status.Diff}
	staging.Components[0].RenderHash, staging.Components[1].RenderHash = hash('a'), hash('b')
	prod := as.PreviewEnvironmentResult{Name: "prod", Components: broken.Status.Components, Diff: broken.Status.Diff, DiffTruncated: true}
	prod.Components[0].RenderHash = hash('c')
	pp.Status = as.PromotionPreviewStatus{CompletedAt: single.Status.CompletedAt, Environments: []as.PreviewEnvironmentResult{
		staging, prod, {Name: "qa", Error: `the cluster credentials of Environment "qa" are not ready`}}}
	return pp
}

func TestGoldenReleasePreview(t *testing.T) {
	var out bytes.Buffer
	writePreview(&out, sampleRelease(), false)
	golden(t, "preview-release", out.String())
	assert.Contains(t, out.String(), "staging      web        sha256:aaaaaaaaaaaa")
	assert.Contains(t, out.String(), "== Environment prod\n")
	assert.Contains(t, out.String(), "not previewed: the cluster credentials")
	assert.Equal(t, "1 Environment(s) not previewed, 2 dry-run error(s), 1 component(s) not rendered", previewProblems(sampleRelease()))
	assert.Equal(t, "every Environment", previewedTo(sampleRelease()))
}
