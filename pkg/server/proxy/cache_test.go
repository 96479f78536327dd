package proxy

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// The token cache is kube-apiserver's (k8s.io/apiserver token/cache): an
// authenticated token is verified once per TTL, concurrent requests with
// one token once; refusals are verified every time; a refused identity is
// refused every time.
func TestTokenCache(t *testing.T) {
	is, a := issuerAndAuthn(t, legacyConfig)
	valid, err := is.Mint(is.Claims("u1", "kube", time.Minute, aliceClaims), testissuer.Valid)
	require.NoError(t, err)
	forged, err := is.Mint(is.Claims("u1", "kube", time.Minute, aliceClaims), testissuer.BadSignature)
	require.NoError(t, err)
	system, err := is.Mint(is.Claims("u1", "kube", time.Minute, map[string]any{"email": "system:admin", "email_verified": true}), testissuer.Valid)
	require.NoError(t, err)
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	for _, tc := range []struct {
		name      string
		token     string
		ttl       time.Duration
		pause     time.Duration // before the third request
		wantCode  int
		wantCalls int64
	}{
		{"cached", valid, 0, 0, 200, 1},
		{"verified again after the TTL", valid, 200 * time.Millisecond, 300 * time.Millisecond, 200, 2},
		{"cache disabled", valid, -1, 0, 200, 3},
		{"bad signature: never cached", forged, 0, 0, 401, 3},
		{"refused identity: cached, refused each time", system, 0, 0, 403, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Upstream: u, Transport: http.DefaultTransport, Authenticator: a, CacheTTL: tc.ttl}
			var code int
			for i := range 3 {
				if i == 2 {
					time.Sleep(tc.pause)
				}
				req := httptest.NewRequest("GET", "/api", nil)
				req.Header.Set("Authorization", "Bearer "+tc.token)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				code = rec.Code
			}
			assert.Equal(t, tc.wantCode, code, "last answer")
			assert.Equal(t, tc.wantCalls, h.verifications.Load(), "verifications for 3 requests")
		})
	}
	t.Run("20 requests at once: one verification", func(t *testing.T) {
		h := &Handler{Upstream: u, Transport: http.DefaultTransport, Authenticator: a}
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := httptest.NewRequest("GET", "/api", nil)
				req.Header.Set("Authorization", "Bearer "+valid)
				h.ServeHTTP(httptest.NewRecorder(), req)
			}()
		}
		wg.Wait()
		assert.Equal(t, int64(1), h.verifications.Load())
		assert.Equal(t, int64(20), h.authentications.Load())
	})
	t.Run("the cache's hits: refused tokens count as none", func(t *testing.T) {
		h := &Handler{Upstream: u, Transport: http.DefaultTransport, Authenticator: a, Metrics: NewMetrics()}
		for _, tok := range []string{forged, valid, valid, valid} {
			req := httptest.NewRequest("GET", "/api", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
		rec := httptest.NewRecorder()
		h.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		assert.Contains(t, rec.Body.String(), "kubectl_impersonate_proxy_token_cache_hits_total 2\n")
	})
}

// While the issuers' keys are not loaded (a replica starting), a refused
// token gets 503 and Retry-After, so that clients retry instead of logging
// in again; once they are, 401.
func TestProxyNotReadyToAuthenticate(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	forged := p.mint(t, aliceClaims, testissuer.BadSignature)
	var ready atomic.Pointer[error]
	p.handler.AuthenticatorReady = func() error {
		if e := ready.Load(); e != nil {
			return *e
		}
		return nil
	}
	for _, tc := range []struct {
		ready     error
		wantCode  int
		wantRetry string
	}{{assert.AnError, http.StatusServiceUnavailable, "1"}, {nil, http.StatusUnauthorized, ""}} {
		ready.Store(&tc.ready)
		req, err := http.NewRequest("GET", p.url+"/api", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+forged)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tc.wantCode, resp.StatusCode)
		assert.Equal(t, tc.wantRetry, resp.Header.Get("Retry-After"))
	}
	assert.Empty(t, p.upstream.take(), "nothing forwarded")
}

// A WebSocket client's token (the base64url.bearer.authorization.k8s.io.
// subprotocol, as browsers send it) authenticates the request, and never
// goes upstream; nor does one sent beside a bearer token.
func TestProxyWebSocketBearer(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	tok := p.mint(t, aliceClaims, testissuer.Valid)
	protocol := "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte(tok))
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"the subprotocol alone", map[string]string{"Sec-WebSocket-Protocol": protocol + ", v5.channel.k8s.io"}, http.StatusSwitchingProtocols},
		{"beside a bearer token", map[string]string{"Authorization": "Bearer " + tok, "Sec-WebSocket-Protocol": "v5.channel.k8s.io, " + protocol}, http.StatusSwitchingProtocols},
		{"a forged token in the subprotocol", map[string]string{"Sec-WebSocket-Protocol": "base64url.bearer.authorization.k8s.io." +
			base64.RawURLEncoding.EncodeToString([]byte(p.mint(t, aliceClaims, testissuer.BadSignature))) + ", v5.channel.k8s.io"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.upstream.take()
			req, err := http.NewRequest("GET", p.url+"/api/v1/namespaces/team-a/pods", nil)
			require.NoError(t, err)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.want, resp.StatusCode)
			seen := p.upstream.take()
			if tc.want != http.StatusSwitchingProtocols {
				assert.Empty(t, seen)
				return
			}
			require.Len(t, seen, 1)
			assertForwardedAsAlice(t, seen[0])
			assert.Equal(t, []string{"v5.channel.k8s.io"}, seen[0].Header.Values("Sec-WebSocket-Protocol"), "the token's subprotocol removed")
		})
	}
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
		ttl  time.Duration
	}{{"verify-each", -1}, {"cached", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			h := &Handler{Upstream: u, Transport: noopRT{}, Authenticator: a, CacheTTL: bc.ttl}
			req := httptest.NewRequest("GET", "/api", nil)
			req.Header.Set("Authorization", "Bearer "+raw)
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req.Clone(req.Context()))
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
