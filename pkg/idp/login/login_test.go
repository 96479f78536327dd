package login

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// browser follows redirects like a browser whose user approves at once.
func browser(t *testing.T) func(string) error { return browserWith(t, http.DefaultClient) }

// browserWith follows the login URL with hc, as a browser would.
func browserWith(t *testing.T, hc *http.Client) func(string) error {
	return func(u string) error {
		go func() {
			resp, err := hc.Get(u)
			if err != nil {
				t.Logf("browser: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}()
		return nil
	}
}

func newClient(t *testing.T, srv *oidctest.Server, mutate func(*Config)) (*Client, *testkit.SyncBuffer) {
	stderr := &testkit.SyncBuffer{}
	cfg := Config{
		OIDC: credspec.OIDC{IssuerURL: srv.Issuer(), ClientID: srv.ClientID, ExtraScopes: []string{"email", "groups"},
			GrantType: credspec.GrantAuthCode, ListenAddresses: []string{"127.0.0.1:0"}, AuthTimeout: 10 * time.Second},
		Interactive: true, Stderr: stderr, OpenURL: browser(t),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return New(cfg), stderr
}

func TestAuthCode(t *testing.T) {
	srv := oidctest.New(t)
	c, stderr := newClient(t, srv, nil)
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.NotEmpty(t, e.IDToken)
	assert.NotEmpty(t, e.RefreshToken)
	assert.WithinDuration(t, time.Now().Add(time.Hour), e.IDTokenExpiry, time.Minute)
	assert.Equal(t, credspec.GrantAuthCode, e.GrantType)

	p := srv.LastAuthParams()
	assert.Equal(t, "S256", p.Get("code_challenge_method"))
	assert.NotEmpty(t, p.Get("nonce"))
	assert.NotEmpty(t, p.Get("state"))
	assert.Equal(t, "email groups openid", p.Get("scope"))
	redirect, err := url.Parse(p.Get("redirect_uri"))
	require.NoError(t, err)
	assert.Equal(t, "http", redirect.Scheme)
	assert.Contains(t, stderr.String(), "Open http://")
	assert.NotContains(t, stderr.String(), e.IDToken)
}

func TestAuthCodeRejectsTamperedIDTokens(t *testing.T) {
	tests := []struct {
		tamper        oidctest.Tamper
		wantErrSubstr string
	}{
		{oidctest.TamperAlgNone, `unexpected signature algorithm "none"`},
		{oidctest.TamperHS256PubKey, `unexpected signature algorithm "HS256"`},
		{oidctest.TamperBadSig, "failed to verify id token signature"},
		{oidctest.TamperUnknownKid, "failed to verify id token signature"},
		{oidctest.TamperWrongIss, "id token issued by a different provider"},
		{oidctest.TamperWrongAud, "expected audience"},
		{oidctest.TamperWrongNonce, "nonce does not match"},
		{oidctest.TamperExpired, "token is expired"},
		{oidctest.TamperNotYetValid, "before the nbf"},
	}
	srv := oidctest.New(t)
	rejected := 0
	for _, tt := range tests {
		t.Run(string(tt.tamper), func(t *testing.T) {
			c, _ := newClient(t, srv, nil)
			// A sound login first: the client holds the key set.
			srv.SetTamper(oidctest.TamperNone)
			_, err := c.Grant(context.Background())
			require.NoError(t, err)
			srv.SetTamper(tt.tamper)
			_, err = c.Grant(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErrSubstr)
			rejected++
		})
	}
	assert.Equal(t, len(tests), rejected)
	srv.SetTamper(oidctest.TamperNone)
	c, _ := newClient(t, srv, nil)
	_, err := c.Grant(context.Background())
	require.NoError(t, err, "the same server with a sound token must pass")
}

func TestAuthCodeKeyboard(t *testing.T) {
	srv := oidctest.New(t)
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	c, stderr := newClient(t, srv, func(c *Config) {
		c.GrantType = credspec.GrantAuthCodeKeyboard
		c.Stdin = stdinR
		c.OpenURL = func(string) error { t.Error("keyboard mode must not open a browser"); return nil }
	})
	go func() {
		re := regexp.MustCompile(`http://\S+/auth\?\S+`)
		for range 200 {
			if m := re.FindString(stderr.String()); m != "" {
				resp, err := http.Get(m)
				if err != nil {
					t.Errorf("GET auth URL: %v", err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				_, _ = io.WriteString(stdinW, oidctest.CodeFromOOBPage(string(body))+"\n")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("no authorization URL on stderr")
	}()
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.NotEmpty(t, e.IDToken)
	assert.Equal(t, credspec.OOBRedirectURL, srv.LastAuthParams().Get("redirect_uri"))
}

func TestCodeFromInput(t *testing.T) {
	tests := []struct {
		name, input, want, wantErrSubstr string
	}{
		{name: "bare code", input: "abc", want: "abc"},
		{name: "redirect URL", input: "http://localhost:8000/?code=xyz&state=S", want: "xyz"},
		{name: "other state", input: "http://localhost:8000/?code=xyz&state=T", wantErrSubstr: "another login's state"},
		{name: "error", input: "http://localhost:8000/?error=access_denied&state=S", wantErrSubstr: "refused the login: access_denied"},
		{name: "empty", input: "", wantErrSubstr: "no code entered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codeFromInput(tt.input, "S")
			if tt.wantErrSubstr != "" {
				require.ErrorContains(t, err, tt.wantErrSubstr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDeviceCode(t *testing.T) {
	srv := oidctest.New(t)
	c, stderr := newClient(t, srv, func(c *Config) {
		c.GrantType = credspec.GrantDeviceCode
		c.OpenURL = func(u string) error {
			parsed, err := url.Parse(u)
			require.NoError(t, err)
			assert.True(t, srv.ApproveDevice(parsed.Query().Get("user_code")))
			return nil
		}
	})
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.NotEmpty(t, e.IDToken)
	assert.Regexp(t, `Open \S+ and enter the code \S+ to log in \(waiting \S+\)\.`, stderr.String(), "the prompt docs/headless.md shows")
	assert.GreaterOrEqual(t, srv.TokenCalls("urn:ietf:params:oauth:grant-type:device_code"), 1)
}

func TestDeviceCodeConfidentialClient(t *testing.T) {
	srv := oidctest.New(t)
	c, _ := newClient(t, srv, func(c *Config) {
		c.GrantType = credspec.GrantDeviceCode
		c.ClientSecret = srv.ClientSecret
		c.OpenURL = func(u string) error {
			parsed, err := url.Parse(u)
			require.NoError(t, err)
			srv.ApproveDevice(parsed.Query().Get("user_code"))
			return nil
		}
	})
	_, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.Equal(t, srv.ClientSecret, srv.LastDeviceClientSecret(), "RFC 8628 §3.1: the client authenticates at the device endpoint")
}

func TestClientCredentials(t *testing.T) {
	srv := oidctest.New(t)
	srv.OmitIDToken(true)
	c, _ := newClient(t, srv, func(c *Config) {
		c.GrantType = credspec.GrantClientCredentials
		c.ClientSecret = srv.ClientSecret
		c.Interactive = false
	})
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.Empty(t, e.IDToken)
	assert.NotEmpty(t, e.AccessToken)
	assert.WithinDuration(t, time.Now().Add(time.Hour), e.AccessTokenExpiry, time.Minute)
	assert.Equal(t, 1, srv.TokenCalls("client_credentials"))

	bad, _ := newClient(t, srv, func(c *Config) {
		c.GrantType = credspec.GrantClientCredentials
		c.ClientSecret = "wrong"
	})
	_, err = bad.Grant(context.Background())
	require.ErrorContains(t, err, "401 invalid_client: client authentication failed")
}

func TestRefreshKeepsScopes(t *testing.T) {
	srv := oidctest.New(t)
	c, _ := newClient(t, srv, nil)
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	e2, err := c.Refresh(context.Background(), e.RefreshToken)
	require.NoError(t, err)
	assert.Equal(t, "email groups openid", srv.LastRefreshScope())
	assert.NotEqual(t, e.IDToken, e2.IDToken)
	assert.Equal(t, e.RefreshToken, e2.RefreshToken, "a response without a new refresh token keeps the old one")

	_, err = c.Refresh(context.Background(), "rt-unknown")
	require.ErrorContains(t, err, "invalid_grant")
}

// TestRefreshRotation: a provider that rotates refresh tokens (Keycloak and
// Dex do) answers with a new one and refuses the old; the entry keeps the new.
func TestRefreshRotation(t *testing.T) {
	srv := oidctest.New(t)
	srv.RotateRefreshTokens(true)
	c, _ := newClient(t, srv, nil)
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	e2, err := c.Refresh(context.Background(), e.RefreshToken)
	require.NoError(t, err)
	require.NotEmpty(t, e2.RefreshToken)
	assert.NotEqual(t, e.RefreshToken, e2.RefreshToken, "the rotated refresh token is kept")
	_, err = c.Refresh(context.Background(), e.RefreshToken)
	require.ErrorContains(t, err, "invalid_grant", "the old refresh token is spent")
	_, err = c.Refresh(context.Background(), e2.RefreshToken)
	require.NoError(t, err)
}

func TestNonInteractiveNeverOpensBrowser(t *testing.T) {
	srv := oidctest.New(t)
	for _, grant := range []string{credspec.GrantAuto, credspec.GrantAuthCode, credspec.GrantAuthCodeKeyboard, credspec.GrantDeviceCode} {
		t.Run(grant, func(t *testing.T) {
			c, _ := newClient(t, srv, func(c *Config) {
				c.GrantType = grant
				c.Interactive = false
				c.OpenURL = func(string) error { t.Error("browser opened"); return nil }
			})
			_, err := c.Grant(context.Background())
			require.ErrorIs(t, err, ErrInteractionRequired)
		})
	}
	assert.Zero(t, srv.AuthRequests())
}

func TestTokenEndpointFaults(t *testing.T) {
	tests := []struct {
		name                          string
		status                        int
		contentType, body, retryAfter string
		wantErrSubstr                 string
		times                         int // default 1
	}{
		{name: "html 502, every attempt", status: 502, contentType: "text/html", body: "<html><body>Bad gateway</body></html>", wantErrSubstr: "answered 502 with text/html, not an error document (after 4 attempts)", times: 4},
		{name: "oauth 400", status: 400, contentType: "application/json", body: `{"error":"invalid_scope","error_description":"groups\nnot allowed"}`, wantErrSubstr: "answered 400 invalid_scope: groups not allowed"},
		{name: "malformed json 200, every attempt", status: 200, contentType: "application/json", body: `{"access_token":`, wantErrSubstr: "answered 200 with an invalid token response: oauth2: cannot parse json", times: 4},
		{name: "429, every attempt", status: 429, contentType: "text/plain", body: "slow down", wantErrSubstr: "answered 429 with text/plain, not an error document (after 4 attempts)", times: 4},
		{name: "502 once: the retry succeeds", status: 502, contentType: "text/html", body: "<html></html>", times: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := oidctest.New(t)
			for range max(tt.times, 1) {
				srv.FailNext(tt.status, tt.contentType, tt.body, tt.retryAfter)
			}
			c, _ := newClient(t, srv, func(c *Config) {
				c.GrantType = credspec.GrantClientCredentials
				c.ClientSecret = srv.ClientSecret
			})
			_, err := c.Grant(context.Background())
			assert.Equal(t, max(tt.times, 1)+map[bool]int{true: 0, false: 1}[tt.wantErrSubstr != ""], srv.TokenCalls("client_credentials"),
				"refusals are asked once, transient failures up to 4 times")
			if tt.wantErrSubstr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErrSubstr)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestDiscoveryFailure(t *testing.T) {
	c := New(Config{OIDC: credspec.OIDC{IssuerURL: "http://127.0.0.1:1", ClientID: "x", GrantType: credspec.GrantClientCredentials}})
	_, err := c.Grant(context.Background())
	require.ErrorContains(t, err, "discovering OIDC provider http://127.0.0.1:1")
}

func TestMissingIDToken(t *testing.T) {
	srv := oidctest.New(t)
	srv.OmitIDToken(true)
	c, _ := newClient(t, srv, nil)
	_, err := c.Grant(context.Background())
	require.ErrorContains(t, err, "without an ID token")
	c, _ = newClient(t, srv, func(c *Config) { c.UseAccessToken = true })
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(e.AccessToken, "at-"))
}

// The login CSRF: while alice's browser login waits, another local user
// reaches the loopback server. Its index would have redirected them to the
// authorization URL with alice's state and PKCE challenge, to finish her
// login with their own account; answers with another state would have
// ended her login. Both are refused, and her login completes.
func TestAuthCodeLoopbackServerRefusesOtherLocalUsers(t *testing.T) {
	srv := oidctest.New(t)
	type probe struct {
		name string
		path string
		want int
	}
	probes := []probe{
		{"index page", "/", http.StatusNotFound},
		{"another page", "/favicon.ico", http.StatusNotFound},
		{"an error with another state", "/?error=access_denied&state=forged", http.StatusBadRequest},
		{"an error without state", "/?error=access_denied", http.StatusBadRequest},
		{"a code with another state", "/?code=attacker-code&state=forged", http.StatusBadRequest},
	}
	got := make(chan map[string]int, 1)
	var authURL string
	c, _ := newClient(t, srv, func(c *Config) {
		c.OpenURL = func(u string) error {
			authURL = u
			go func() {
				// The other local user knows only the port.
				au, _ := url.Parse(u)
				redirect, _ := url.Parse(au.Query().Get("redirect_uri"))
				noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				codes := map[string]int{}
				for _, p := range probes {
					resp, err := noRedirects.Get("http://" + redirect.Host + p.path)
					if err != nil {
						codes[p.name] = -1
						continue
					}
					_ = resp.Body.Close()
					codes[p.name] = resp.StatusCode
				}
				got <- codes
				// Then alice's browser.
				resp, err := http.Get(u)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			}()
			return nil
		}
	})
	e, err := c.Grant(context.Background())
	require.NoError(t, err, "the login survives the other user's requests")
	assert.NotEmpty(t, e.IDToken)
	codes := <-got
	for _, p := range probes {
		assert.Equal(t, p.want, codes[p.name], p.name)
	}
	assert.Contains(t, authURL, srv.URL+"/auth?", "the browser is sent to the provider directly, not to a loopback index")
	assert.Equal(t, 1, srv.AuthRequests())
}

// A provider's device verification URL is shown and opened only when it is
// an https page.
// TestAuthCodeRefusesNonWebAuthorizationEndpoint: the discovery
// document's authorization endpoint is printed and opened by the browser
// command, so a hostile provider's file: URL or terminal escape sequence
// is refused before anything is shown or opened, in both browser flows.
func TestAuthCodeRefusesNonWebAuthorizationEndpoint(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "javascript:alert(1)", "http://evil.example.com/auth", "ms-settings:privacy",
		"https://id.example.com/auth\x1b]0;owned\x07", "https://id.example.com/auth\u009b31m"} {
		for _, grant := range []string{credspec.GrantAuthCode, credspec.GrantAuthCodeKeyboard} {
			t.Run(grant+" "+u, func(t *testing.T) {
				srv := oidctest.New(t)
				srv.AuthorizationEndpoint = u
				c, stderr := newClient(t, srv, func(c *Config) {
					c.GrantType = grant
					c.Stdin = strings.NewReader("code\n")
					c.OpenURL = func(string) error { t.Error("opened"); return nil }
				})
				_, err := c.Grant(context.Background())
				require.ErrorContains(t, err, "authorization endpoint")
				require.ErrorContains(t, err, "is not an https URL: refusing to show or open it")
				assert.NotContains(t, stderr.String(), "\x1b")
				assert.NotContains(t, stderr.String(), "\u009b")
				assert.NotContains(t, stderr.String(), "Open ")
			})
		}
	}
}

func TestDeviceCodeRefusesNonWebVerificationURL(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "javascript:alert(1)", "http://evil.example.com/device", "ms-settings:privacy", "https://user:pw@evil.example.com/",
		"https://id.example.com/device\u009b31m"} {
		t.Run(u, func(t *testing.T) {
			srv := oidctest.New(t)
			srv.DeviceVerificationURI = u
			c, stderr := newClient(t, srv, func(c *Config) {
				c.GrantType = credspec.GrantDeviceCode
				c.OpenURL = func(string) error { t.Error("opened"); return nil }
			})
			_, err := c.Grant(context.Background())
			require.ErrorContains(t, err, "is not an https URL: refusing to show or open it")
			assert.NotContains(t, stderr.String(), "enter the code")
		})
	}
}

func TestHeadless(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tt := range []struct {
		name         string
		getenv       func(string) string
		goos         string
		browserGiven bool
		want         bool
	}{
		{"a Linux desktop", env("DISPLAY", ":0"), "linux", false, false},
		{"Wayland", env("WAYLAND_DISPLAY", "wayland-0"), "linux", false, false},
		{"a Linux server", env(), "linux", false, true},
		{"over SSH, with X forwarding too", env("SSH_CONNECTION", "10.0.0.1 5 10.0.0.2 22", "DISPLAY", "localhost:10"), "linux", false, true},
		{"over SSH to a Mac", env("SSH_TTY", "/dev/ttys001"), "darwin", false, true},
		{"a Mac", env(), "darwin", false, false},
		{"Windows", env(), "windows", false, false},
		{"a browser command given", env(), "linux", true, false},
	} {
		got, why := headless(tt.getenv, tt.goos, tt.browserGiven)
		assert.Equal(t, tt.want, got, tt.name)
		assert.Equal(t, tt.want, why != "", tt.name)
	}
}

// --grant-type auto where no browser can be shown (here: over SSH) and the
// provider offers the device flow: the device flow, said on stderr, and no
// browser started.
func TestAutoPicksTheDeviceFlowWithoutADisplay(t *testing.T) {
	srv := oidctest.New(t)
	c, stderr := newClient(t, srv, func(c *Config) {
		c.GrantType = credspec.GrantAuto
		c.OpenURL = nil
		c.Getenv = func(k string) string { return map[string]string{"SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"}[k] }
	})
	code := regexp.MustCompile(`enter the code (\S+) to log in`)
	go func() {
		for range 500 {
			if m := code.FindStringSubmatch(stderr.String()); m != nil {
				srv.ApproveDevice(m[1])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	e, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.NotEmpty(t, e.IDToken)
	assert.Contains(t, stderr.String(), "over SSH: logging in with the device code flow (--grant-type=authcode for the browser)")
	assert.GreaterOrEqual(t, srv.TokenCalls("urn:ietf:params:oauth:grant-type:device_code"), 1)
}

// With a display, auto is the browser.
func TestAutoIsTheBrowserWithADisplay(t *testing.T) {
	srv := oidctest.New(t)
	c, stderr := newClient(t, srv, func(c *Config) {
		c.GrantType = credspec.GrantAuto
		c.Getenv = func(k string) string { return map[string]string{"DISPLAY": ":0"}[k] }
	})
	_, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, stderr.String(), "device code flow")
	assert.Zero(t, srv.TokenCalls("urn:ietf:params:oauth:grant-type:device_code"))
}

// TestNoRefreshTokenWarning: a provider that wants consent before
// offline_access (OpenID Connect Core §11, as oidc-provider) issues no
// refresh token without prompt=consent; the person is told so, and how to
// get one.
func TestNoRefreshTokenWarning(t *testing.T) {
	tests := []struct {
		name        string
		scopes      []string
		params      map[string]string
		wantRefresh bool
	}{
		{name: "offline_access without consent", scopes: []string{"offline_access"}},
		{name: "offline_access with prompt=consent", scopes: []string{"offline_access"}, params: map[string]string{"prompt": "consent"}, wantRefresh: true},
		{name: "no offline_access asked", scopes: []string{"email"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := oidctest.New(t)
			srv.OfflineNeedsConsent(true)
			c, stderr := newClient(t, srv, func(c *Config) { c.ExtraScopes, c.AuthRequestExtraParams = tt.scopes, tt.params })
			e, err := c.Grant(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tt.wantRefresh, e.RefreshToken != "")
			warned := strings.Contains(stderr.String(), NoRefreshTokenWarning)
			assert.Equal(t, slices.Contains(tt.scopes, "offline_access") && !tt.wantRefresh, warned, stderr.String())
		})
	}
}
