/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotSpec is the desired state of a Snapshot.
// +kubebuilder:validation:XValidation:rule="has(self.components) == has(oldSelf.components)",message="components are immutable"
type SnapshotSpec struct {
	// Application is the name of the Application, in the namespace of the
	// Snapshot, whose Components the Snapshot gives versions of. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="application is immutable"
	// +required
	Application string `json:"application"`

	// DisplayName is a user-visible, user-definable name for the Snapshot.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// DisplayDescription is a user-visible, user-definable description of the
	// Snapshot.
	// +optional
	DisplayDescription string `json:"displayDescription,omitempty"`

	// Components gives the container image of each Component of the
	// Application. Immutable once the Snapshot is created: to deploy other
	// images, create a new Snapshot.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="components are immutable"
	// +optional
	Components []SnapshotComponent `json:"components,omitempty"`

	// Artifacts is an arbitrary, untyped JSON value for artifact data (for
	// example {"unstableFields": {...}}). Not interpreted by the GitOps
	// Service.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Artifacts *apiextensionsv1.JSON `json:"artifacts,omitempty"`
}

// SnapshotComponent is the version of one Component of a Snapshot.
type SnapshotComponent struct {
	// Name is the name of a Component of the Application, a DNS-1123 label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// ContainerImage is the container image of the Component, e.g.
	// quay.io/org/image@sha256:... or quay.io/org/image:tag.
	// +kubebuilder:validation:MinLength=1
	// +required
	ContainerImage string `json:"containerImage"`

	// Source is a pointer so that a client that reads and writes back a
	// Snapshot does not add an empty "source: {}", which the immutability rule
	// on components would reject as a change.

	// Source is the source the container image was built from.
	// +optional
	Source *ComponentSource `json:"source,omitempty"`
}

// SnapshotStatus is the observed state of a Snapshot.
type SnapshotStatus struct {
	// Conditions describe the state of the Snapshot. Not used by the GitOps
	// Service; set by other App Studio components (e.g. integration tests).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=snp,categories=gitops
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Snapshot is a set of container image versions, one per Component of an
// Application. A SnapshotEnvironmentBinding deploys a Snapshot to an
// Environment. The Snapshot's application and components are immutable.
type Snapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Snapshot.
	// +required
	Spec SnapshotSpec `json:"spec"`

	// Status is the observed state of the Snapshot.
	// +optional
	Status SnapshotStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SnapshotList is a list of Snapshots.
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Snapshots.
	Items []Snapshot `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Snapshot{}, &SnapshotList{})
}

// ContentDigest is the digest of what the Snapshot deploys: "sha256:" and
// the hex SHA-256 of the canonical JSON of its components sorted by name,
// each as {"name","containerImage","source"} (source as the API writes it,
// null when unset). Display fields, artifacts and the Application are not
// content (the Application is immutable and checked on its own). Approvals,
// soak, verification, rejection and rollback targets bind to it and to the
// Snapshot's UID, so a Snapshot re-created under the same name is another
// Snapshot (docs/gates.md).
func (s *Snapshot) ContentDigest() string {
	type component struct {
		Name           string           `json:"name"`
		ContainerImage string           `json:"containerImage"`
		Source         *ComponentSource `json:"source"`
	}
	cs := make([]component, 0, len(s.Spec.Components))
	for _, c := range s.Spec.Components {
		//lint:ignore S1016 spelled out: a field added to SnapshotComponent must not change existing digests
		cs = append(cs, component{Name: c.Name, ContainerImage: c.ContainerImage, Source: c.Source})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	// Struct fields marshal in a fixed order and strings are escaped one
	// way: the encoding is canonical.
	b, err := json.Marshal(cs)
	if err != nil {
		panic(err) // strings and pointers to structs of strings always marshal
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Identity is what the gates know a Snapshot by: its UID and ContentDigest.
func (s *Snapshot) Identity() SnapshotIdentity {
	return SnapshotIdentity{UID: string(s.UID), Digest: s.ContentDigest()}
}

// SnapshotIdentity names one Snapshot object and its content.
type SnapshotIdentity struct {
	// UID is the Snapshot's metadata.uid.
	// +optional
	UID string `json:"snapshotUID,omitempty"`
	// Digest is the Snapshot's content digest (Snapshot.ContentDigest).
	// +optional
	Digest string `json:"snapshotDigest,omitempty"`
}

// Known says whether an identity was recorded (records written before
// identities were have none).
func (id SnapshotIdentity) Known() bool { return id.UID != "" || id.Digest != "" }

// Matches says whether the recorded identity id is the one of the Snapshot
// now: every part recorded must be equal. An unknown one matches nothing.
func (id SnapshotIdentity) Matches(now SnapshotIdentity) bool {
	return id.Known() && (id.UID == "" || id.UID == now.UID) && (id.Digest == "" || id.Digest == now.Digest)
}
