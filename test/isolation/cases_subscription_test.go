package isolation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Issue 36, item 1: a SnapshotSubscription cannot make the sidecar read
// another namespace's Secrets (registry, git, webhook) nor reach an internal
// address through a registry or repository URL (the forbidden server on
// 127.0.0.2 counts connections; there must be none).

// subscriptionApp is an Application with Component "web" in the case's namespace.
func subscriptionApp(t *testing.T, e tenantEnv) {
	create(t, &as.Application{ObjectMeta: om(e.NS, "app"), Spec: as.ApplicationSpec{DisplayName: "app"}})
	create(t, &as.Component{ObjectMeta: om(e.NS, "web"), Spec: as.ComponentSpec{ComponentName: "web", Application: "app", ContainerImage: "example.com/web:1"}})
}

func subscriptionOf(e tenantEnv, c as.ComponentSubscription, webhook *as.SubscriptionWebhook) client.Object {
	c.Name = "web"
	return &as.SnapshotSubscription{ObjectMeta: om(e.NS, "subs"),
		Spec: as.SnapshotSubscriptionSpec{Application: "app", Components: []as.ComponentSubscription{c}, Webhook: webhook}}
}

func sourcesResolved(reason, msg string) want {
	return want{Type: as.SubscriptionConditionSourcesResolved, Status: metav1.ConditionFalse, Reason: reason, Msg: msg}
}

func subscriptionCases() []hostileCase {
	var out []hostileCase
	// Registry hosts and git URLs on addresses the sidecar must not reach.
	hosts := map[string]func(port int) string{
		"loopback":             func(p int) string { return fmt.Sprintf("127.0.0.2:%d", p) },
		"unspecified":          func(p int) string { return fmt.Sprintf("0.0.0.0:%d", p) },
		"link-local metadata":  func(int) string { return "169.254.169.254" },
		"IPv4-mapped loopback": func(p int) string { return fmt.Sprintf("[::ffff:127.0.0.2]:%d", p) },
		"cluster service":      func(int) string { return "10.96.0.1" },
	}
	for name, host := range hosts {
		var h string
		setup := func(t *testing.T, e tenantEnv) {
			h = host(forbiddenServer(t))
			subscriptionApp(t, e)
		}
		out = append(out,
			hostileCase{Kind: "SnapshotSubscription", Name: "registry on " + name, Setup: setup,
				Object: func(e tenantEnv) client.Object {
					return subscriptionOf(e, as.ComponentSubscription{Image: &as.ImageSubscription{Repository: h + "/org/web", Tag: "latest"}}, nil)
				},
				Want: sourcesResolved(as.SubscriptionReasonEgressRefused, "which the platform does not let"),
			},
			hostileCase{Kind: "SnapshotSubscription", Name: "git repository on " + name, Setup: setup,
				Object: func(e tenantEnv) client.Object {
					return subscriptionOf(e, as.ComponentSubscription{Git: &as.GitSubscription{URL: "https://" + h + "/org/web.git", Branch: "main"}}, nil)
				},
				Want: sourcesResolved(as.SubscriptionReasonEgressRefused, "not connected"),
			})
	}
	// Another namespace's Secrets, by namespace/name or by a name only it has.
	neighbourSecret := func(t *testing.T, e tenantEnv) {
		subscriptionApp(t, e)
		create(t, &corev1.Secret{ObjectMeta: om(e.Neighbour, "regcred-of-"+e.NS), Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"127.0.0.1":{"auth":"` + canary("registry-auth") + `"}}}`)}})
	}
	out = append(out,
		hostileCase{Kind: "SnapshotSubscription", Name: "registry Secret of another namespace", Setup: neighbourSecret,
			Object: func(e tenantEnv) client.Object {
				return subscriptionOf(e, as.ComponentSubscription{Image: &as.ImageSubscription{Repository: "127.0.0.1:1/org/web", Tag: "latest",
					CredentialsSecret: e.Neighbour + "/regcred-of-" + e.NS}}, nil)
			},
			Want: sourcesResolved(as.SubscriptionReasonInvalidSpec, "names a Secret of another namespace"),
		},
		hostileCase{Kind: "SnapshotSubscription", Name: "registry Secret that only another namespace has", Setup: neighbourSecret,
			Object: func(e tenantEnv) client.Object {
				return subscriptionOf(e, as.ComponentSubscription{Image: &as.ImageSubscription{Repository: "127.0.0.1:1/org/web", Tag: "latest",
					CredentialsSecret: "regcred-of-" + e.NS}}, nil)
			},
			Want: sourcesResolved(as.SubscriptionReasonSecretNotFound, "was not found in namespace"),
		},
		hostileCase{Kind: "SnapshotSubscription", Name: "git Secret of another namespace", Setup: subscriptionApp,
			Object: func(e tenantEnv) client.Object {
				return subscriptionOf(e, as.ComponentSubscription{Git: &as.GitSubscription{URL: "https://127.0.0.1:1/org/web.git", Branch: "main",
					CredentialsSecret: e.Neighbour + "/git"}}, nil)
			},
			Want: sourcesResolved(as.SubscriptionReasonInvalidSpec, "names a Secret of another namespace"),
		},
		hostileCase{Kind: "SnapshotSubscription", Name: "webhook Secret of another namespace", Setup: subscriptionApp,
			Object: func(e tenantEnv) client.Object {
				return subscriptionOf(e, as.ComponentSubscription{Image: &as.ImageSubscription{Repository: "127.0.0.1:1/org/web", Tag: "latest"}},
					&as.SubscriptionWebhook{SecretName: e.Neighbour + "/hook"})
			},
			Want: sourcesResolved(as.SubscriptionReasonInvalidSpec, "webhook.secretName"),
		},
		hostileCase{Kind: "SnapshotSubscription", Name: "credentials in the git URL", Setup: subscriptionApp,
			Object: func(e tenantEnv) client.Object {
				return subscriptionOf(e, as.ComponentSubscription{Git: &as.GitSubscription{URL: "https://u:" + canary("git-url-password") + "@127.0.0.1:1/org/web.git", Branch: "main"}}, nil)
			},
			Want: sourcesResolved(as.SubscriptionReasonInvalidSpec, "without credentials in it"),
		},
		hostileCase{Kind: "SnapshotSubscription", Name: "git credentials over plain http", Setup: subscriptionApp,
			Object: func(e tenantEnv) client.Object {
				return subscriptionOf(e, as.ComponentSubscription{Git: &as.GitSubscription{URL: "http://127.0.0.1:1/org/web.git", Branch: "main", CredentialsSecret: "git"}}, nil)
			},
			Want: sourcesResolved(as.SubscriptionReasonInvalidSpec, "only sent over https"),
		},
		hostileCase{Kind: "SnapshotSubscription", Name: "subscription of another namespace's Application", Setup: subscriptionApp,
			Object: func(e tenantEnv) client.Object {
				sub := subscriptionOf(e, as.ComponentSubscription{Image: &as.ImageSubscription{Repository: "127.0.0.1:1/org/web", Tag: "latest"}}, nil).(*as.SnapshotSubscription)
				sub.Spec.Application = e.Neighbour + "/app"
				return sub
			},
			Want: sourcesResolved(as.SubscriptionReasonApplicationNotFound, "was not found in namespace"),
		},
	)
	return out
}
