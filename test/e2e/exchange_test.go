//go:build e2e

// Exchanges and other providers: RFC 8693 impersonation at the Keycloak
// simulator, Google Identity Platform and its Firebase emulator.

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	r := robot.kubectl("auth", "whoami", "-o", "json")
	require.Equal(t, 0, r.code, "kubectl auth whoami: %s", r.stderr)
	var w whoami
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &w))
	assert.Equal(t, "keycloak:alice@example.com", w.Status.UserInfo.Username, "the API server sees the impersonated user")
	assert.Equal(t, exchanges+1, st.keycloak.Calls("token-exchange"))

	r = robot.kubectl("auth", "whoami", "-o", "json")
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
	g := st.google
	alice := newPerson(t, "alice", st.api["structured"], "--grant-type=identity-platform",
		"--oidc-issuer-url="+g.Issuer(), "--oidc-client-id="+confidentialClient, "--oidc-client-secret-file="+st.secretFile,
		"--identity-platform-api-key="+g.APIKey, "--identity-platform-endpoint="+g.URL, "--securetoken-endpoint="+g.URL,
		"--google-issuer-url="+st.issuer)
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "kubectl get pods: %s", r.stderr)
	assert.Equal(t, 1, alice.browserStarts(), "one Google sign-in")
	assert.GreaterOrEqual(t, g.Calls("signInWithIdp"), 1)

	r = alice.kubectl("auth", "whoami", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var w whoami
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &w))
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
	// pkg/login's TestUnsignedTokenRefusedWithoutEmulator.)
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
