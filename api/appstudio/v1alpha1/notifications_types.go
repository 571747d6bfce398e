/*
Copyright 2026 The gitops-service authors.
Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// Notifications of promotion events (issue 37, item 3): tenants subscribe an
// Environment with Argo CD's annotations
// (notifications.argoproj.io/subscribe.<trigger>.<service>: <recipients>);
// the sidecar sends through Argo CD's notifications engine with the
// platform's services and records each delivery on the PromotionRun.
const (
	// AnnotationNotified records, on a PromotionRun, the deliveries made for
	// its events: a JSON object whose keys are
	// <event>:<environment>:<trigger>:<condition>:<service>:<recipient> and
	// whose values are the Unix times of the deliveries. A delivery whose key
	// is there is never sent again.
	AnnotationNotified = "notified.notifications.appstudio.redhat.com"

	// EnvironmentConditionNotifications says whether the Environment's
	// notification subscriptions can be delivered: True (reason
	// NotificationsSubscribed) when every one can, False (reason
	// NotificationsRefused) naming each that cannot and why. Absent on an
	// Environment without subscriptions.
	EnvironmentConditionNotifications = "Notifications"
	// EnvironmentReasonNotificationsSubscribed: every subscription can be delivered.
	EnvironmentReasonNotificationsSubscribed = "NotificationsSubscribed"
	// EnvironmentReasonNotificationsRefused: a subscription names a trigger,
	// service or recipient the platform does not let this namespace use.
	EnvironmentReasonNotificationsRefused = "NotificationsRefused"
)
