package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// An admin's ArgoCD with entries of its own in every list our file sets,
// keys of its own in extraConfig and cmdParams, and one of our flags with
// another value.
const adminArgoCD = `apiVersion: argoproj.io/v1beta1
kind: ArgoCD
metadata:
  name: argocd
  annotations:
    platform: kept
spec:
  extraConfig:
    timeout.reconciliation: 240s
  cmdParams:
    controller.status.processors: "30"
    applicationsetcontroller.k8s.client.qps: "500"
  server:
    replicas: 2
    extraCommandArgs: [--insecure]
    volumes:
    - name: platform
      emptyDir: {}
    volumeMounts:
    - name: platform
      mountPath: /platform
  applicationSet:
    extraCommandArgs: [--concurrent-reconciliations=50, --debug]
    env:
    - name: PLATFORM
      value: kept
`

// parse reads an ArgoCD object as the API server's client gives it.
func parse(t *testing.T, doc string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, utiljson.Unmarshal(j, &obj))
	return obj
}

func TestOperatorSettingsMergeKeepsTheAdminsAndRemoveTakesOutOurs(t *testing.T) {
	ours, err := ourArgoCDSpec()
	require.NoError(t, err)
	admin := parse(t, adminArgoCD)
	obj := deepCopy(admin).(map[string]any)

	r, err := mergeOperatorSettings(obj, ours)
	require.NoError(t, err)
	spec := obj["spec"].(map[string]any)
	// Every entry of the admin's stays, in its place.
	server := spec["server"].(map[string]any)
	appset := spec["applicationSet"].(map[string]any)
	assert.Equal(t, "--insecure", server["extraCommandArgs"].([]any)[0])
	assert.Contains(t, server["extraCommandArgs"], "--enable-proxy-extension")
	assert.Equal(t, "platform", server["volumes"].([]any)[0].(map[string]any)["name"])
	assert.Equal(t, "gitops-service-ui-extension", server["volumes"].([]any)[1].(map[string]any)["name"])
	assert.Equal(t, "/platform", server["volumeMounts"].([]any)[0].(map[string]any)["mountPath"])
	assert.Equal(t, "/tmp/extensions/gitops-service", server["volumeMounts"].([]any)[1].(map[string]any)["mountPath"])
	assert.Equal(t, int64(2), server["replicas"])
	// Our --concurrent-reconciliations is the admin's with another value: theirs stays, reported.
	assert.Equal(t, []any{"--concurrent-reconciliations=50", "--debug"}, appset["extraCommandArgs"])
	assert.Contains(t, r.Kept, "spec.applicationSet.extraCommandArgs[--concurrent-reconciliations]")
	assert.Equal(t, map[string]any{"name": "PLATFORM", "value": "kept"}, appset["env"].([]any)[0])
	assert.Len(t, appset["env"], 3)
	params := spec["cmdParams"].(map[string]any)
	assert.Equal(t, "500", params["applicationsetcontroller.k8s.client.qps"], "the admin's value of a key of ours")
	assert.Contains(t, r.Kept, "spec.cmdParams.applicationsetcontroller.k8s.client.qps")
	assert.Equal(t, "true", params["server.enable.proxy.extension"])
	assert.Equal(t, "30", params["controller.status.processors"])
	cfg := spec["extraConfig"].(map[string]any)
	assert.Equal(t, "240s", cfg["timeout.reconciliation"])
	for k, v := range ours["extraConfig"].(map[string]any) {
		assert.Equal(t, v, cfg[k], k)
	}
	assert.Contains(t, r.Added, "spec.server.volumes[name=gitops-service-ui-extension]")

	// Twice: nothing changes, nothing is added.
	again := deepCopy(obj).(map[string]any)
	r2, err := mergeOperatorSettings(again, ours)
	require.NoError(t, err)
	assert.Empty(t, r2.Added)
	assert.Equal(t, obj, again)

	// The removal gives back exactly the admin's resource.
	r3, err := removeOperatorSettings(again, ours)
	require.NoError(t, err)
	assert.Equal(t, admin, again)
	assert.ElementsMatch(t, r.Added, r3.Removed)
	// And removing again changes nothing.
	r4, err := removeOperatorSettings(again, ours)
	require.NoError(t, err)
	assert.Equal(t, admin, again)
	assert.Empty(t, r4.Removed)
}

// An entry the admin had, equal to ours, was not added by us: the removal
// leaves it; one of ours the admin changed since stays too.
func TestOperatorSettingsRemoveLeavesWhatWasNotOurs(t *testing.T) {
	ours, err := ourArgoCDSpec()
	require.NoError(t, err)
	obj := parse(t, `spec:
  server:
    extraCommandArgs: [--enable-proxy-extension]
  cmdParams:
    server.enable.proxy.extension: "true"
`)
	_, err = mergeOperatorSettings(obj, ours)
	require.NoError(t, err)
	spec := obj["spec"].(map[string]any)
	assert.Equal(t, []any{"--enable-proxy-extension"}, spec["server"].(map[string]any)["extraCommandArgs"], "not twice")
	// The admin changes a key we added.
	spec["extraConfig"].(map[string]any)["extension.config.gitops-service"] = "services: []\n"
	spec["applicationSet"].(map[string]any)["env"].([]any)[0].(map[string]any)["value"] = "999"

	r, err := removeOperatorSettings(obj, ours)
	require.NoError(t, err)
	assert.Equal(t, []any{"--enable-proxy-extension"}, spec["server"].(map[string]any)["extraCommandArgs"])
	assert.Equal(t, map[string]any{"server.enable.proxy.extension": "true"}, spec["cmdParams"])
	assert.Equal(t, map[string]any{"extension.config.gitops-service": "services: []\n"}, spec["extraConfig"])
	assert.Equal(t, []any{map[string]any{"name": "ARGOCD_K8S_CLIENT_QPS", "value": "999"}}, spec["applicationSet"].(map[string]any)["env"])
	assert.Contains(t, r.Kept, "spec.extraConfig.extension.config.gitops-service")
	assert.NotContains(t, spec["server"], "volumes")
	_, annotated, _ := unstructured.NestedString(obj, "metadata", "annotations", annotationOperatorSettings)
	assert.False(t, annotated)
}

func TestEntryID(t *testing.T) {
	for v, want := range map[any]string{"--concurrent-reconciliations=30": "--concurrent-reconciliations", "--insecure": "--insecure", "value": "value"} {
		assert.Equal(t, want, entryID(v))
	}
	assert.Equal(t, "name=x", entryID(map[string]any{"name": "x", "value": "1"}))
	assert.Equal(t, `{"key":"x"}`, entryID(map[string]any{"key": "x"}), "no name: the whole entry")
}

// An ArgoCD the former README's merge patch changed has no record: the
// removal takes out ours where they have our value, and nothing else.
func TestOperatorSettingsRemoveWithoutRecord(t *testing.T) {
	ours, err := ourArgoCDSpec()
	require.NoError(t, err)
	obj := parse(t, `spec:
  extraConfig:
    timeout.reconciliation: 240s
`)
	spec := obj["spec"].(map[string]any)
	for k, v := range ours {
		if _, ok := spec[k]; !ok {
			spec[k] = deepCopy(v)
		}
	}
	spec["extraConfig"].(map[string]any)["extension.config.gitops-service"] = deepCopy(ours["extraConfig"].(map[string]any)["extension.config.gitops-service"])
	r, err := removeOperatorSettings(obj, ours)
	require.NoError(t, err)
	assert.Equal(t, parse(t, "spec:\n  extraConfig:\n    timeout.reconciliation: 240s\n"), obj)
	assert.Contains(t, r.Removed, "spec.server.volumes[name=gitops-service-ui-extension]")
	assert.Empty(t, r.Kept)
}
