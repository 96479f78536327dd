package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// fleetKubeconfig writes a kubeconfig of three contexts: a and b share one
// user entry (one identity), c's entry asks for one scope more (another
// identity) and limits its tokens to another server. server receives
// status --check's requests.
func (e *env) fleetKubeconfig(server string) string {
	e.t.Helper()
	path := filepath.Join(e.home, "fleet-kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["one"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	exec := func(extra ...string) *clientcmdapi.ExecConfig {
		return &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: fastBinary, Args: e.authArgs(extra...),
			InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode, ProvideClusterInfo: true}
	}
	cfg.AuthInfos["alice"] = &clientcmdapi.AuthInfo{Exec: exec()}
	cfg.AuthInfos["alice-profile"] = &clientcmdapi.AuthInfo{Exec: exec("--oidc-extra-scope=profile", "--allowed-server=https://elsewhere.example.com")}
	cfg.AuthInfos["static"] = &clientcmdapi.AuthInfo{Token: "not-ours"}
	for name, user := range map[string]string{"a": "alice", "b": "alice", "c": "alice-profile", "static": "static"} {
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "one", AuthInfo: user}
	}
	cfg.CurrentContext = "a"
	require.NoError(e.t, clientcmd.WriteToFile(*cfg, path))
	return path
}

type statusOut struct {
	Sessions []struct {
		Context       string   `json:"context"`
		Identity      string   `json:"identity"`
		LoggedIn      bool     `json:"loggedIn"`
		Valid         bool     `json:"valid"`
		RefreshToken  bool     `json:"refreshToken"`
		Storage       string   `json:"storage"`
		AllowedServer string   `json:"allowedServer"`
		SharedWith    []string `json:"sharedWith"`
		Check         *struct {
			Username string `json:"username"`
			Error    string `json:"error"`
		} `json:"check"`
	} `json:"sessions"`
}

func (e *env) status(kubeconfig string, args ...string) statusOut {
	e.t.Helper()
	r := e.run(nil, append([]string{"status", "--kubeconfig=" + kubeconfig, "-o", "json"}, args...)...)
	require.Equal(e.t, 0, r.code, r.stderr)
	var out statusOut
	require.NoError(e.t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	return out
}

// TestStatusAndLogoutByContext: status reads who is logged in on each
// context from the cache, --check sends a token only where
// --allowed-server lets it go, and logout --context revokes (RFC 7009 at
// the in-process provider) and deletes that identity alone, naming the
// contexts that shared it.
func TestStatusAndLogoutByContext(t *testing.T) {
	e := newEnv(t)
	var requests atomic.Int32
	var gotAuth atomic.Value
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		gotAuth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"oidc:alice@example.com"}}}`)
	}))
	defer api.Close()
	kc := e.fleetKubeconfig(api.URL)

	out := e.status(kc)
	require.Len(t, out.Sessions, 3, "the static-token context is not ours")
	for _, s := range out.Sessions {
		assert.False(t, s.LoggedIn, s.Context)
	}

	for _, ctx := range []string{"a", "c"} {
		r := e.run(nil, "login", "--kubeconfig="+kc, "--context="+ctx)
		require.Equal(t, 0, r.code, r.stderr)
	}
	out = e.status(kc, "--check")
	byName := map[string]int{}
	for i, s := range out.Sessions {
		byName[s.Context] = i
	}
	a, b, c := out.Sessions[byName["a"]], out.Sessions[byName["b"]], out.Sessions[byName["c"]]
	for _, s := range []string{"a", "b", "c"} {
		row := out.Sessions[byName[s]]
		assert.True(t, row.LoggedIn && row.Valid && row.RefreshToken, s)
		assert.Equal(t, "alice@example.com", row.Identity, s)
		assert.Equal(t, "disk", row.Storage, s)
	}
	assert.Equal(t, []string{"b"}, a.SharedWith)
	assert.Equal(t, []string{"a"}, b.SharedWith)
	assert.Empty(t, c.SharedWith)
	assert.Equal(t, "any", a.AllowedServer)
	assert.Contains(t, c.AllowedServer, "it is not among the allowed servers")
	require.NotNil(t, a.Check)
	assert.Equal(t, "oidc:alice@example.com", a.Check.Username)
	assert.Nil(t, c.Check, "c's token may not go to this server: not sent")
	assert.Equal(t, int32(2), requests.Load(), "a and b checked, c never")
	assert.True(t, strings.HasPrefix(gotAuth.Load().(string), "Bearer ey"))

	// The table: one line per context, and why c's token stays home.
	r := e.run(nil, "status", "--kubeconfig="+kc)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "alice@example.com (shared with b)")
	assert.Contains(t, r.stderr, "c: refusing to hand a token to "+api.URL)

	// logout --context b: a's token goes too (one identity), c's stays.
	r = e.run(nil, "logout", "--kubeconfig="+kc, "--context=b")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Logged alice@example.com out of context b")
	assert.Contains(t, r.stdout, "tokens revoked at the provider and deleted")
	assert.Contains(t, r.stdout, "The same token served a: they log in again on their next call.")
	revs := e.idp.Revocations()
	require.Len(t, revs, 2)
	assert.Equal(t, oidctest.Revocation{Hint: "refresh_token", Kind: "refresh_token", Authenticated: true}, revs[0])
	assert.Equal(t, oidctest.Revocation{Hint: "access_token", Kind: "access_token", Authenticated: true}, revs[1])
	out = e.status(kc)
	assert.False(t, out.Sessions[byName["a"]].LoggedIn)
	assert.False(t, out.Sessions[byName["b"]].LoggedIn)
	assert.True(t, out.Sessions[byName["c"]].Valid, "c's identity is untouched")

	// A provider that cannot revoke now: reported, exit 1, deleted anyway.
	e.idp.SetRevocation(true, http.StatusServiceUnavailable)
	r = e.run(nil, "logout", "--kubeconfig="+kc, "--context=c")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "tokens deleted, but revoking them failed: the identity provider answered 503 temporarily_unavailable")
	assert.Contains(t, r.stderr, "the provider did not revoke the tokens of c (the local copies are deleted)")
	assert.False(t, e.status(kc).Sessions[byName["c"]].LoggedIn)
}

// TestLogoutWithoutRevocationEndpoint: a provider without one (Dex) is
// reported as such; --no-revoke asks nothing.
func TestLogoutWithoutRevocationEndpoint(t *testing.T) {
	e := newEnv(t)
	e.idp.SetRevocation(false, 0)
	kc := e.fleetKubeconfig("https://127.0.0.1:1")
	require.Equal(t, 0, e.run(nil, "login", "--kubeconfig="+kc).code)
	r := e.run(nil, "logout", "--kubeconfig="+kc)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "the provider has no revocation endpoint, so its refresh token stays valid there until it expires")

	e.idp.SetRevocation(true, 0)
	require.Equal(t, 0, e.run(nil, "login", "--kubeconfig="+kc).code)
	r = e.run(nil, "logout", "--kubeconfig="+kc, "--context=a", "--no-revoke", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"revocation": "skipped"`)
	assert.Empty(t, e.idp.Revocations())
}

// TestLoginFlagsOverrideTheEntry: login --context with a flag keeps the
// rest of the entry's settings.
func TestLoginFlagsOverrideTheEntry(t *testing.T) {
	e := newEnv(t)
	kc := e.fleetKubeconfig("https://127.0.0.1:1")
	port := testkit.MustFreePort(t)
	r := e.run(nil, "login", "--kubeconfig="+kc, "--force", fmt.Sprintf("--listen-address=127.0.0.1:%d", port))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, e.idp.LastAuthParams().Get("redirect_uri"), fmt.Sprintf(":%d", port), "the flag is used")
	assert.Equal(t, "email groups openid", sortedScope(e.idp.LastAuthParams().Get("scope")), "the entry's scopes")
	out := e.status(kc)
	assert.True(t, out.Sessions[0].Valid, "the entry's identity is logged in: %+v", out.Sessions[0])
}

func sortedScope(s string) string {
	f := strings.Fields(s)
	for i := range f {
		for j := i + 1; j < len(f); j++ {
			if f[j] < f[i] {
				f[i], f[j] = f[j], f[i]
			}
		}
	}
	return strings.Join(f, " ")
}

// TestLoginStorm: 50 get-token processes at once, kubectl-style, with a
// dead refresh token and an abandoned browser login: one browser opens;
// the process that opened it fails when the login times out, and every
// other one fails at once with the cooldown line instead of opening
// another. Non-interactive: no browser at all. A browser that completes
// the login: one browser, 50 tokens.
func TestLoginStorm(t *testing.T) {
	const n = 50
	for _, tc := range []struct {
		name        string
		execInfo    string
		completes   bool
		wantBrowser int
	}{
		{name: "abandoned login, interactive", execInfo: execInfoV1Interactive, wantBrowser: 1},
		{name: "non-interactive", execInfo: execInfoV1Never, wantBrowser: 0},
		{name: "completed login, interactive", execInfo: execInfoV1Interactive, completes: true, wantBrowser: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			require.Equal(t, 0, e.run(nil, append([]string{"login"}, e.authArgs()...)...).code)
			killRefreshToken(t, e)
			log := filepath.Join(e.home, "browser.log")
			script := "#!/bin/sh\necho start >> " + log + "\n"
			if tc.completes {
				script += `exec curl -sfL -o /dev/null "$1"` + "\n"
			}
			browser := filepath.Join(e.home, "browser")
			require.NoError(t, os.WriteFile(browser, []byte(script), 0o700))
			auth0 := e.idp.AuthRequests()
			args := append([]string{"get-token"}, e.authArgs("--browser-command="+browser, "--authentication-timeout=4s")...)
			results, durations := e.runConcurrently(n, []string{"KUBERNETES_EXEC_INFO=" + tc.execInfo}, args...)
			t.Logf("%s: %d processes, p50 %s, max %s", tc.name, n, durations[n/2].Round(time.Millisecond), durations[n-1].Round(time.Millisecond))

			b, _ := os.ReadFile(log)
			assert.Equal(t, tc.wantBrowser, strings.Count(string(b), "start"), "browsers opened")
			assert.Equal(t, 1, e.idp.TokenCalls("refresh_token"), "the dead refresh token was presented once")
			var ok, cooling, other int
			for _, r := range results {
				switch {
				case r.code == 0:
					ok++
				case strings.Contains(r.stderr, "another may start in"):
					if cooling++; cooling == 1 {
						t.Logf("the cooldown line: %s", r.stderr)
					}
					assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %s", r.stderr)
				default:
					other++
				}
			}
			switch {
			case tc.completes:
				assert.Equal(t, n, ok)
				assert.Equal(t, auth0+1, e.idp.AuthRequests())
			case tc.execInfo == execInfoV1Never:
				assert.Equal(t, n, other, "each fails with the non-interactive line")
				assert.Equal(t, auth0, e.idp.AuthRequests())
			default:
				assert.Equal(t, 1, other, "the process whose login timed out")
				assert.Equal(t, n-1, cooling, "the others")
			}
		})
	}
}

// killRefreshToken makes the cached entry expired with a refresh token the
// provider does not know (revoked, or expired there).
func killRefreshToken(t *testing.T, e *env) {
	t.Helper()
	e.expireCache()
	entries, err := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	require.NoError(t, err)
	b, err := os.ReadFile(entries[0])
	require.NoError(t, err)
	entry, err := tokencache.DecodeEntry(b)
	require.NoError(t, err)
	entry.RefreshToken = "rt-dead"
	b, err = entry.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(entries[0], b, 0o600))
}

// TestSessionsHostileKubeconfig: names from a kubeconfig someone else
// wrote reach the terminal escaped (no escape sequence passes), and one
// context whose entry cannot be read does not stop logout --all.
func TestSessionsHostileKubeconfig(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.home, "hostile-kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["one"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	evil := "prod\x1b]0;pwned\x07\x1b[2K\tx"
	cfg.AuthInfos["alice"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: fastBinary, Args: e.authArgs(), ProvideClusterInfo: true}}
	cfg.AuthInfos["broken"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: fastBinary,
		Args: []string{"--oidc-client-id=k", "--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir}}}
	cfg.Contexts[evil] = &clientcmdapi.Context{Cluster: "one", AuthInfo: "alice"}
	cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "one", AuthInfo: "broken"}
	cfg.CurrentContext = evil
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))

	r := e.run(nil, "login", "--kubeconfig="+path)
	require.Equal(t, 0, r.code, r.stderr)
	r = e.run(nil, "status", "--kubeconfig="+path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, "\x1b", "no escape sequence reaches the terminal")
	assert.Contains(t, r.stdout, `prod\x1b]0;pwned\a\x1b[2K\tx`)
	assert.Contains(t, r.stdout, "alice@example.com")

	r = e.run(nil, "logout", "--all", "--kubeconfig="+path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, "\x1b")
	assert.Contains(t, r.stderr, "context broken: --oidc-issuer-url is required")
	assert.Contains(t, r.stdout, "Deleted every cached token of kubectl-impersonate.")
	files, _ := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	assert.Empty(t, files)
}
