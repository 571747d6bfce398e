/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotSubscriptionSpec is what a SnapshotSubscription watches: for
// Components of one Application, an image repository with a tag policy
// and/or a git branch or tag. Additive to the seed API (docs/subscriptions.md).
type SnapshotSubscriptionSpec struct {
	// Application is the name of the Application, in the namespace of the
	// subscription, whose Snapshots it makes. Every Component of the
	// Application is in each Snapshot; those the subscription does not
	// watch keep their Component's containerImage and source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Application string `json:"application"`

	// Components are the Components watched, each at most once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=name
	// +required
	Components []ComponentSubscription `json:"components"`

	// Interval is how often the sources are polled; at least one minute (a
	// shorter one is raised to it). Default 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Webhook, when set, lets a registry or git server ask for a poll at
	// once (POST to the sidecar's subscription webhook; docs/subscriptions.md).
	// +optional
	Webhook *SubscriptionWebhook `json:"webhook,omitempty"`
}

// ComponentSubscription is what is watched for one Component.
// +kubebuilder:validation:XValidation:rule="has(self.image) || has(self.git)",message="set image, git or both",reason=FieldValueForbidden
type ComponentSubscription struct {
	// Name is the name of a Component of the Application.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Image picks the Component's image from a repository by a tag policy;
	// the Snapshot names it by digest.
	// +optional
	Image *ImageSubscription `json:"image,omitempty"`

	// Git picks the Component's source revision (a commit) from a branch or
	// a tag of a repository.
	// +optional
	Git *GitSubscription `json:"git,omitempty"`
}

// ImageSubscription is an image repository and how to pick its tag: exactly
// one of semver, regex and tag.
// +kubebuilder:validation:XValidation:rule="[has(self.semver), has(self.regex), has(self.tag)].filter(x, x).size() == 1",message="set exactly one of semver, regex and tag",reason=FieldValueForbidden
type ImageSubscription struct {
	// Repository is the image repository without tag or digest, e.g.
	// quay.io/team/frontend.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +required
	Repository string `json:"repository"`

	// Semver picks the highest tag that is a semantic version (an optional
	// leading "v") within this range, e.g. ">=1.2.0 <2.0.0" or "~1.4".
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Semver string `json:"semver,omitempty"`

	// Regex picks, among the tags this regular expression (RE2) matches, the
	// last in lexical order (tags such as main-20260101-1200 sort by time).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Regex string `json:"regex,omitempty"`

	// Tag follows one moving tag (e.g. latest): a new digest under it is a
	// new image.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Tag string `json:"tag,omitempty"`

	// CredentialsSecret names a Secret of type kubernetes.io/dockerconfigjson
	// in the subscription's namespace (a name, never namespace/name) with
	// the credentials for the registry; anonymous when empty.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// GitSubscription is a git repository and the branch or tag to follow:
// exactly one of branch and tag.
// +kubebuilder:validation:XValidation:rule="has(self.branch) != has(self.tag)",message="set exactly one of branch and tag",reason=FieldValueForbidden
type GitSubscription struct {
	// URL is the repository, https:// (or http:// without credentials).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url"`

	// Branch follows the head commit of a branch.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`

	// Tag follows the commit a tag names.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Tag string `json:"tag,omitempty"`

	// CredentialsSecret names a Secret in the subscription's namespace with
	// the keys username and password for the repository (sent over https
	// only); anonymous when empty.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// SubscriptionWebhook authenticates pushes for one subscription.
type SubscriptionWebhook struct {
	// SecretName names a Secret in the subscription's namespace whose key
	// "token" a push must present: as "Authorization: Bearer <token>", or as
	// an HMAC-SHA256 of the request body under it in X-Hub-Signature-256
	// ("sha256=<hex>").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	SecretName string `json:"secretName"`
}

// SnapshotSubscriptionStatus is what the last polls found and made.
type SnapshotSubscriptionStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: SourcesResolved (the last poll's outcome) and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastPollTime is when the sources were last polled.
	// +optional
	LastPollTime *metav1.Time `json:"lastPollTime,omitempty"`

	// NextPollTime is when they are polled next (sooner on a webhook push).
	// +optional
	NextPollTime *metav1.Time `json:"nextPollTime,omitempty"`

	// PollRequestedAt is when a webhook push last asked for a poll.
	// +optional
	PollRequestedAt *metav1.Time `json:"pollRequestedAt,omitempty"`

	// ConsecutiveFailures counts the polls that failed since the last one
	// that did not: the next poll backs off with it.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`

	// Components are the versions the last successful poll found.
	// +listType=map
	// +listMapKey=name
	// +optional
	Components []SubscribedComponentStatus `json:"components,omitempty"`

	// LastSnapshot is the name of the last Snapshot this subscription made.
	// +optional
	LastSnapshot string `json:"lastSnapshot,omitempty"`

	// LastSnapshotDigest is that Snapshot's content digest
	// (Snapshot.ContentDigest): a poll that finds the same content makes none.
	// +optional
	LastSnapshotDigest string `json:"lastSnapshotDigest,omitempty"`

	// LastSnapshotTime is when it was made.
	// +optional
	LastSnapshotTime *metav1.Time `json:"lastSnapshotTime,omitempty"`
}

// SubscribedComponentStatus is what one poll found for one Component.
type SubscribedComponentStatus struct {
	// Name is the Component's.
	Name string `json:"name"`
	// Tag is the image tag picked.
	// +optional
	Tag string `json:"tag,omitempty"`
	// Image is the image picked, pinned by digest (repository@sha256:...).
	// +optional
	Image string `json:"image,omitempty"`
	// Revision is the commit the branch or tag names.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// SnapshotSubscription: .status.conditions.
const (
	// SubscriptionConditionSourcesResolved is True when the last poll
	// resolved every source, False with one of the reasons below when not.
	SubscriptionConditionSourcesResolved = "SourcesResolved"

	// SubscriptionReasonResolved: every source was resolved.
	SubscriptionReasonResolved = "Resolved"
	// SubscriptionReasonInvalidSpec: a tag policy, URL, name or range is not valid.
	SubscriptionReasonInvalidSpec = "InvalidSpec"
	// SubscriptionReasonApplicationNotFound: the Application does not exist.
	SubscriptionReasonApplicationNotFound = "ApplicationNotFound"
	// SubscriptionReasonComponentNotFound: a watched Component is not one of
	// the Application's.
	SubscriptionReasonComponentNotFound = "ComponentNotFound"
	// SubscriptionReasonSecretNotFound: a named Secret is not in the
	// subscription's namespace.
	SubscriptionReasonSecretNotFound = "SecretNotFound"
	// SubscriptionReasonInvalidSecret: a named Secret is not usable (type, keys).
	SubscriptionReasonInvalidSecret = "InvalidSecret"
	// SubscriptionReasonEgressRefused: a registry or repository address is
	// one the platform does not let the sidecar reach for tenants.
	SubscriptionReasonEgressRefused = "EgressRefused"
	// SubscriptionReasonRegistryFailed: the registry refused, did not know
	// the repository, or could not be reached.
	SubscriptionReasonRegistryFailed = "RegistryFailed"
	// SubscriptionReasonNoMatchingTag: no tag matches the policy.
	SubscriptionReasonNoMatchingTag = "NoMatchingTag"
	// SubscriptionReasonGitFailed: the repository, branch or tag could not be read.
	SubscriptionReasonGitFailed = "GitFailed"
	// SubscriptionReasonSnapshotNameTaken: a Snapshot of the content-derived
	// name exists with other content.
	SubscriptionReasonSnapshotNameTaken = "SnapshotNameTaken"
)

// AnnotationSubscription is on every Snapshot a SnapshotSubscription made:
// its name (an annotation: a subscription's name may be longer than a label).
const AnnotationSubscription = "appstudio.redhat.com/snapshot-subscription"

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=snapsub,categories=gitops
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Resolved",type=string,JSONPath=`.status.conditions[?(@.type=="SourcesResolved")].status`
// +kubebuilder:printcolumn:name="Last Snapshot",type=string,JSONPath=`.status.lastSnapshot`
// +kubebuilder:printcolumn:name="Last Poll",type=date,JSONPath=`.status.lastPollTime`
// +kubebuilder:printcolumn:name="Next Poll",type=string,JSONPath=`.status.nextPollTime`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// SnapshotSubscription makes a Snapshot of an Application each time one of
// the image repositories or git branches/tags it watches has something new.
type SnapshotSubscription struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what is watched.
	// +required
	Spec SnapshotSubscriptionSpec `json:"spec"`

	// Status is what was found and made.
	// +optional
	Status SnapshotSubscriptionStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SnapshotSubscriptionList is a list of SnapshotSubscriptions.
type SnapshotSubscriptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the SnapshotSubscriptions.
	Items []SnapshotSubscription `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SnapshotSubscription{}, &SnapshotSubscriptionList{})
}
