package integration

import (
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// IdP faults on the refresh of an expired token: one clear line, a non-zero
// exit, a bounded number of requests, and a cache byte for byte as before.
// With a valid token cached, the same faults do not matter: nothing is asked.
func TestIdPFaults(t *testing.T) {
	tls := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate no CA here vouches for
	t.Cleanup(tls.Close)
	for _, tc := range []struct {
		name         string
		inject       func(e *env)
		issuer       string
		wantErr      string
		maxRefreshes int
		maxDuration  time.Duration
		extraArgs    []string
	}{
		{name: "500 with an OAuth error, every attempt", inject: func(e *env) {
			for range 4 {
				e.idp.FailNext(500, "application/json", `{"error":"server_error","error_description":"database\ndown"}`, "")
			}
		}, wantErr: "the identity provider answered 500 server_error: database down (after 4 attempts) (the cached refresh token is kept", maxRefreshes: 4},
		{name: "429 with a Retry-After past the retry budget", inject: func(e *env) {
			e.idp.FailNext(429, "application/json", `{"error":"slow_down"}`, "30")
		}, wantErr: "the identity provider answered 429 slow_down (gave up: the next retry, in 30s, would pass the 20s retry budget)", maxRefreshes: 1},
		{name: "slow answers past the timeout", inject: func(e *env) {
			for range 4 {
				e.idp.SlowNext(20 * time.Second)
			}
		}, extraArgs: []string{"--idp-request-timeout=1s"}, wantErr: "did not answer in time", maxRefreshes: 4, maxDuration: 8 * time.Second},
		{name: "malformed JSON, every attempt", inject: func(e *env) {
			for range 4 {
				e.idp.FailNext(200, "application/json", `{"access_token":"x",`, "")
			}
		}, wantErr: "answered 200 with an invalid token response: oauth2: cannot parse json: unexpected end of JSON input (after 4 attempts) (the cached refresh token is kept", maxRefreshes: 4},
		{name: "HTML error page, every attempt", inject: func(e *env) {
			for range 4 {
				e.idp.FailNext(502, "text/html", "<html><body><h1>502 Bad Gateway</h1>\n<p>nginx</p></body></html>", "")
			}
		}, wantErr: "the identity provider answered 502 with text/html, not an error document", maxRefreshes: 4},
		{name: "TLS certificate not trusted", issuer: tls.URL, extraArgs: []string{"--grant-type=client-credentials"},
			wantErr: "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			args := append([]string{"get-token"}, e.authArgs(tc.extraArgs...)...)
			login := e.run(nil, append([]string{"login"}, e.authArgs()...)...)
			require.Equal(t, 0, login.code, login.stderr)
			if tc.issuer != "" {
				// Another issuer (another cache key): the robot's login there fails.
				for i, a := range args {
					if strings.HasPrefix(a, "--oidc-issuer-url=") {
						args[i] = "--oidc-issuer-url=" + tc.issuer
					}
				}
			}

			// A valid token is served whatever the provider does.
			before := e.idp.TokenCalls("refresh_token")
			if tc.inject != nil {
				tc.inject(e)
			}
			if tc.issuer == "" {
				ok := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
				require.Equal(t, 0, ok.code, ok.stderr)
				assert.Equal(t, before, e.idp.TokenCalls("refresh_token"), "a valid cached token asks nothing")
				e.expireCache()
			}
			cache := cacheBytes(t, e)

			start := time.Now()
			r := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never, "KUBECTL_IMPERSONATE_CLIENT_SECRET=" + e.idp.ClientSecret}, args...)
			elapsed := time.Since(start)
			assert.Equal(t, 1, r.code, "exit 1")
			assert.Empty(t, r.stdout, "no ExecCredential")
			assert.Contains(t, r.stderr, tc.wantErr)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %q", r.stderr)
			assert.NotContains(t, r.stderr, "<html", "no error page on the terminal")
			assert.LessOrEqual(t, e.idp.TokenCalls("refresh_token")-before, tc.maxRefreshes, "bounded requests")
			if tc.maxDuration > 0 {
				assert.Less(t, elapsed, tc.maxDuration)
			}
			assert.Equal(t, cache, cacheBytes(t, e), "the cache is untouched")
			t.Logf("%s: exit %d in %s, %d refresh requests: %s", tc.name, r.code, elapsed.Round(time.Millisecond),
				e.idp.TokenCalls("refresh_token")-before, strings.TrimSpace(r.stderr))
		})
	}
}

func cacheBytes(t *testing.T, e *env) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// 50 processes at once with an empty cache and client credentials: one
// token request, one token for all; the duration of each process reported.
func TestFiftyProcessesClientCredentialsOnce(t *testing.T) {
	e := newEnv(t)
	e.idp.OmitIDToken(true)
	const n = 50
	results, durations := e.runConcurrently(n, []string{"KUBECTL_IMPERSONATE_CLIENT_SECRET=" + e.idp.ClientSecret, "KUBERNETES_EXEC_INFO=" + execInfoV1Never},
		append([]string{"get-token", "--grant-type=client-credentials"}, e.authArgs()...)...)
	tokens := map[string]bool{}
	for i, r := range results {
		require.Equal(t, 0, r.code, "process %d: %s", i, r.stderr)
		tokens[parseCred(t, r.stdout).Status.Token] = true
	}
	assert.Equal(t, 1, e.idp.TokenCalls("client_credentials"), "exactly one token request for %d processes", n)
	assert.Len(t, tokens, 1)
	t.Logf("%d processes on %d cores, empty cache, client credentials: 1 token request; process time p50 %s, max %s",
		n, runtime.NumCPU(), durations[n/2].Round(time.Millisecond), durations[n-1].Round(time.Millisecond))
}

// Every command at the highest verbosity against the test provider and a
// stand-in API server: no token, refresh token, authorization code or
// client secret in any stdout (but get-token's ExecCredential), stderr,
// kubeconfig or audit file; cache files 0600 in a 0700 directory.
func TestSecretHygiene(t *testing.T) {
	e := newEnv(t)
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"oidc:alice@example.com","groups":["oidc:dev","system:authenticated"]}}}`))
	}))
	t.Cleanup(api.Close)
	kubeconfig := filepath.Join(e.home, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+api.URL+`", certificate-authority-data: "`+
		base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}))+`"}}]
contexts: [{name: c, context: {cluster: c, user: nobody}}]
current-context: c
`), 0o600))
	audit := filepath.Join(e.home, "audit.log")

	outputs := map[string]string{}
	var secrets []string
	collect := func() {
		files, _ := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			entry, err := tokencacheDecode(b)
			require.NoError(t, err)
			secrets = append(secrets, entry...)
		}
	}
	step := func(name string, stdoutIsCredential bool, args ...string) {
		t.Helper()
		var env []string
		if args[0] == "get-token" { // kubectl's protocol: get-token only
			env = []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}
		}
		r := e.run(env, args...)
		require.Equal(t, 0, r.code, "%s: %s", name, r.stderr)
		if !stdoutIsCredential {
			outputs[name+" stdout"] = r.stdout
		}
		outputs[name+" stderr"] = r.stderr
	}
	step("login", false, append([]string{"login", "-v", "9", "--audit-log=" + audit}, e.authArgs()...)...)
	collect()
	step("get-token cached", true, append([]string{"get-token", "-v", "9"}, e.authArgs()...)...)
	e.expireCache()
	step("get-token refresh", true, append([]string{"get-token", "-v", "9", "--exchange-audit-log=" + audit}, e.authArgs()...)...)
	collect()
	step("setup", false, append([]string{"setup", "-v", "9"}, e.authArgs()...)...)
	step("setup --write", false, append([]string{"setup", "-v", "9", "--write", "--kubeconfig=" + kubeconfig, "--user=alice", "--context=c"}, e.authArgs()...)...)
	step("whoami", false, "whoami", "-v", "9", "--kubeconfig="+kubeconfig)
	step("claims", false, "claims", "-v", "9", "--kubeconfig="+kubeconfig, "--oidc-groups-claim=groups")
	step("groups", false, "groups", "-v", "9", "--kubeconfig="+kubeconfig)
	collect()
	// An exchange, which writes the audit file: CloudSigma's three tokens
	// and the robot's client secret join the secrets.
	sim := idp.New(t)
	r := e.run(append([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, robotEnv...),
		append([]string{"get-token", "-v", "9"}, cloudsigmaArgs(sim, e, "--impersonate-user-email=alice@example.com", "--exchange-audit-log="+audit)...)...)
	require.Equal(t, 0, r.code, r.stderr)
	outputs["cloudsigma get-token stderr"] = r.stderr
	collect()
	step("logout", false, append([]string{"logout", "-v", "9"}, e.authArgs()...)...)
	for _, name := range []string{kubeconfig, audit} {
		b, err := os.ReadFile(name)
		require.NoError(t, err, "%s exists", name)
		outputs[filepath.Base(name)] = string(b)
	}
	assert.Contains(t, outputs["audit.log"], `"step":"3/3 impersonate","outcome":"ok"`, "the exchange wrote its audit lines")
	secrets = append(secrets, e.idp.ClientSecret, "robot-secret")
	secrets = append(secrets, e.idp.IssuedCodes()...)
	require.GreaterOrEqual(t, len(e.idp.IssuedCodes()), 1)
	distinct := map[string]bool{}
	for _, s := range secrets {
		if s != "" {
			distinct[s] = true
		}
	}
	// ID, access and refresh token of the login; a new ID and access token
	// after the refresh; CloudSigma's service token, RPT and impersonated
	// token; two client secrets; at least one authorization code.
	require.GreaterOrEqual(t, len(distinct), 11, "distinct secrets")

	checked := 0
	for where, text := range outputs {
		for s := range distinct {
			checked++
			assert.NotContains(t, text, s, "a secret in %s", where)
		}
		assert.NotRegexp(t, `eyJ[A-Za-z0-9_-]{10,}\.eyJ`, text, "a JWT in %s", where)
	}
	assert.Equal(t, len(outputs)*len(distinct), checked, "every output checked for every secret")
	t.Logf("%d outputs × %d distinct secrets (%d authorization codes): %d checks, no leak", len(outputs), len(distinct), len(e.idp.IssuedCodes()), checked)

	// File modes.
	fi, err := os.Stat(e.cacheDir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "cache directory")
	files, _ := filepath.Glob(filepath.Join(e.cacheDir, "*"))
	require.NotEmpty(t, files)
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		if !fi.IsDir() {
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
		}
	}
	for _, f := range []string{kubeconfig, audit} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
}

// tokencacheDecode returns the tokens of a cache file.
func tokencacheDecode(b []byte) ([]string, error) {
	e, err := tokencache.DecodeEntry(b)
	if err != nil {
		return nil, err
	}
	return []string{e.IDToken, e.AccessToken, e.RefreshToken}, nil
}
