package subscription

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// WebhookPath is where pushes go: WebhookPath + "<namespace>/<name>".
const WebhookPath = "/subscriptions/"

// WebhookTokenKey is the key of the webhook Secret that holds the token.
const WebhookTokenKey = "token"

// maxPushBody bounds the body read (only to check its HMAC: it is never
// parsed, as a push says only "look now").
const maxPushBody = 1 << 20

// Webhook receives pushes for SnapshotSubscriptions. A push authenticated
// with the subscription's own token (the Secret it names, in its namespace)
// only sets status.pollRequestedAt, which the reconciler (on whichever
// replica leads) turns into a poll; nothing the push sends is believed.
type Webhook struct {
	// Reader reads subscriptions (the cache); Secrets are read with
	// APIReader, uncached, from the subscription's namespace only.
	Reader    client.Reader
	APIReader client.Reader
	// Writer writes the subscription's status.
	Writer client.Client
	// Serves says whether this sidecar serves a namespace (several Argo CD
	// instances); nil: every one.
	Serves func(context.Context, string) bool
	Now    kernel.Clock
}

// ServeHTTP answers 202 to an authenticated push, 401 to every other
// (unknown subscription, no webhook, no or wrong token: one answer, so the
// endpoint tells nobody which subscriptions exist).
func (h *Webhook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ns, name, ok := strings.Cut(strings.TrimPrefix(req.URL.Path, WebhookPath), "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxPushBody))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	ctx := req.Context()
	sub := &as.SnapshotSubscription{}
	if (h.Serves != nil && !h.Serves(ctx, ns)) ||
		h.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sub) != nil ||
		!h.authentic(ctx, sub, req, body) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	now := h.Now.Now()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"pollRequestedAt": now}})
	if err := h.Writer.Status().Patch(ctx, sub, client.RawPatch(types.MergePatchType, patch)); err != nil {
		ctrl.Log.WithName("subscription-webhook").Error(err, "recording a push", "namespace", ns, "name", name)
		http.Error(w, "cannot record the push", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// authentic says whether req carries the subscription's token: as a bearer
// token, or as the HMAC-SHA256 of the body under it (X-Hub-Signature-256,
// as GitHub, Gitea and Harbor-style senders sign). Compared in constant time.
func (h *Webhook) authentic(ctx context.Context, sub *as.SnapshotSubscription, req *http.Request, body []byte) bool {
	wh := sub.Spec.Webhook
	if wh == nil || secretName("", "", wh.SecretName) != nil {
		return false
	}
	s := &corev1.Secret{}
	if err := h.APIReader.Get(ctx, types.NamespacedName{Namespace: sub.Namespace, Name: wh.SecretName}, s); err != nil {
		return false
	}
	token := []byte(strings.TrimSpace(string(s.Data[WebhookTokenKey])))
	if len(token) == 0 {
		return false
	}
	if bearer, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(bearer)), token) == 1
	}
	if sig, ok := strings.CutPrefix(req.Header.Get("X-Hub-Signature-256"), "sha256="); ok {
		got, err := hex.DecodeString(sig)
		if err != nil {
			return false
		}
		mac := hmac.New(sha256.New, token)
		mac.Write(body)
		return hmac.Equal(got, mac.Sum(nil))
	}
	return false
}
