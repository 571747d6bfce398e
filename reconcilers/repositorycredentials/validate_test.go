package repositorycredentials

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func TestValidateURL(t *testing.T) {
	for url, reason := range map[string]string{
		"https://git.example.com/jane/app.git":      "",
		"ssh://git@git.example.com/jane/app.git":    "",
		"https://git.example.com:8443/x":            "",
		"http://git.example.com/jane/app.git":       v1.RepositoryCredentialReasonInvalidRepositoryURL,
		"git@git.example.com:jane/app.git":          v1.RepositoryCredentialReasonInvalidRepositoryURL,
		"file:///etc/passwd":                        v1.RepositoryCredentialReasonInvalidRepositoryURL,
		"https://jane:secret@git.example.com/a.git": v1.RepositoryCredentialReasonInvalidRepositoryURL,
		"https:///nohost":                           v1.RepositoryCredentialReasonInvalidRepositoryURL,
		"://bad":                                    v1.RepositoryCredentialReasonInvalidRepositoryURL,
	} {
		r := ValidateURL(url)
		if reason == "" {
			assert.Nil(t, r, url)
			continue
		}
		require.NotNil(t, r, url)
		assert.Equal(t, reason, r.Reason, url)
		assert.NotContains(t, r.Message, "secret", "a password in the URL is never echoed")
	}
}

func privateKey(t *testing.T, passphrase string) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(key, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(key, "", []byte(passphrase))
	}
	require.NoError(t, err)
	return string(pem.EncodeToMemory(block))
}

func TestCredentials(t *testing.T) {
	const https, sshURL = "https://git.example.com/jane/app.git", "ssh://git@git.example.com/jane/app.git"
	key := privateKey(t, "")
	secret := func(typ corev1.SecretType, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "jane"}, Type: typ, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	good := corev1.SecretType(v1.RepositoryCredentialSecretType)
	cases := map[string]struct {
		url    string
		secret *corev1.Secret
		reason string
		want   argocd.RepositoryCredentials
	}{
		"https basic auth":          {url: https, secret: secret(good, map[string]string{"url": https, "username": "user-7f3a", "password": "pw-91c2e"}), want: argocd.RepositoryCredentials{Username: "user-7f3a", Password: "pw-91c2e"}},
		"https url without .git":    {url: https, secret: secret(good, map[string]string{"url": "https://git.example.com/jane/app", "username": "user-7f3a", "password": "pw-91c2e"}), want: argocd.RepositoryCredentials{Username: "user-7f3a", Password: "pw-91c2e"}},
		"https ignores a key":       {url: https, secret: secret(good, map[string]string{"url": https, "username": "user-7f3a", "password": "pw-91c2e", "sshPrivateKey": key}), want: argocd.RepositoryCredentials{Username: "user-7f3a", Password: "pw-91c2e"}},
		"ssh key":                   {url: sshURL, secret: secret(good, map[string]string{"url": sshURL, "sshPrivateKey": key}), want: argocd.RepositoryCredentials{SSHPrivateKey: key}},
		"opaque secret":             {url: https, secret: secret(corev1.SecretTypeOpaque, map[string]string{"url": https, "username": "user-7f3a", "password": "pw-91c2e"}), reason: v1.RepositoryCredentialReasonSecretInvalidType},
		"service account token":     {url: https, secret: secret(corev1.SecretTypeServiceAccountToken, map[string]string{"url": https, "token": "tok-55d1"}), reason: v1.RepositoryCredentialReasonSecretInvalidType},
		"url mismatch":              {url: https, secret: secret(good, map[string]string{"url": "https://evil.example.com/jane/app.git", "username": "user-7f3a", "password": "pw-91c2e"}), reason: v1.RepositoryCredentialReasonInvalidRepositoryURL},
		"url missing":               {url: https, secret: secret(good, map[string]string{"username": "user-7f3a", "password": "pw-91c2e"}), reason: v1.RepositoryCredentialReasonInvalidRepositoryURL},
		"https without password":    {url: https, secret: secret(good, map[string]string{"url": https, "username": "user-7f3a"}), reason: v1.RepositoryCredentialReasonInvalidCredentials},
		"https with only a key":     {url: https, secret: secret(good, map[string]string{"url": https, "sshPrivateKey": key}), reason: v1.RepositoryCredentialReasonInvalidCredentials},
		"ssh without key":           {url: sshURL, secret: secret(good, map[string]string{"url": sshURL, "username": "user-7f3a", "password": "pw-91c2e"}), reason: v1.RepositoryCredentialReasonInvalidCredentials},
		"ssh key not a key":         {url: sshURL, secret: secret(good, map[string]string{"url": sshURL, "sshPrivateKey": "not a key"}), reason: v1.RepositoryCredentialReasonInvalidCredentials},
		"ssh key with a passphrase": {url: sshURL, secret: secret(good, map[string]string{"url": sshURL, "sshPrivateKey": privateKey(t, "pw")}), reason: v1.RepositoryCredentialReasonInvalidCredentials},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := &v1.GitOpsDeploymentRepositoryCredentials{
				ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "jane"},
				Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: tc.url, Secret: "creds"},
			}
			creds, refusal := Credentials(rc, tc.secret)
			if tc.reason == "" {
				require.Nil(t, refusal)
				assert.Equal(t, tc.want, creds)
				return
			}
			require.NotNil(t, refusal)
			assert.Equal(t, tc.reason, refusal.Reason)
			assert.Equal(t, argocd.RepositoryCredentials{}, creds)
			for k, v := range tc.secret.Data {
				if k == KeyURL {
					continue
				}
				assert.NotContains(t, refusal.Message, string(v), "no value of the Secret in a message")
			}
		})
	}
}

func TestConditions(t *testing.T) {
	status := func(conds []metav1.Condition) map[string]string {
		out := map[string]string{}
		for _, c := range conds {
			require.NotEmpty(t, c.Reason, c.Type)
			out[c.Type] = string(c.Status) + "/" + c.Reason
		}
		return out
	}
	const e, u, c = v1.RepositoryCredentialConditionErrorOccurred, v1.RepositoryCredentialConditionValidRepositoryURL, v1.RepositoryCredentialConditionValidCredential
	cases := map[string]struct {
		out  outcome
		want map[string]string
	}{
		"verified": {out: outcome{}, want: map[string]string{e: "False/RepositoryCredentialUpToDate", u: "True/ValidRepositoryUrl", c: "True/RepositoryCredentialUpToDate"}},
		"secret missing": {out: outcome{refusal: kernel.Refuse(v1.RepositoryCredentialReasonSecretNotFound, "x")},
			want: map[string]string{e: "True/SecretNotFound", u: "Unknown/NotChecked", c: "False/SecretNotFound"}},
		"bad url": {out: outcome{refusal: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "x")},
			want: map[string]string{e: "True/InvalidRepositoryUrl", u: "False/InvalidRepositoryUrl", c: "Unknown/NotChecked"}},
		"duplicate": {out: outcome{refusal: kernel.Refuse(v1.RepositoryCredentialReasonDuplicate, "x")},
			want: map[string]string{e: "True/DuplicateRepositoryCredentials", u: "Unknown/NotChecked", c: "Unknown/NotChecked"}},
		"repository missing": {out: outcome{verdict: Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "x")}},
			want: map[string]string{e: "True/InvalidRepositoryUrl", u: "False/InvalidRepositoryUrl", c: "Unknown/NotChecked"}},
		"credentials refused": {out: outcome{verdict: Verdict{Credential: kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials, "x")}},
			want: map[string]string{e: "True/InvalidCredentials", u: "True/ValidRepositoryUrl", c: "False/InvalidCredentials"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := conditions(tc.out.refusal, tc.out.verdict)
			assert.Equal(t, tc.want, status(got))
			assert.Equal(t, tc.out.failed(), meta.IsStatusConditionTrue(got, e))
		})
	}
}

// outcome is what one pass found: the refusal that kept the credentials from
// Argo CD, or the verdict of checking them; failed is the kernel's reading.
type outcome struct {
	refusal *kernel.Refusal
	verdict Verdict
}

func (o outcome) failed() bool { return firstRefusal(o.refusal, o.verdict) != nil }
