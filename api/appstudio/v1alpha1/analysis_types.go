/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Analysis after a promotion (issue 37, item 1): an Environment may name
// checks (Prometheus queries, HTTP requests) that run once a promotion's step
// is deployed there. The step is verified only when every check passed its
// count of measurements; a check that fails more than its failure limit
// fails the step (and, with rollback.automatic, rolls it back). The success
// condition is a typed comparison, never an expression or a template: what a
// tenant writes is a value compared, nothing that is evaluated.

// AnalysisPolicy is the analysis of promotions into an Environment.
type AnalysisPolicy struct {
	// Checks run independently, each on its own interval, from when the
	// step is deployed (its live state verified).
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	Checks []AnalysisCheck `json:"checks"`
}

// AnalysisCheck is one check: a Prometheus query or an HTTP request,
// measured count times, interval apart.
// +kubebuilder:validation:XValidation:rule="has(self.prometheus) != has(self.web)",message="exactly one of prometheus and web must be set",reason=FieldValueForbidden
type AnalysisCheck struct {
	// Name of the check, unique in the Environment; its results are reported under it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Interval between two measurements; 1m when unset.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('24h')",message="must be between 5s and 24h",reason=FieldValueForbidden
	Interval *metav1.Duration `json:"interval,omitempty"`

	// InitialDelay before the first measurement, counted from when the step
	// was deployed (time for a metric to see the new version); none when unset.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="must be between 0s and 24h",reason=FieldValueForbidden
	InitialDelay *metav1.Duration `json:"initialDelay,omitempty"`

	// Count is how many successful measurements pass the check; 1 when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Count int32 `json:"count,omitempty"`

	// FailureLimit is how many failed measurements the check tolerates: one
	// more fails it (and the step). 0 when unset: the first failure fails it.
	// A measurement that cannot be made (no answer, no sample) is a failure.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailureLimit int32 `json:"failureLimit,omitempty"`

	// Prometheus queries a Prometheus server.
	// +optional
	Prometheus *PrometheusCheck `json:"prometheus,omitempty"`

	// Web sends a GET request and checks the answer's status and, optionally,
	// a field of its JSON body.
	// +optional
	Web *WebCheck `json:"web,omitempty"`
}

// PrometheusCheck is an instant query and the condition its value must meet.
type PrometheusCheck struct {
	// Address of the Prometheus server (or a compatible API: Thanos,
	// Mimir, VictoriaMetrics), e.g. https://prometheus.example.com.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	Address string `json:"address"`

	// Query is a PromQL instant query. It must return a scalar or a vector;
	// every sample of a vector must meet the condition, and an empty vector
	// is a failed measurement.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`

	// SuccessCondition is what the value must be, e.g. {operator: "<=", value: "0.01"}.
	// +required
	SuccessCondition AnalysisCondition `json:"successCondition"`

	// CredentialsSecret names a Secret in the Environment's namespace whose
	// keys username and password (Basic) or token (Bearer) are sent, only
	// over https.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// WebCheck is a GET request and what its answer must be.
// +kubebuilder:validation:XValidation:rule="!has(self.jsonField) || has(self.successCondition)",message="jsonField needs a successCondition",reason=FieldValueForbidden
type WebCheck struct {
	// URL to GET, http:// or https://.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	URL string `json:"url"`

	// ExpectedStatus is the HTTP status of a successful answer; 200 when unset.
	// +optional
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=599
	ExpectedStatus int32 `json:"expectedStatus,omitempty"`

	// JSONField is a field of the answer's JSON body, as keys and array
	// indexes separated by dots (e.g. status.checks.0.healthy); with it,
	// the field's value must meet SuccessCondition.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`
	JSONField string `json:"jsonField,omitempty"`

	// SuccessCondition is what JSONField's value must be; required with JSONField.
	// +optional
	SuccessCondition *AnalysisCondition `json:"successCondition,omitempty"`

	// CredentialsSecret names a Secret in the Environment's namespace whose
	// keys username and password (Basic) or token (Bearer) are sent, only
	// over https.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// AnalysisOperator compares a measured value with the condition's value.
// +kubebuilder:validation:Enum="<";"<=";">";">=";"==";"!="
type AnalysisOperator string

const (
	AnalysisLessThan           AnalysisOperator = "<"
	AnalysisLessThanOrEqual    AnalysisOperator = "<="
	AnalysisGreaterThan        AnalysisOperator = ">"
	AnalysisGreaterThanOrEqual AnalysisOperator = ">="
	AnalysisEqual              AnalysisOperator = "=="
	AnalysisNotEqual           AnalysisOperator = "!="
)

// AnalysisCondition is a typed comparison of the measured value with Value:
// numbers compare as numbers; otherwise only == and != apply, comparing
// text (a JSON true, false or null compares as that word).
type AnalysisCondition struct {
	// Operator is one of <, <=, >, >=, ==, !=.
	// +required
	Operator AnalysisOperator `json:"operator"`

	// Value compared with, e.g. "0.99", "ok" or "true".
	// +required
	// +kubebuilder:validation:MaxLength=256
	Value string `json:"value"`
}

// AnalysisPhase is where one check stands.
// +kubebuilder:validation:Enum=Running;Successful;Failed
type AnalysisPhase string

const (
	AnalysisRunning    AnalysisPhase = "Running"
	AnalysisSuccessful AnalysisPhase = "Successful"
	AnalysisFailed     AnalysisPhase = "Failed"
)

// AnalysisCheckStatus is the result of one check of a step so far. It holds
// the value measured and a verdict in fixed words, never what the server
// answered (the URL is a tenant's, and the sidecar asks from inside the
// platform's network).
type AnalysisCheckStatus struct {
	// Name of the check.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Phase: Running, Successful (count successes) or Failed (more failures than the limit).
	// +required
	Phase AnalysisPhase `json:"phase"`

	// Value is the last value measured (a query's value, a JSON field's, or an HTTP status).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Value string `json:"value,omitempty"`

	// Successes and Failures counted so far.
	// +optional
	Successes int32 `json:"successes,omitempty"`
	// +optional
	Failures int32 `json:"failures,omitempty"`

	// Message says what the last measurement found.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`

	// LastCheckTime is when the last measurement was made.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`

	// NextCheckTime is when the next one is due; unset once the check ended.
	// +optional
	NextCheckTime *metav1.Time `json:"nextCheckTime,omitempty"`
}
