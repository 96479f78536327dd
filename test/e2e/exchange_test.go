//go:build e2e

// Exchanges and other providers: RFC 8693 impersonation at the Keycloak
// simulator, Google Identity Platform and its Firebase emulator.

package e2e

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
)

// The RFC 8693 path: a robot logs in with client credentials to Keycloak
// (simulated: no real Keycloak runs here), exchanges its token for one that
// acts as alice (V1 requested_subject), and the API server, trusting that
// issuer as its second JWT authenticator, sees alice.
func TestTokenExchangeImpersonation(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "robot.secret")
	require.NoError(t, os.WriteFile(secret, []byte("robot-secret\n"), 0o600))
	robot := newPerson(t, "alice", st.api["structured"], "--oidc-issuer-url="+st.keycloak.Issuer(), "--oidc-client-id=robot",
		"--grant-type=client-credentials", "--oidc-client-secret-file="+secret, "--exec-interactive-mode=Never",
		"--exchange=token-exchange", "--impersonate-user=alice", "--exchange-audience=robot")
	exchanges := st.keycloak.Calls("token-exchange")

	w := robot.whoami()
	assert.Equal(t, "keycloak:alice@example.com", w.Status.UserInfo.Username, "the API server sees the impersonated user")
	assert.Equal(t, exchanges+1, st.keycloak.Calls("token-exchange"))

	r := robot.kubectl("auth", "whoami", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, exchanges+1, st.keycloak.Calls("token-exchange"), "the exchanged token comes from the cache")
	assert.Zero(t, robot.browserStarts())

	kc, err := os.ReadFile(robot.kubeconfig)
	require.NoError(t, err)
	assert.NotContains(t, string(kc), "robot-secret")
}

// Google Cloud Identity Platform: Chromium signs in "with Google" (Dex),
// signInWithIdp and securetoken at the simulator, and the API server, trusting
// that issuer with username email and groups gcp.iam.roles, grants the
// cluster-viewer group read access and no writes.
func TestIdentityPlatform(t *testing.T) {
	onFirstVersionOnly(t)
	g := st.google
	alice := newPerson(t, "alice", st.api["structured"], "--grant-type=identity-platform",
		"--oidc-issuer-url="+g.Issuer(), "--oidc-client-id="+confidentialClient, "--oidc-client-secret-file="+st.secretFile,
		"--identity-platform-api-key="+g.APIKey, "--identity-platform-endpoint="+g.URL, "--securetoken-endpoint="+g.URL,
		"--google-issuer-url="+st.issuer)
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "kubectl get pods: %s", r.stderr)
	assert.Equal(t, 1, alice.browserStarts(), "one Google sign-in")
	assert.GreaterOrEqual(t, g.Calls("signInWithIdp"), 1)

	w := alice.whoami()
	assert.Equal(t, "alice@example.com", w.Status.UserInfo.Username)
	assert.Contains(t, w.Status.UserInfo.Groups, "cluster-viewer")

	r = alice.kubectl("create", "configmap", "x", "-n", "team-a")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, `User "alice@example.com" cannot create resource "configmaps"`)
}

// Identity Platform steps 2-3 against a real peer, the Firebase Auth
// emulator: signInWithIdp with the Google (Dex) ID token, then a silent
// refresh at its securetoken endpoint. Its tokens are unsigned, which the
// plugin accepts only with --identity-platform-emulator.
func TestIdentityPlatformFirebaseEmulator(t *testing.T) {
	onFirstVersionOnly(t)
	issuer := "https://securetoken.google.com/demo-project"
	args := []string{"--grant-type=identity-platform", "--oidc-issuer-url=" + issuer,
		"--oidc-client-id=" + confidentialClient, "--oidc-client-secret-file=" + st.secretFile,
		"--identity-platform-api-key=fake-api-key", "--identity-platform-emulator",
		"--identity-platform-endpoint=" + st.firebase + "/identitytoolkit.googleapis.com",
		"--securetoken-endpoint=" + st.firebase + "/securetoken.googleapis.com",
		"--google-issuer-url=" + st.issuer, "--oidc-certificate-authority=" + st.caFile,
		"--browser-command=" + st.browser, "--token-cache-storage=disk"}
	alice := newPerson(t, "alice", st.api["structured"])
	r := alice.plugin(nil, append([]string{"login"}, args...)...)
	require.Equal(t, 0, r.code, "login: %s", r.stderr)
	assert.Contains(t, r.stdout, "Logged in as alice@example.com")

	r = alice.plugin([]string{execInfoNever}, append([]string{"get-token"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	tok := credentialToken(t, r.stdout)
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	assert.Contains(t, string(payload), `"iss":"`+issuer+`"`)
	assert.Contains(t, string(payload), `"sign_in_provider":"google.com"`)

	// Expire the cached entry: the next call refreshes at the emulator.
	files := alice.diskEntries()
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var entry map[string]any
	require.NoError(t, json.Unmarshal(b, &entry))
	entry["id_token_expiry"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	b, _ = json.Marshal(entry)
	require.NoError(t, os.WriteFile(files[0], b, 0o600))
	r = alice.plugin([]string{execInfoNever}, append([]string{"get-token", "-v", "1"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "identity platform: refresh at "+st.firebase+"/securetoken.googleapis.com")
	assert.NotContains(t, r.stderr, "fake-api-key", "the API key stays out of logs")
	assert.Equal(t, 1, alice.browserStarts(), "the refresh needs no browser")

	// Without the emulator flag the token would be verified against
	// securetoken.google.com's keys, which this offline machine cannot
	// reach: the login fails at discovery, before any token is accepted.
	// (The refusal of an unsigned token itself is asserted offline by
	// pkg/idp/login's TestUnsignedTokenRefusedWithoutEmulator.)
	var strict []string
	for _, a := range args {
		if a != "--identity-platform-emulator" {
			strict = append(strict, a)
		}
	}
	r = alice.plugin(nil, append([]string{"login", "--force", "--token-cache-storage=none"}, strict[:len(strict)-1]...)...)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "discovering OIDC provider https://securetoken.google.com/demo-project")
}

// TestFederatedRobot: a robot registered at the Keycloak simulator without
// a secret authenticates with its service-account token from the real
// kube-apiserver (TokenRequest, audience the realm), read from a file at
// each request as a projected token would be; the simulator checks it as
// Keycloak's federated client authentication does (the cluster's keys from
// its JWKS, iss, sub the registered service account, aud the realm, exp;
// the same token accepted again). It logs in with client credentials, then
// exchanges for alice (the exchange authenticates the client too), and
// kubectl runs as alice. The kubeconfig, the cache and argv hold no token
// of the service account; the provider refuses the request without the
// token, with another service account's and with one for another audience.
func TestFederatedRobot(t *testing.T) {
	api := st.api["structured"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	kubectlApply(t, admin, `apiVersion: v1
kind: Namespace
metadata: {name: robots}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ci, namespace: robots}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: other, namespace: robots}
`)
	saToken := func(sa, aud string) string {
		out, err := exec.Command(st.kubectl, "--kubeconfig="+admin, "create", "token", sa, "-n", "robots", "--audience="+aud, "--duration=10m").Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	// The cluster's service-account keys, as Keycloak's Kubernetes identity
	// provider reads them from the API server.
	req, err := http.NewRequest(http.MethodGet, api.url+"/openid/v1/jwks", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := st.tlsClient().Do(req)
	require.NoError(t, err)
	var jwks jose.JSONWebKeySet
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&jwks))
	_ = resp.Body.Close()
	require.NotEmpty(t, jwks.Keys)
	var keys []crypto.PublicKey
	for _, k := range jwks.Keys {
		keys = append(keys, k.Key)
	}
	const client = "ci-robot"
	st.keycloak.Configure(func(s *idp.Sim) { s.Clients[client] = &idp.Client{Exchange: true, Impersonation: true} })
	st.keycloak.Assertions.TrustFederation(oidctest.Federation{ClientID: client, Issuer: "https://kubernetes.default.svc",
		Subject: "system:serviceaccount:robots:ci", Keys: keys})

	tokenFile := filepath.Join(t.TempDir(), "token")
	first := saToken("ci", st.keycloak.Issuer())
	require.NoError(t, os.WriteFile(tokenFile, []byte(first), 0o600))
	robot := newPerson(t, "alice", api, "--oidc-issuer-url="+st.keycloak.Issuer(), "--oidc-client-id="+client,
		"--grant-type=client-credentials", "--oidc-client-assertion-file="+tokenFile, "--exec-interactive-mode=Never",
		"--exchange=token-exchange", "--impersonate-user=alice", "--exchange-audience=robot", "--token-cache-storage=disk")
	refusals := len(st.keycloak.Assertions.Refusals())
	exchanges := st.keycloak.Calls("token-exchange")
	w := robot.whoami()
	assert.Equal(t, "keycloak:alice@example.com", w.Status.UserInfo.Username)
	assert.Equal(t, exchanges+1, st.keycloak.Calls("token-exchange"))
	assert.Equal(t, "assertion", st.keycloak.LastClientAuth(), "the exchange authenticated the client by its token")
	assert.Len(t, st.keycloak.Assertions.Refusals(), refusals, "no assertion refused")

	// The kubelet rotates the projected token: the next request reads the new one.
	second := saToken("ci", st.keycloak.Issuer())
	require.NotEqual(t, first, second)
	require.NoError(t, os.WriteFile(tokenFile, []byte(second), 0o600))
	// Two entries: the robot's own token and the exchanged one.
	cache := robot.diskEntries()
	require.Len(t, cache, 2)
	var cached []byte
	for _, f := range cache {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		cached = append(cached, b...)
		require.NoError(t, os.Remove(f))
	}
	r := robot.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "keycloak:alice@example.com")
	assert.Equal(t, exchanges+2, st.keycloak.Calls("token-exchange"))
	assert.Len(t, st.keycloak.Assertions.Refusals(), refusals, "the rotated token is accepted")

	kc, err := os.ReadFile(robot.kubeconfig)
	require.NoError(t, err)
	for what, s := range map[string]string{"kubeconfig": string(kc), "cache": string(cached), "argv": strings.Join(robot.setup, " ")} {
		for _, tok := range []string{first, second} {
			assert.NotContains(t, s, tok[len(tok)-40:], "the %s holds no service-account token", what)
		}
	}

	for _, tt := range []struct{ name, assertion, why string }{
		{"no assertion", "", ""},
		{"another service account's token", saToken("other", st.keycloak.Issuer()), "not the federated subject"},
		{"a token for another audience", saToken("ci", "https://elsewhere.example.com"), "aud"},
	} {
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {client}}
		if tt.assertion != "" {
			form.Set("client_assertion_type", oauth.AssertionType)
			form.Set("client_assertion", tt.assertion)
		}
		resp, err := st.tlsClient().PostForm(st.keycloak.TokenURL(), form)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, tt.name)
		if tt.why != "" {
			got := st.keycloak.Assertions.Refusals()
			require.NotEmpty(t, got)
			assert.Contains(t, got[len(got)-1], tt.why, tt.name)
		}
	}
}
