/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// SignatureGate asks that every image of a Snapshot be signed before a
// promotion enters the Environment: a cosign signature and/or in-toto
// attestations of the given predicate types, made by one of the keys or
// keyless identities named here. The image's digest is what is verified (a
// tag is resolved first). Signatures are found the cosign way, in the
// image's repository (tags sha256-<digest>.sig and .att).
// +kubebuilder:validation:XValidation:rule="(has(self.keys) && size(self.keys) > 0) || (has(self.identities) && size(self.identities) > 0)",message="name at least one key or identity",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.attestationsOnly) || !self.attestationsOnly || (has(self.attestations) && size(self.attestations) > 0)",message="attestationsOnly needs at least one attestation",fieldPath=".attestations",reason=FieldValueForbidden
type SignatureGate struct {
	// Keys whose signatures count: any one of them (or of the identities)
	// signing is enough.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Keys []SignatureKey `json:"keys,omitempty"`

	// Identities of keyless signers whose signatures count: a certificate
	// of the signature must chain to the trusted root the platform gives
	// the GitOps Service (--sigstore-trusted-root) and name the issuer and
	// subject. Tenants cannot supply a trusted root of their own: who may
	// vouch for an identity is the platform's to say.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Identities []KeylessIdentity `json:"identities,omitempty"`

	// Attestations are in-toto predicate types (e.g.
	// https://slsa.dev/provenance/v1) each image must have an attestation
	// of, signed by one of the keys or identities.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	Attestations []string `json:"attestations,omitempty"`

	// AttestationsOnly: the attestations are required, a cosign signature
	// of the image is not.
	// +optional
	AttestationsOnly bool `json:"attestationsOnly,omitempty"`

	// RegistrySecret names a Secret of type kubernetes.io/dockerconfigjson
	// in the Environment's namespace with the credentials to read the
	// images' repositories; anonymous when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RegistrySecret string `json:"registrySecret,omitempty"`
}

// SignatureKey is a public key (PEM), inline or from a ConfigMap in the
// Environment's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.publicKey) != has(self.configMapKeyRef)",message="exactly one of publicKey and configMapKeyRef must be set",reason=FieldValueForbidden
type SignatureKey struct {
	// Name of the key, as the results and the history name its signer.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// PublicKey is the PEM of the key (e.g. cosign.pub).
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	PublicKey string `json:"publicKey,omitempty"`

	// ConfigMapKeyRef names the ConfigMap key that holds the PEM.
	// +optional
	ConfigMapKeyRef *ConfigMapKey `json:"configMapKeyRef,omitempty"`
}

// ConfigMapKey is one key of a ConfigMap in the same namespace.
type ConfigMapKey struct {
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// KeylessIdentity is the OIDC issuer and subject a keyless (Fulcio-style)
// certificate must name, each exactly or by a regular expression (RE2,
// anchored by the writer).
// +kubebuilder:validation:XValidation:rule="has(self.issuer) != has(self.issuerRegExp)",message="exactly one of issuer and issuerRegExp must be set",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(self.subject) != has(self.subjectRegExp)",message="exactly one of subject and subjectRegExp must be set",reason=FieldValueForbidden
type KeylessIdentity struct {
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Issuer string `json:"issuer,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=512
	IssuerRegExp string `json:"issuerRegExp,omitempty"`
	// Subject is the certificate's subject alternative name (an e-mail
	// address or a URI such as a CI workflow's).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Subject string `json:"subject,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=512
	SubjectRegExp string `json:"subjectRegExp,omitempty"`
}

// WaitingReasonSignatureNotVerified: an image of the Snapshot is not signed
// (or attested) as the Environment requires.
const WaitingReasonSignatureNotVerified = "SignatureNotVerified"
