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
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// clockedAuth counts authentications and refuses tokens whose exp is past
// the test's clock, as the real authenticator does with the real one.
type clockedAuth struct {
	calls atomic.Int32
	a     Authenticator
	clock *time.Time
}

func (c *clockedAuth) Authenticate(ctx context.Context, raw string) (user.Info, error) {
	c.calls.Add(1)
	if exp, ok := expiry(raw); ok && !c.clock.Before(exp) {
		return nil, assert.AnError
	}
	return c.a.Authenticate(ctx, raw)
}

// An authenticated token is authenticated once until its exp; refusals and
// expired entries are authenticated every time.
func TestIdentityCache(t *testing.T) {
	is, a := issuerAndAuthn(t, legacyConfig)
	now := time.Now()
	valid, err := is.Mint(is.Claims("u1", "kube", time.Minute, aliceClaims), testissuer.Valid)
	require.NoError(t, err)
	forged, err := is.Mint(is.Claims("u1", "kube", time.Minute, aliceClaims), testissuer.BadSignature)
	require.NoError(t, err)
	system, err := is.Mint(is.Claims("u1", "kube", time.Minute, map[string]any{"email": "system:admin", "email_verified": true}), testissuer.Valid)
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		token     string
		cacheSize int
		advance   time.Duration
		wantCode  int
		wantCalls int32
	}{
		{"cached", valid, 0, 0, 200, 1},
		{"still cached after 9 s", valid, 0, 9 * time.Second, 200, 1},
		{"authenticated again after 10 s, as kube-apiserver's cache", valid, 0, 11 * time.Second, 200, 2},
		{"authenticated again after exp", valid, 0, 2 * time.Minute, 401, 2},
		{"cache disabled", valid, -1, 0, 200, 3},
		{"bad signature: never cached", forged, 0, 0, 401, 3},
		{"refused identity: cached, refused each time", system, 0, 0, 403, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer up.Close()
			u, _ := url.Parse(up.URL)
			clock := now
			ca := &clockedAuth{a: a, clock: &clock}
			h := &Handler{Upstream: u, Transport: http.DefaultTransport, Authenticator: ca, CacheSize: tc.cacheSize,
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
			assert.Equal(t, tc.wantCalls, ca.calls.Load(), "authentications for 3 requests")
		})
	}
}

func TestIdentityCacheBounded(t *testing.T) {
	now := time.Now()
	c := newIdentityCache(3)
	for i, tok := range []string{"a", "b", "c", "d"} {
		c.put(tok, &user.DefaultInfo{Name: tok}, now.Add(time.Duration(i+1)*time.Minute), now)
	}
	assert.LessOrEqual(t, len(c.entries), 3)
	u, ok := c.get("d", now)
	assert.True(t, ok, "the newest entry is kept")
	assert.Equal(t, "d", u.GetName())
	_, ok = c.get("d", now.Add(5*time.Minute))
	assert.False(t, ok, "an expired entry is not served")
}

// BenchmarkProxyAuth measures the proxy's own cost per request with a real
// RS256 token and kube-apiserver's authenticator: every request
// authenticated, or the identity from the cache.
func BenchmarkProxyAuth(b *testing.B) {
	is, a := issuerAndAuthn(b, legacyConfig)
	raw, err := is.Mint(is.Claims("u1", "kube", time.Hour, aliceClaims), testissuer.Valid)
	require.NoError(b, err)
	u, _ := url.Parse("https://upstream.invalid")
	for _, bc := range []struct {
		name string
		size int
	}{{"verify-each", -1}, {"cached", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			h := &Handler{Upstream: u, Transport: noopRT{}, Authenticator: a, CacheSize: bc.size}
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
