package isolation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/notifications"
)

// notificationCases are Environments whose notification subscriptions reach
// for what the platform gave the neighbour, or for the platform's secret.
func notificationCases() []hostileCase {
	refused := func(msg string) want {
		return want{Type: as.EnvironmentConditionNotifications, Status: metav1.ConditionFalse, Reason: as.EnvironmentReasonNotificationsRefused, Msg: msg}
	}
	add := func(name string, annotations map[string]string, w want) hostileCase {
		return hostileCase{Kind: "Environment", Name: "notifications: " + name, Setup: notificationsPlatform, Want: w,
			Object: func(e tenantEnv) client.Object {
				return &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: "prod", Annotations: annotations}}
			}}
	}
	sub := "notifications.argoproj.io/subscribe.on-promotion-verified."
	return []hostileCase{
		add("the neighbour's webhook", map[string]string{sub + "neighbour-hook": ""}, refused(`service "neighbour-hook" is not granted`)),
		add("the neighbour's channel", map[string]string{sub + "slack": "neighbour-channel"}, refused(`service "slack" is not granted`)),
		add("the platform's secret as a recipient", map[string]string{sub + "slack": "$slack-token"}, refused("names a secret reference")),
		add("a service the platform does not have", map[string]string{sub + "attacker": ""}, refused(`service "attacker" is not configured`)),
	}
}

// notificationsPlatform makes the platform's notifications configuration
// once: a webhook and a Slack channel granted to the neighbour only, a
// canary for a token.
func notificationsPlatform(t *testing.T, e tenantEnv) {
	t.Helper()
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: om(argoNS, notifications.DefaultConfigMap), Data: map[string]string{
			"service.webhook.neighbour-hook": "url: https://hooks.example.com/neighbour\n",
			"service.slack":                  "token: $slack-token\n",
			notifications.GrantsKey:          e.Neighbour + ":\n  neighbour-hook: ['*']\n  slack: [neighbour-channel]\n",
		}},
		&corev1.Secret{ObjectMeta: om(argoNS, notifications.DefaultSecret), StringData: map[string]string{"slack-token": canary("slack-token")}},
	} {
		if err := k8s.Create(context.Background(), obj); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
}
