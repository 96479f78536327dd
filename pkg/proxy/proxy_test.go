package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/inspect"
)

type fakeVerifier map[string]map[string]any

func (f fakeVerifier) Verify(_ context.Context, raw string) (map[string]any, error) {
	c, ok := f[raw]
	if !ok {
		return nil, errors.New("bad token")
	}
	return c, nil
}

// syncBuffer is an audit log the test may read while the proxy writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newProxy(t *testing.T, upstream http.Handler) (*httptest.Server, *syncBuffer) {
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	audit := &syncBuffer{}
	h := &Handler{Upstream: u, Transport: http.DefaultTransport, Audit: audit,
		Verifier: fakeVerifier{"good-token": {"sub": "uid-1", "email": "alice@example.com", "groups": []any{"dev"}}},
		Map: func(_ context.Context, tok *inspect.Token) inspect.Identity {
			none := "-"
			return inspect.PredictLegacy(tok, inspect.LegacyRules{UsernameClaim: "email", UsernamePrefix: &none, GroupsClaim: "groups", GroupsPrefix: "oidc:"})
		}}
	p := httptest.NewServer(h)
	t.Cleanup(p.Close)
	return p, audit
}

func TestProxyAuthentication(t *testing.T) {
	var seenMu sync.Mutex
	var seen http.Header
	p, audit := newProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenMu.Lock()
		defer seenMu.Unlock()
		seen = r.Header.Clone()
		_, _ = io.WriteString(w, `{"kind":"PodList"}`)
	}))
	tests := []struct {
		name     string
		header   http.Header
		wantCode int
		wantBody string
	}{
		{name: "no token", wantCode: 401, wantBody: `"kind":"Status"`},
		{name: "bad token", header: http.Header{"Authorization": {"Bearer forged"}}, wantCode: 401, wantBody: `"reason":"Unauthorized"`},
		{name: "forged impersonation", header: http.Header{"Authorization": {"Bearer good-token"}, "Impersonate-User": {"admin"}}, wantCode: 403, wantBody: "impersonation headers are not accepted"},
		{name: "good token", header: http.Header{"Authorization": {"Bearer good-token"}}, wantCode: 200, wantBody: "PodList"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seenMu.Lock()
			seen = nil
			seenMu.Unlock()
			req, _ := http.NewRequest("GET", p.URL+"/api/v1/namespaces/a/pods", nil)
			req.Header = tt.header
			if req.Header == nil {
				req.Header = http.Header{}
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tt.wantCode, resp.StatusCode)
			assert.Contains(t, string(body), tt.wantBody)
			seenMu.Lock()
			defer seenMu.Unlock()
			if tt.wantCode != 200 {
				assert.Nil(t, seen, "nothing reaches the API server")
				return
			}
			assert.Equal(t, "alice@example.com", seen.Get("Impersonate-User"))
			assert.Equal(t, []string{"oidc:dev"}, seen.Values("Impersonate-Group"))
			assert.Equal(t, "uid-1", seen.Get("Impersonate-Uid"))
			assert.Empty(t, seen.Get("Authorization"), "the caller's token does not go upstream")
		})
	}
	// The audit line follows the response: wait for all four (bounded).
	for i := 0; i < 100 && strings.Count(audit.String(), "\n") < 4; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	assert.NotContains(t, audit.String(), "good-token")
	assert.Contains(t, audit.String(), `"user":"alice@example.com"`)
	assert.Equal(t, 4, strings.Count(audit.String(), "\n"))

	resp, err := http.Get(p.URL + "/metrics")
	require.NoError(t, err)
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(m), `kubectl_impersonate_proxy_requests_total{code="401"} 2`)
	assert.Contains(t, string(m), `kubectl_impersonate_proxy_verification_failures_total 2`)
	resp, err = http.Get(p.URL + "/healthz")
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	resp.Body.Close()
}

func TestProxyStreamsWithoutBuffering(t *testing.T) {
	release := make(chan struct{})
	p, _ := newProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "event-1\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "event-2\n")
	}))
	defer close(release)
	req, _ := http.NewRequest("GET", p.URL+"/api/v1/pods?watch=true", nil)
	req.Header.Set("Authorization", "Bearer good-token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	line := make(chan string, 1)
	go func() { l, _ := bufio.NewReader(resp.Body).ReadString('\n'); line <- l }()
	select {
	case l := <-line:
		assert.Equal(t, "event-1\n", l, "the first event arrives while the upstream still streams")
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy buffered the stream")
	}
}

func TestProxyUpgrades(t *testing.T) {
	p, _ := newProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "SPDY/3.1" || r.Header.Get("Impersonate-User") == "" {
			http.Error(w, "no upgrade", 400)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		_ = rw.Flush()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(rw, buf); err == nil {
			_, _ = rw.Write(append([]byte("echo:"), buf...))
			_ = rw.Flush()
		}
	}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /api/v1/namespaces/a/pods/p/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good-token\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, resp.StatusCode)
	_, err = io.WriteString(conn, "hello")
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 10)
	_, err = io.ReadFull(br, got)
	require.NoError(t, err)
	assert.Equal(t, "echo:hello", string(got), "bytes flow both ways over the upgraded connection")
}

type countingRT struct {
	n  int
	rt http.RoundTripper
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n++
	return c.rt.RoundTrip(r)
}

// Upgrade requests take the HTTP/1.1 transport (HTTP/2 cannot carry an
// Upgrade: the e2e test found SPDY exec failing over the default one).
func TestUpgradeSplit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	for _, tc := range []struct {
		name                string
		upgrade             string
		wantPlain, wantUpgr int
	}{
		{"plain request", "", 1, 0},
		{"SPDY upgrade", "SPDY/3.1", 0, 1},
		{"WebSocket upgrade", "websocket", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, upgr := &countingRT{rt: http.DefaultTransport}, &countingRT{rt: http.DefaultTransport}
			req, _ := http.NewRequest("GET", srv.URL, nil)
			if tc.upgrade != "" {
				req.Header.Set("Upgrade", tc.upgrade)
			}
			resp, err := upgradeSplit{plain: plain, upgrade: upgr}.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.wantPlain, plain.n)
			assert.Equal(t, tc.wantUpgr, upgr.n)
		})
	}
}
