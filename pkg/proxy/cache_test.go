package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/inspect"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/oidc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/oidc/oidctest"
)

type countingVerifier struct {
	calls atomic.Int32
	v     Verifier
}

func (c *countingVerifier) Verify(ctx context.Context, raw string) (map[string]any, error) {
	c.calls.Add(1)
	return c.v.Verify(ctx, raw)
}

func legacyEmail(_ context.Context, tok *inspect.Token) inspect.Identity {
	none := "-"
	return inspect.PredictLegacy(tok, inspect.LegacyRules{UsernameClaim: "email", UsernamePrefix: &none, GroupsClaim: "groups"})
}

// A verified token is verified once until its exp; failures, tokens
// without exp and expired entries are verified every time.
func TestIdentityCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := float64(now.Add(time.Minute).Unix())
	claims := fakeVerifier{
		"with-exp":    {"sub": "u1", "email": "alice@example.com", "email_verified": true, "groups": []any{"dev"}, "exp": exp},
		"without-exp": {"sub": "u1", "email": "alice@example.com", "email_verified": true, "groups": []any{"dev"}},
		"no-username": {"sub": "u2", "exp": exp},
	}
	for _, tc := range []struct {
		name      string
		token     string
		cacheSize int
		advance   time.Duration
		wantCode  int
		wantCalls int32
	}{
		{"cached until exp", "with-exp", 0, 0, 200, 1},
		{"re-verified after exp", "with-exp", 0, 2 * time.Minute, 401, 2},
		{"no exp: never cached", "without-exp", 0, 0, 200, 3},
		{"cache disabled", "with-exp", -1, 0, 200, 3},
		{"refused: never cached", "no-username", 0, 0, 401, 3},
		{"bad signature: never cached", "forged", 0, 0, 401, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer up.Close()
			u, _ := url.Parse(up.URL)
			clock := now
			cv := &countingVerifier{v: expiringVerifier{claims, &clock}}
			h := &Handler{Upstream: u, Transport: http.DefaultTransport, Verifier: cv, Map: legacyEmail, CacheSize: tc.cacheSize,
				Now: func() time.Time { return clock }}
			var code int
			for i := range 3 {
				if i == 2 {
					clock = clock.Add(tc.advance)
				}
				req := httptest.NewRequest("GET", "/api", nil)
				req.Header.Set("Authorization", "Bearer "+tc.token)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				code = rec.Code
			}
			assert.Equal(t, tc.wantCode, code, "last answer")
			assert.Equal(t, tc.wantCalls, cv.calls.Load(), "verifications for 3 requests")
		})
	}
}

// expiringVerifier refuses claims whose exp is past the clock, as the
// real verifier does.
type expiringVerifier struct {
	f     fakeVerifier
	clock *time.Time
}

func (e expiringVerifier) Verify(ctx context.Context, raw string) (map[string]any, error) {
	c, err := e.f.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	if exp, ok := (&inspect.Token{Claims: c}).Expiry(); ok && !e.clock.Before(exp) {
		return nil, assert.AnError
	}
	return c, nil
}

func TestIdentityCacheBounded(t *testing.T) {
	now := time.Now()
	c := newIdentityCache(3)
	for i, tok := range []string{"a", "b", "c", "d"} {
		c.put(tok, cachedIdentity{uid: tok, expiry: now.Add(time.Duration(i+1) * time.Minute)}, now)
	}
	assert.LessOrEqual(t, len(c.entries), 3)
	_, ok := c.get("d", now)
	assert.True(t, ok, "the newest entry is kept")
	_, ok = c.get("d", now.Add(5*time.Minute))
	assert.False(t, ok, "an expired entry is not served")
}

// BenchmarkProxyAuth measures the proxy's own cost per request with a real
// RS256 ID token and go-oidc verification: every request verified, or the
// identity from the cache.
func BenchmarkProxyAuth(b *testing.B) {
	idp := oidctest.New(b)
	idp.TokenLifetime = time.Hour
	raw, err := idp.SignIDToken(oidctest.TamperNone, "", time.Now())
	require.NoError(b, err)
	v, err := oidc.NewClaimsVerifier(context.Background(), idp.Client(), idp.Issuer(), []string{idp.ClientID})
	require.NoError(b, err)
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	for _, bc := range []struct {
		name string
		size int
	}{{"verify-each", -1}, {"cached", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			h := &Handler{Upstream: u, Transport: noopRT{}, Verifier: v, Map: legacyEmail, CacheSize: bc.size}
			req := httptest.NewRequest("GET", "/api", nil)
			req.Header.Set("Authorization", "Bearer "+raw)
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("code %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// noopRT answers 200 without a network, so the benchmark measures the proxy.
type noopRT struct{}

func (noopRT) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}
