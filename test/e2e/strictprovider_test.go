//go:build e2e

// The second certified provider, panva's oidc-provider, configured as
// strict providers are (test/e2e/node/provider.mjs): consent before
// offline_access, PKCE required, refresh tokens rotated with reuse
// detection, RFC 7009 revocation, the device flow, and a robot registered
// without a secret (private_key_jwt).

package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
)

// onFirstVersionOnly skips a test whose subject does not depend on
// Kubernetes (a provider's or a client's behavior, the docs) on every
// version but the first of the run (run.sh: E2E_K8S_VERSIONS), to keep the
// suite's time.
func onFirstVersionOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("KI_E2E_FIRST") != "1" {
		t.Skipf("does not depend on the Kubernetes version: run with the first version of the run only, not %s",
			os.Getenv("KI_E2E_K8S"))
	}
}

// opPerson is alice with a kubeconfig whose entry logs in at oidc-provider
// (disk cache: the tests read the refresh token from it).
func opPerson(t *testing.T, extra ...string) *person {
	t.Helper()
	return newPerson(t, "alice", st.api["structured"], append([]string{"--oidc-issuer-url=" + st.op.url, "--oidc-client-id=" + opClient,
		"--oidc-extra-scope=email", "--oidc-extra-scope=groups", "--oidc-extra-scope=offline_access", "--token-cache-storage=disk"}, extra...)...)
}

// cachedEntry is the person's one disk cache entry.
func (p *person) cachedEntry() map[string]any {
	p.t.Helper()
	files := p.diskEntries()
	require.Len(p.t, files, 1, "one cache entry")
	b, err := os.ReadFile(files[0])
	require.NoError(p.t, err)
	var e map[string]any
	require.NoError(p.t, json.Unmarshal(b, &e))
	return e
}

// opToken posts form to oidc-provider's token endpoint (through the
// counting proxy) and returns the status and the OAuth error code.
func opToken(t *testing.T, form url.Values) (int, string) {
	t.Helper()
	resp, err := st.tlsClient().PostForm(st.op.url+"/token", form)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error
}

// opRefresh redeems a refresh token of the people's client directly.
func opRefresh(t *testing.T, rt string) (int, string) {
	t.Helper()
	return opToken(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {opClient}})
}

func (p *person) browserPages() string {
	b, _ := os.ReadFile(p.browserLog)
	return string(b)
}

// TestStrictProviderLoginAndRevocation: Chromium logs in at oidc-provider,
// which asks consent before it grants offline_access (prompt=consent, as
// docs/troubleshooting.md says); the API server maps the ID token; logout
// --context revokes at the real RFC 7009 endpoint, after which the
// provider refuses the refresh token.
func TestStrictProviderLoginAndRevocation(t *testing.T) {
	alice := opPerson(t, "--oidc-auth-request-extra-params=prompt=consent")
	auth0 := st.op.Count("auth")
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "kubectl get pods: %s", r.stderr)
	assert.Equal(t, 1, alice.browserStarts())
	assert.Equal(t, auth0+1, st.op.Count("auth"))
	assert.Contains(t, alice.browserPages(), ": consent", "the provider asked consent")
	assert.NotContains(t, r.stderr, "issued no refresh token")
	rt, _ := alice.cachedEntry()["refresh_token"].(string)
	require.NotEmpty(t, rt, "offline_access granted after consent")

	w := alice.whoami()
	assert.Equal(t, "op:alice@example.com", w.Status.UserInfo.Username)
	assert.Contains(t, w.Status.UserInfo.Groups, "op:developers")

	revoked := st.op.Count("revoke")
	r = alice.plugin(nil, "logout", "--kubeconfig="+alice.kubeconfig, "--context=e2e", "-o", "json")
	require.Equal(t, 0, r.code, "logout: %s %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, `"revocation": "revoked"`)
	assert.GreaterOrEqual(t, st.op.Count("revoke"), revoked+1, "the revocation endpoint was called")
	assert.Empty(t, alice.diskEntries(), "the local copy is deleted")
	status, code := opRefresh(t, rt)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "invalid_grant", code, "the provider refuses the revoked refresh token")
}

// TestStrictProviderWithoutConsent: without prompt=consent the provider
// drops offline_access (its consent page grants the other scopes); the
// login works and says, in one line, that no
// refresh token came and how to get one.
func TestStrictProviderWithoutConsent(t *testing.T) {
	onFirstVersionOnly(t)
	alice := opPerson(t)
	r := alice.plugin(nil, "login", "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, r.code, "login: %s", r.stderr)
	assert.Contains(t, r.stderr, "the provider issued no refresh token although offline_access was requested")
	assert.Contains(t, r.stderr, "--oidc-auth-request-extra-params=prompt=consent")
	assert.Contains(t, alice.browserPages(), ": consent", "consent to the other scopes, not to offline_access")
	_, hasRT := alice.cachedEntry()["refresh_token"]
	assert.False(t, hasRT, "no refresh token cached")
}

// TestStrictProviderRotationRace: 50 kubectl processes in the renewal
// window refresh once at a provider that rotates refresh tokens with reuse
// detection; afterwards the rotated-out token, presented again, revokes
// the whole grant: even the newest refresh token is refused (detection is
// on, so a second refresh by the race would have been caught).
func TestStrictProviderRotationRace(t *testing.T) {
	onFirstVersionOnly(t)
	alice := opPerson(t, "--oidc-auth-request-extra-params=prompt=consent")
	r := alice.kubectl("get", "pods", "-n", "team-a")
	loggedIn := time.Now()
	require.Equal(t, 0, r.code, "kubectl get pods: %s", r.stderr)
	rt0, _ := alice.cachedEntry()["refresh_token"].(string)
	require.NotEmpty(t, rt0)

	// Renewed in the last third of its 30 s: at 22 s it is still valid.
	time.Sleep(time.Until(loggedIn.Add(opTokenLifetime - opTokenLifetime/3 + 2*time.Second)))
	refresh0, auth0 := st.op.Count("token:refresh_token"), st.op.Count("auth")
	const n = 50
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = alice.kubectl("get", "pods", "-n", "team-a")
		}()
	}
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, 0, r.code, "kubectl %d: %s", i, r.stderr)
	}
	assert.Equal(t, refresh0+1, st.op.Count("token:refresh_token"), "one refresh at the provider for %d kubectl processes", n)
	assert.Equal(t, auth0, st.op.Count("auth"), "no new login")
	assert.Equal(t, 1, alice.browserStarts(), "no browser")
	rt1, _ := alice.cachedEntry()["refresh_token"].(string)
	require.NotEmpty(t, rt1)
	require.NotEqual(t, rt0, rt1, "the provider rotated the refresh token")

	status, code := opRefresh(t, rt0)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "invalid_grant", code, "the rotated-out token is refused")
	status, code = opRefresh(t, rt1)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "invalid_grant", code, "its reuse revoked the grant: the newest token is refused too")
}

// TestStrictProviderDeviceFlow: the device authorization grant at
// oidc-provider, Chromium confirming the code on its pages.
func TestStrictProviderDeviceFlow(t *testing.T) {
	onFirstVersionOnly(t)
	alice := opPerson(t, "--grant-type=device-code")
	device0 := st.op.Count("device")
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "kubectl get pods: %s", r.stderr)
	assert.Contains(t, r.stderr, "and enter the code")
	assert.Equal(t, device0+1, st.op.Count("device"))
	assert.Contains(t, alice.browserPages(), ": op-device", "Chromium confirmed the code at the provider")
	assert.Equal(t, 1, alice.browserStarts())
}

// TestPrivateKeyJWTRobot: a robot registered at oidc-provider without a
// secret (private_key_jwt), its key under the kid its operator chose
// (robot-1), runs kubectl with the entry setup wrote; its kubeconfig,
// cache, argv and -v 9 log hold no key and no assertion; each token
// request carries a fresh assertion (the provider refuses a replayed jti,
// one without an assertion, an expired one, one naming the key by another
// kid: asserted below).
func TestPrivateKeyJWTRobot(t *testing.T) {
	robotFlags := []string{"--oidc-issuer-url=" + st.op.url, "--oidc-client-id=" + opRobot,
		"--grant-type=client-credentials", "--oidc-client-auth-method=private-key-jwt", "--oidc-client-key-file=" + st.opRobotKey,
		"--exec-interactive-mode=Never", "--token-cache-storage=disk"}
	// Without the registered kid (the thumbprint, the default), the
	// provider does not find the key (issue 47).
	thumbprinted := newPerson(t, "alice", st.api["structured"], robotFlags...)
	r := thumbprinted.kubectl("get", "pods", "-n", "team-a")
	assert.NotEqual(t, 0, r.code, "the thumbprint is not the kid oidc-provider knows the key by")
	assert.Contains(t, r.stderr, "invalid_client")

	robot := newPerson(t, "alice", st.api["structured"], append(robotFlags, "--oidc-client-key-id="+opRobotKeyID)...)
	cc0 := st.op.Count("token:client_credentials")
	w := robot.whoami()
	assert.Equal(t, "op-client:robot", w.Status.UserInfo.Username)
	r = robot.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, cc0+1, st.op.Count("token:client_credentials"), "the second kubectl uses the cache")

	// The cache gone, the next token request signs a new assertion (a
	// replayed one would be refused).
	for _, f := range robot.diskEntries() {
		require.NoError(t, os.Remove(f))
	}
	r = robot.kubectl("get", "pods", "-n", "team-a", "-v", "9")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, cc0+2, st.op.Count("token:client_credentials"))

	keyPEM, err := os.ReadFile(st.opRobotKey)
	require.NoError(t, err)
	keyBody := strings.Split(string(keyPEM), "\n")[1]
	kc, err := os.ReadFile(robot.kubeconfig)
	require.NoError(t, err)
	cache, err := os.ReadFile(robot.diskEntries()[0])
	require.NoError(t, err)
	for what, s := range map[string]string{"kubeconfig": string(kc), "cache": string(cache), "argv": strings.Join(robot.setup, " "), "stderr": r.stderr} {
		assert.NotContains(t, s, keyBody, "the %s holds no key", what)
		assert.NotContains(t, s, "client_assertion", "the %s holds no assertion", what)
	}
	assert.Contains(t, string(kc), "--oidc-client-key-file="+st.opRobotKey, "the entry names the key file")
	assert.Contains(t, string(kc), "--oidc-client-key-id="+opRobotKeyID, "and the key's kid")

	// The provider refuses what the plugin never sends.
	key, err := oauth.LoadKey(st.opRobotKey)
	require.NoError(t, err)
	signAs := func(kid string, now time.Time) string {
		a, err := (&oauth.Signer{ClientID: opRobot, Key: key, KeyID: kid, Audience: st.op.url, Now: func() time.Time { return now }}).Assertion(st.op.url + "/token")
		require.NoError(t, err)
		return a
	}
	sign := func(now time.Time) string { return signAs(opRobotKeyID, now) }
	form := func(assertion string) url.Values {
		f := url.Values{"grant_type": {"client_credentials"}, "client_id": {opRobot}}
		if assertion != "" {
			f.Set("client_assertion_type", oauth.AssertionType)
			f.Set("client_assertion", assertion)
		}
		return f
	}
	fresh := sign(time.Now())
	for _, tt := range []struct {
		name       string
		form       url.Values
		wantStatus int
	}{
		{"a fresh assertion (control)", form(fresh), http.StatusOK},
		{"the same assertion again (a replayed jti)", form(fresh), http.StatusUnauthorized},
		{"no assertion", form(""), http.StatusUnauthorized},
		{"an expired assertion", form(sign(time.Now().Add(-3 * time.Minute))), http.StatusUnauthorized},
		{"the key named by its thumbprint, not its registered kid", form(signAs("", time.Now())), http.StatusUnauthorized},
	} {
		status, code := opToken(t, tt.form)
		assert.Equal(t, tt.wantStatus, status, "%s: %s", tt.name, code)
		if tt.wantStatus != http.StatusOK {
			assert.Equal(t, "invalid_client", code, tt.name)
		}
	}
}
