package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noSleep(context.Context, time.Duration) error { return nil }

func TestRetryPolicy(t *testing.T) {
	t.Run("jitter stays within the exponential bound", func(t *testing.T) {
		p := RetryPolicy{}.withDefaults()
		for n := range 6 {
			for range 100 {
				d := p.delay(n, 0)
				assert.GreaterOrEqual(t, d, time.Duration(0))
				assert.LessOrEqual(t, d, min(p.Base<<n, p.Max))
			}
		}
	})
}

// TestTokenClient: one client for every grant; refusals are not retried,
// transient failures are (with Retry-After), and both become one *Error.
func TestTokenClient(t *testing.T) {
	for _, tt := range []struct {
		name        string
		answers     []func(w http.ResponseWriter)
		method      string
		bearer      string
		wantCalls   int
		wantErr     string
		transient   bool
		wantAuth    string
		wantLife    time.Duration
		wantSecrets string
	}{
		{name: "success, expires_in as a string", answers: []func(http.ResponseWriter){
			func(w http.ResponseWriter) {
				answerJSON(w, 200, `{"access_token":"at","token_type":"Bearer","expires_in":"300"}`)
			}},
			wantCalls: 1, wantLife: 300 * time.Second, method: AuthBasic, wantAuth: "Basic"},
		{name: "secret in the form", answers: []func(http.ResponseWriter){
			func(w http.ResponseWriter) { answerJSON(w, 200, `{"access_token":"at","expires_in":9300000000}`) }},
			wantCalls: 1, wantLife: maxLifetime, method: AuthPost, wantSecrets: "client_secret=s3cret"},
		{name: "bearer instead of the client", answers: []func(http.ResponseWriter){
			func(w http.ResponseWriter) { answerJSON(w, 200, `{"access_token":"rpt"}`) }},
			wantCalls: 1, bearer: "svc-token", wantAuth: "Bearer svc-token"},
		{name: "refusal: not retried", answers: []func(http.ResponseWriter){
			func(w http.ResponseWriter) {
				answerJSON(w, 401, `{"error":"invalid_client","error_description":"bad\nsecret"}`)
			}},
			wantCalls: 1, method: AuthBasic, wantErr: "the identity provider answered 401 invalid_client: bad secret"},
		{name: "not a token response: the provider's trouble", answers: []func(http.ResponseWriter){
			func(w http.ResponseWriter) { answerJSON(w, 200, `{"access_token":"at","expires_in":1e300}`) }},
			wantCalls: 4, method: AuthBasic, wantErr: "answered 200 with an invalid token response", transient: true},
		{name: "503 then success", answers: []func(http.ResponseWriter){
			func(w http.ResponseWriter) {
				w.Header().Set("Retry-After", "1")
				answerJSON(w, 503, `{"error":"temporarily_unavailable"}`)
			},
			func(w http.ResponseWriter) { answerJSON(w, 200, `{"access_token":"at"}`) }},
			wantCalls: 2},
		{name: "html 502 every time", answers: []func(http.ResponseWriter){
			func(w http.ResponseWriter) { w.Header().Set("Content-Type", "text/html"); w.WriteHeader(502) }},
			wantCalls: 4, method: AuthBasic, wantErr: "answered 502 with text/html, not an error document (after 4 attempts)", transient: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var auth, form string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth = r.Header.Get("Authorization")
				_ = r.ParseForm()
				form = r.PostForm.Encode()
				a := tt.answers[min(calls, len(tt.answers)-1)]
				calls++
				a(w)
			}))
			defer srv.Close()
			c := &Client{TokenURL: srv.URL, ClientID: "robot", ClientSecret: "s3cret", AuthMethod: tt.method, Retry: RetryPolicy{Sleep: noSleep}}
			tok, err := c.Token(context.Background(), url.Values{"grant_type": {"client_credentials"}}, tt.bearer)
			assert.Equal(t, tt.wantCalls, calls)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.transient, e.Transient())
				assert.NotContains(t, err.Error(), "\n")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantLife, ExpiresIn(tok))
			if tt.wantAuth != "" {
				assert.True(t, strings.HasPrefix(auth, tt.wantAuth), auth)
			}
			if tt.bearer != "" {
				assert.NotContains(t, form, "client_secret", "a bearer grant sends no client secret")
				assert.NotContains(t, form, "client_id")
			}
			if tt.wantSecrets != "" {
				assert.Contains(t, form, tt.wantSecrets)
			}
		})
	}
}

func answerJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// FuzzTokenResponse: any answer of a token endpoint (status, content type,
// body) gives a token with a lifetime within a year, or one *Error in one
// line.
func FuzzTokenResponse(f *testing.F) {
	f.Add(200, "application/json", []byte(`{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"at","expires_in":"3600","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"at","expires_in":1e300}`))
	f.Add(200, "application/json", []byte(`{"access_token":"at","expires_in":9300000000}`))
	f.Add(400, "application/json", []byte(`{"error":"invalid_grant","error_description":"Token is not active\nat all"}`))
	f.Add(403, "application/json", []byte(`[{"error_type":"permission","error_message":"no\nway","error_point":{"a":1}}]`))
	f.Add(502, "text/html", []byte(`<html><body>Bad gateway</body></html>`))
	f.Add(200, "application/json", []byte(`{"access_token":`))
	f.Add(429, "", []byte(``))
	var answer struct {
		status int
		ct     string
		body   []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", answer.ct)
		w.WriteHeader(answer.status)
		_, _ = w.Write(answer.body)
	}))
	defer srv.Close()
	c := &Client{TokenURL: srv.URL, ClientID: "c", Retry: RetryPolicy{Attempts: 1, Sleep: noSleep}}
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		if status < 200 || status > 599 || strings.ContainsAny(contentType, "\r\n") {
			return
		}
		answer.status, answer.ct, answer.body = status, contentType, body
		tok, err := c.Token(context.Background(), url.Values{"grant_type": {"client_credentials"}}, "")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if tok.AccessToken == "" {
			t.Fatal("a token without an access token")
		}
		if l := ExpiresIn(tok); l < 0 || l > maxLifetime {
			t.Fatalf("lifetime %v", l)
		}
		now := time.Now()
		if exp := Expiry(tok.AccessToken, ExpiresIn(tok), now, DefaultLifetime); !exp.After(now) && ExpiresIn(tok) > 0 {
			t.Fatalf("expiry %v", exp)
		}
	})
}

// TestExpiry: the earlier of expires_in and a JWT's exp, else the default.
func TestExpiry(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UTC()
	jwtExp := func(exp time.Time) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"exp": exp.Unix()}).SignedString([]byte("k"))
		require.NoError(t, err)
		return tok
	}
	for _, tt := range []struct {
		name     string
		token    string
		lifetime time.Duration
		want     time.Time
	}{
		{"expires_in, opaque token", "opaque", time.Hour, now.Add(time.Hour)},
		{"no expires_in: the JWT's exp", jwtExp(now.Add(5 * time.Minute)), 0, now.Add(5 * time.Minute)},
		{"expires_in a year, exp in 5 minutes: exp", jwtExp(now.Add(5 * time.Minute)), 365 * 24 * time.Hour, now.Add(5 * time.Minute)},
		{"expires_in shorter than exp: expires_in", jwtExp(now.Add(time.Hour)), time.Minute, now.Add(time.Minute)},
		{"neither: the default", "opaque", 0, now.Add(DefaultLifetime)},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, Expiry(tt.token, tt.lifetime, now, DefaultLifetime)) })
	}
}
