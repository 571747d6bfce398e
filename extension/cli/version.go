package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/expfmt"

	"github.com/gitops-service/gitops-service/extension/buildinfo"
)

// Where the sidecar's metrics are (manifests/install/metrics.yaml).
const (
	metricsService = "gitops-service-metrics"
	metricsPort    = "metrics"
	buildInfoName  = "gitops_service_build_info"
)

// versionInfo is what `version -o json|yaml` prints.
type versionInfo struct {
	Client  buildVersion  `json:"clientVersion"`
	Service *buildVersion `json:"serviceVersion,omitempty"`
	// ServiceError says why the service's version is not known.
	ServiceError string `json:"serviceError,omitempty"`
}

type buildVersion struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"goVersion,omitempty"`
}

func versionCmd(ctx context.Context, o *options) error {
	switch o.output {
	case "", "json", "yaml":
	default:
		return usageError("-o %s: version prints json or yaml (or text)", o.output)
	}
	v := versionInfo{Client: buildVersion{Version: buildinfo.Version, Revision: buildinfo.Revision, GoVersion: buildinfo.GoVersion()}}
	if !o.clientOnly {
		svc, err := serviceVersion(ctx, o)
		if err != nil {
			v.ServiceError = err.Error()
		}
		v.Service = svc
	}
	if done, err := printView(o.streams.Out, o.output, v); done {
		return err
	}
	writeVersion(o, v)
	return nil
}

func writeVersion(o *options, v versionInfo) {
	fmt.Fprintf(o.streams.Out, "Client: %s\n", buildinfo.String(o.prog))
	switch {
	case v.Service != nil:
		fmt.Fprintf(o.streams.Out, "GitOps Service: %s (revision %s, %s)\n", v.Service.Version, dash(v.Service.Revision), dash(v.Service.GoVersion))
	case v.ServiceError != "":
		fmt.Fprintf(o.streams.Out, "GitOps Service: unknown (%s)\n", v.ServiceError)
	}
}

// serviceVersion asks the sidecar: its build_info metric through the API
// server's service proxy, or the version header of its Argo CD extension.
func serviceVersion(ctx context.Context, o *options) (*buildVersion, error) {
	c, err := connect(o)
	if err != nil {
		return nil, err
	}
	return c.be.serviceVersion(ctx)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// parseBuildInfo reads gitops_service_build_info's labels from a Prometheus
// text exposition.
func parseBuildInfo(metrics []byte) (*buildVersion, error) {
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(bytes.NewReader(metrics))
	if err != nil && families == nil {
		return nil, fmt.Errorf("reading its metrics: %v", err)
	}
	mf := families[buildInfoName]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return nil, fmt.Errorf("its metrics have no %s", buildInfoName)
	}
	v := &buildVersion{}
	for _, l := range mf.GetMetric()[0].GetLabel() {
		switch l.GetName() {
		case "version":
			v.Version = l.GetValue()
		case "revision":
			v.Revision = l.GetValue()
		case "goversion":
			v.GoVersion = l.GetValue()
		}
	}
	return v, nil
}
