package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/proxyattacks"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/attributes"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/upstream"
)

var aliceClaims = map[string]any{"email": "alice@example.com", "email_verified": true, "groups": []any{"dev"}}

// legacyConfig is kube-apiserver's --oidc-* flags: email without prefix,
// groups with "oidc:".
func legacyConfig(is *testissuer.Issuer) authn.Options {
	cfg, algs := authn.LegacyConfig(authn.LegacyFlags{IssuerURL: is.URL, ClientIDs: []string{"kube"}, CA: is.CAPEM(),
		UsernameClaim: "email", GroupsClaim: "groups", GroupsPrefix: "oidc:"})
	return authn.Options{Config: cfg, SigningAlgs: algs}
}

// structuredConfig maps uid and extra too, and groups without a prefix
// (so that a groups claim could name system: groups).
func structuredConfig(is *testissuer.Issuer) authn.Options {
	cfg, err := authn.LoadConfig([]byte(is.AuthenticationConfig(testissuer.UnprefixedMappings)))
	if err != nil {
		panic(err)
	}
	return authn.Options{Config: cfg}
}

func issuerAndAuthn(t testing.TB, cfg func(*testissuer.Issuer) authn.Options) (*testissuer.Issuer, *authn.Authenticator) {
	t.Helper()
	is, err := testissuer.Start()
	require.NoError(t, err)
	t.Cleanup(is.Close)
	a, err := authn.New(context.Background(), cfg(is))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.WaitReady(ctx))
	return is, a
}

// recordingUpstream records every request that reaches the "API server".
type recordingUpstream struct {
	mu   sync.Mutex
	seen []*http.Request
	body []byte
}

func (u *recordingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, r.Clone(context.Background()))
	u.body = body
	u.mu.Unlock()
	if r.Header.Get("Upgrade") != "" {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + r.Header.Get("Upgrade") + "\r\n\r\n")
		_ = rw.Flush()
		return
	}
	_, _ = io.WriteString(w, `{"kind":"PodList"}`)
}

// lastBody is the body of the last request seen.
func (u *recordingUpstream) lastBody() []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.body
}

func (u *recordingUpstream) take() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.seen
	u.seen = nil
	return s
}

type testProxy struct {
	url      string
	upstream *recordingUpstream
	audit    *testkit.SyncBuffer
	is       *testissuer.Issuer
	handler  *Handler
}

// newTestProxy runs the proxy in front of a recording upstream whose URL
// has a path prefix (as a multi-cluster gateway's would).
func newTestProxy(t testing.TB, cfg func(*testissuer.Issuer) authn.Options, allowSystem bool) *testProxy {
	is, a := issuerAndAuthn(t, cfg)
	rec := &recordingUpstream{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/clusters/c-1")
	audit := &testkit.SyncBuffer{}
	h := &Handler{Upstream: u, Transport: http.DefaultTransport, Authenticator: a, Audit: audit, AllowSystemIdentities: allowSystem}
	p := httptest.NewServer(h)
	t.Cleanup(p.Close)
	return &testProxy{url: p.URL, upstream: rec, audit: audit, is: is, handler: h}
}

func (p *testProxy) mint(t testing.TB, claims map[string]any, tamper testissuer.Tamper) string {
	t.Helper()
	raw, err := p.is.Mint(p.is.Claims("sub-1", "kube", time.Hour, claims), tamper)
	require.NoError(t, err)
	return raw
}

// rawRequest writes an HTTP/1.1 request byte for byte (header names as
// written, Connection as given) and returns the status code.
func rawRequest(t *testing.T, base, method, path string, headers [][2]string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: proxy\r\n", method, path)
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	_, err = io.WriteString(conn, b.String())
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestProxyAttacks drives the attack table (internal/proxyattacks, the
// same list the e2e suite sends at kube-apiserver) in-process, over TLS with
// HTTP/2: each request is refused before anything reaches the upstream, or
// reaches it with exactly the caller's identity and nothing the caller added.
func TestProxyAttacks(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	attacks, err := proxyattacks.Table(p.aliceMinter(), "proxy-sa")
	require.NoError(t, err)
	require.Greater(t, len(attacks), 100)
	p.driveAttacks(t, attacks, func(t *testing.T, _ proxyattacks.Attack, r *http.Request) {
		assertForwardedAsAlice(t, r)
		assert.Empty(t, r.Header.Get("X-Real-Ip"), "no source address of the caller's choosing")
		assert.Equal(t, []string{"127.0.0.1"}, r.Header.Values("X-Forwarded-For"), "the caller's real address")
	})
}

// aliceMinter mints alice's tokens at the test issuer, with extra claims.
func (p *testProxy) aliceMinter() proxyattacks.Minter {
	return func(extra map[string]any, tamper testissuer.Tamper) (string, error) {
		claims := p.is.Claims("sub-1", "kube", time.Hour, aliceClaims)
		for k, v := range extra {
			claims[k] = v
		}
		return p.is.Mint(claims, tamper)
	}
}

// driveAttacks sends each attack to the proxy over TLS (HTTP/2 where the
// attack says), and checks the answer: a refused one, its status and that
// nothing reached the upstream; a forwarded one, the upstream's 200 and,
// by forwarded, the one request the upstream received.
func (p *testProxy) driveAttacks(t *testing.T, attacks []proxyattacks.Attack, forwarded func(*testing.T, proxyattacks.Attack, *http.Request)) {
	srv := httptest.NewUnstartedServer(p.handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tlsConfig := &tls.Config{RootCAs: pool}
	for _, a := range attacks {
		t.Run(a.Name, func(t *testing.T) {
			p.upstream.take()
			code, err := proxyattacks.Send(srv.URL, tlsConfig, a)
			require.NoError(t, err)
			seen := p.upstream.take()
			if !a.Forwarded {
				assert.Equal(t, a.Want, code)
				assert.Empty(t, seen, "nothing reaches the API server")
				return
			}
			assert.Equal(t, 200, code, "the upstream's answer")
			require.Len(t, seen, 1)
			forwarded(t, a, seen[0])
		})
	}
}

func mergeClaims(a, b map[string]any) map[string]any {
	c := map[string]any{}
	for k, v := range a {
		c[k] = v
	}
	for k, v := range b {
		c[k] = v
	}
	return c
}

// assertForwardedAsAlice checks the exact identity headers of a forwarded
// request, and that nothing of the caller's credential went along.
func assertForwardedAsAlice(t *testing.T, r *http.Request) {
	t.Helper()
	assert.Equal(t, []string{"alice@example.com"}, r.Header.Values("Impersonate-User"))
	assert.Equal(t, []string{"dev"}, r.Header.Values("Impersonate-Group"))
	assert.Equal(t, []string{"sub-1"}, r.Header.Values("Impersonate-Uid"))
	assert.Empty(t, r.Header.Get("Authorization"), "the caller's token does not go upstream")
	for name := range r.Header {
		l := attributes.NormalHeader(name)
		assert.False(t, strings.HasPrefix(l, "x-remote-"), "no request-header identity upstream, in any spelling: %s", name)
	}
	assert.True(t, strings.HasPrefix(r.URL.Path, "/clusters/c-1/"), "stays under the upstream's prefix: %s", r.URL.Path)
}

// Forwarded requests carry exactly the mapped identity: uid and extra
// included, the caller's X-Remote-* removed.
func TestProxyForwardsTheIdentity(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	tok := p.mint(t, mergeClaims(aliceClaims, map[string]any{"tenant": "acme"}), testissuer.Valid)
	req, _ := http.NewRequest("GET", p.url+"/api/v1/namespaces/a/pods", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Remote-User", "system:admin")
	req.Header.Set("X-Remote-Group", "system:masters")
	req.Header.Set("X-Remote-Extra-Scopes", "x")
	req.Header["X_Remote_User"] = []string{"system:admin"} // _ for - (CGI-style gateways)
	req.Header["x_remote_group"] = []string{"system:masters"}
	req.Header.Set("X-Real-Ip", "10.9.9.9")
	req.Header.Set("X-Forwarded-For", "10.8.8.8")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(body))
	seen := p.upstream.take()
	require.Len(t, seen, 1)
	assertForwardedAsAlice(t, seen[0])
	assert.Equal(t, "/clusters/c-1/api/v1/namespaces/a/pods", seen[0].URL.Path)
	assert.Equal(t, []string{"acme"}, seen[0].Header.Values("Impersonate-Extra-Example.com%2ftenant"))
	assert.Empty(t, seen[0].Header.Get("X-Real-Ip"), "no source address of the caller's choosing")
	assert.Equal(t, []string{"127.0.0.1"}, seen[0].Header.Values("X-Forwarded-For"), "the caller's real address, for kube-apiserver's sourceIPs")
	// The audit line names the caller, never the token.
	for i := 0; i < 100 && !strings.Contains(p.audit.String(), "alice"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	assert.Contains(t, p.audit.String(), `"user":"alice@example.com"`)
	assert.NotContains(t, p.audit.String(), tok)
	// And what the cluster's authorizer is asked, for least-privilege.
	assert.Contains(t, p.audit.String(), `"request":{"verb":"list","resource":"pods","namespace":"a","code":0}`)
}

// --allow-system-identities lets a system: group through, unchanged.
func TestProxyAllowSystemIdentities(t *testing.T) {
	p := newTestProxy(t, structuredConfig, true)
	tok := p.mint(t, mergeClaims(aliceClaims, map[string]any{"groups": []any{"system:masters"}}), testissuer.Valid)
	code := rawRequest(t, p.url, "GET", "/api", [][2]string{{"Authorization", "Bearer " + tok}})
	assert.Equal(t, 200, code)
	seen := p.upstream.take()
	require.Len(t, seen, 1)
	assert.Equal(t, []string{"system:masters"}, seen[0].Header.Values("Impersonate-Group"))
	tok = p.mint(t, mergeClaims(aliceClaims, map[string]any{"email": " system:admin"}), testissuer.Valid)
	assert.Equal(t, 403, rawRequest(t, p.url, "GET", "/api", [][2]string{{"Authorization", "Bearer " + tok}}), "white space is refused even so")
}

// Every refusal is a Kubernetes Status, audited with its reason and
// counted in the metrics; /metrics is not served on the API port.
func TestProxyRefusalsAreStatusesAuditedAndCounted(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	for _, c := range []struct {
		header          http.Header
		path            string
		wantCode        int
		wantMsg, reason string
	}{
		{header: http.Header{}, wantCode: 401, wantMsg: "Unauthorized", reason: "no bearer token"},
		{header: http.Header{"Authorization": {"Bearer " + p.mint(t, aliceClaims, testissuer.BadSignature)}}, wantCode: 401, wantMsg: "Unauthorized", reason: "token refused"},
		{header: http.Header{"Authorization": {"Bearer x"}, "Impersonate-User": {"admin"}}, wantCode: 403, wantMsg: "impersonation headers are not accepted", reason: "caller sent Impersonate-User"},
		{header: http.Header{"Authorization": {"Bearer " + p.mint(t, mergeClaims(aliceClaims, map[string]any{"groups": []any{"system:masters"}}), testissuer.Valid)}},
			wantCode: 403, wantMsg: "system: identity", reason: `group \"system:masters\" is a system: identity`},
		{header: http.Header{"Authorization": {"Bearer x"}}, path: "/api/%2e%2e/x", wantCode: 400, wantMsg: "dot segments", reason: "dot segment"},
	} {
		path := c.path
		if path == "" {
			path = "/api/v1/pods"
		}
		req, _ := http.NewRequest("GET", p.url+path, nil)
		req.Header = c.header
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var st struct{ Kind, Status, Message, Reason string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		resp.Body.Close()
		assert.Equal(t, c.wantCode, resp.StatusCode)
		assert.Equal(t, "Status", st.Kind)
		assert.Equal(t, "Failure", st.Status)
		assert.Equal(t, map[int]string{400: "BadRequest", 401: "Unauthorized", 403: "Forbidden"}[c.wantCode], st.Reason, "kube-apiserver's reason")
		assert.Contains(t, st.Message, c.wantMsg)
		assert.NotContains(t, st.Message, "\n")
		// Discovery, which client-go reads without decoding a Status:
		// the message as text, which kubectl shows.
		req, _ = http.NewRequest("GET", p.url+"/api", nil)
		req.Header = c.header
		if c.path == "" {
			resp, err = http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, c.wantCode, resp.StatusCode)
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			assert.Equal(t, st.Message+"\n", string(b))
		}
		for i := 0; i < 100 && !strings.Contains(p.audit.String(), c.reason); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		assert.Contains(t, p.audit.String(), c.reason)
	}
	assert.Empty(t, p.upstream.take())
	resp, err := http.Get(p.url + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode, "/metrics on the API port is an API path like any other")

	m := httptest.NewServer(p.handler.Metrics.Handler())
	defer m.Close()
	resp, err = http.Get(m.URL)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`kubectl_impersonate_proxy_refusals_total{reason="no_token"} 3`, `kubectl_impersonate_proxy_refusals_total{reason="invalid_token"} 2`,
		`kubectl_impersonate_proxy_refusals_total{reason="identity"} 2`, `kubectl_impersonate_proxy_refusals_total{reason="request"} 3`,
		`kubectl_impersonate_proxy_requests_total{code="401"} 5`, `kubectl_impersonate_proxy_request_duration_seconds_count 10`} {
		assert.Contains(t, string(b), want)
	}
}

func TestProxyReadyAndUpstreamErrors(t *testing.T) {
	is, a := issuerAndAuthn(t, legacyConfig)
	tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, aliceClaims), testissuer.Valid)
	require.NoError(t, err)
	var ready sync.Mutex
	readyCode := 200
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			ready.Lock()
			defer ready.Unlock()
			w.WriteHeader(readyCode)
		case "/slow":
			time.Sleep(2 * time.Second)
		}
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	h := &Handler{Upstream: u, Transport: upstream.HeaderTimeout(http.DefaultTransport, 300*time.Millisecond), Authenticator: a,
		Ready: upstream.ReadyCheck(u, http.DefaultTransport, a.HealthCheck, 0)}
	p := httptest.NewServer(h)
	defer p.Close()
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", p.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	code, _ := get("/readyz")
	assert.Equal(t, 200, code)
	ready.Lock()
	readyCode = 500
	ready.Unlock()
	code, body := get("/readyz")
	assert.Equal(t, 503, code, "the upstream is not ready: %s", body)
	start := time.Now()
	code, body = get("/slow")
	assert.Equal(t, 502, code)
	assert.Less(t, time.Since(start), 1500*time.Millisecond, "--upstream-timeout cut the wait")
	assert.Contains(t, body, "upstream unavailable")
	host := strings.TrimPrefix(up.URL, "http://")
	assert.NotContains(t, body, host, "the 502 does not reveal the upstream's address")
	up.Close()
	code, body = get("/api")
	assert.Equal(t, 502, code)
	assert.NotContains(t, body, host)
	code, _ = get("/readyz")
	assert.Equal(t, 503, code, "the upstream is down")
}

func TestProxyReadyNeedsTheIssuer(t *testing.T) {
	is, err := testissuer.Start()
	require.NoError(t, err)
	cfg := legacyConfig(is)
	is.Close() // the issuer is gone before the authenticator starts
	a, err := authn.New(context.Background(), cfg)
	require.NoError(t, err)
	defer a.Close()
	u, _ := url.Parse("https://upstream.invalid")
	rec := httptest.NewRecorder()
	var logged []string
	(&Handler{Upstream: u, Authenticator: a, Ready: upstream.ReadyCheck(u, noopRT{}, a.HealthCheck, 0),
		Log: func(s string) { logged = append(logged, s) }}).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	assert.Equal(t, 503, rec.Code)
	assert.Equal(t, "readyz check failed\n", rec.Body.String(), "the reason is withheld from callers, as kube-apiserver does")
	assert.NotContains(t, rec.Body.String(), strings.TrimPrefix(is.URL, "https://"), "the issuer's address is not shown")
	require.Len(t, logged, 1)
	assert.Contains(t, logged[0], "issuer", "the operator's log says why")
}

func TestProxyStreamsWithoutBuffering(t *testing.T) {
	release := make(chan struct{})
	is, a := issuerAndAuthn(t, legacyConfig)
	tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, aliceClaims), testissuer.Valid)
	require.NoError(t, err)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "event-1\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "event-2\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p := httptest.NewServer(&Handler{Upstream: u, Transport: upstream.HeaderTimeout(http.DefaultTransport, 2*time.Second), Authenticator: a})
	defer p.Close()
	defer close(release)
	req, _ := http.NewRequest("GET", p.URL+"/api/v1/pods?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	line := make(chan string, 1)
	go func() { l, _ := bufio.NewReader(resp.Body).ReadString('\n'); line <- l }()
	select {
	case l := <-line:
		assert.Equal(t, "event-1\n", l, "the first event arrives while the upstream still streams")
	case <-time.After(5 * time.Second):
		t.Error("the proxy buffered the stream")
	}
}

func TestProxyUpgrades(t *testing.T) {
	is, a := issuerAndAuthn(t, legacyConfig)
	tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, aliceClaims), testissuer.Valid)
	require.NoError(t, err)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "SPDY/3.1" || r.Header.Get("Impersonate-User") != "alice@example.com" {
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
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p := httptest.NewServer(&Handler{Upstream: u, Transport: upstream.HeaderTimeout(http.DefaultTransport, 2*time.Second), Authenticator: a})
	defer p.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /api/v1/namespaces/a/pods/p/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+"\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
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
	assert.Equal(t, "echo:hello", string(got), "bytes flow both ways over the upgraded connection (after the header timeout's wrapper)")
}

// A request without an identity in its context never leaves.
func TestImpersonateRefusesAnonymous(t *testing.T) {
	req, _ := http.NewRequest("GET", "https://upstream.invalid/api", nil)
	_, err := impersonate{next: noopRT{}}.RoundTrip(req)
	assert.Error(t, err)
}

// The serving certificate is loaded again when its files change.
func TestCertReloader(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(cn string) {
		c, k := selfSigned(t, cn)
		require.NoError(t, os.WriteFile(certFile, c, 0o600))
		require.NoError(t, os.WriteFile(keyFile, k, 0o600))
	}
	write("one")
	var errs []error
	r := &CertReloader{CertFile: certFile, KeyFile: keyFile, OnError: func(err error) { errs = append(errs, err) }}
	require.NoError(t, r.Load())
	cn := func() string {
		c, err := r.GetCertificate(&tls.ClientHelloInfo{})
		require.NoError(t, err)
		return c.Leaf.Subject.CommonName
	}
	assert.Equal(t, "one", cn())
	write("two")
	r.lastCheck = time.Time{}
	assert.Equal(t, "two", cn(), "reloaded after the files changed")
	require.NoError(t, os.WriteFile(keyFile, []byte("garbage"), 0o600))
	r.lastCheck = time.Time{}
	assert.Equal(t, "two", cn(), "a broken pair keeps the previous one")
	assert.Len(t, errs, 1)

	// The files are looked at at most once a second (docs/proxy.md).
	write("three")
	r.lastCheck = time.Now().Add(-900 * time.Millisecond)
	assert.Equal(t, "two", cn(), "checked less than a second ago: not looked at")
	r.lastCheck = time.Now().Add(-1001 * time.Millisecond)
	assert.Equal(t, "three", cn(), "a second later: reloaded")
}

// A groups prefix makes a system: claim harmless, as kube-apiserver maps
// it: "oidc:system:masters" is forwarded.
func TestProxyPrefixedSystemGroupIsForwarded(t *testing.T) {
	p := newTestProxy(t, legacyConfig, false)
	tok := p.mint(t, mergeClaims(aliceClaims, map[string]any{"groups": []any{"system:masters"}}), testissuer.Valid)
	assert.Equal(t, 200, rawRequest(t, p.url, "GET", "/api", [][2]string{{"Authorization", "Bearer " + tok}}))
	seen := p.upstream.take()
	require.Len(t, seen, 1)
	assert.Equal(t, []string{"oidc:system:masters"}, seen[0].Header.Values("Impersonate-Group"))
}

// An upgrade is audited as 101, not 200.
func TestUpgradeAuditedAs101(t *testing.T) {
	p := newTestProxy(t, legacyConfig, false)
	tok := p.mint(t, aliceClaims, testissuer.Valid)
	assert.Equal(t, 101, rawRequest(t, p.url, "POST", "/api/v1/namespaces/a/pods/p/exec", [][2]string{{"Authorization", "Bearer " + tok}, {"Connection", "Upgrade"}, {"Upgrade", "SPDY/3.1"}}))
	for i := 0; i < 100 && !strings.Contains(p.audit.String(), `"code":101`); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	assert.Contains(t, p.audit.String(), `"code":101`)
	assert.Contains(t, p.audit.String(), `"remote":"127.0.0.1:`)
}

// TestProxyCapsRequestsInFlight: with --max-requests-inflight=1 and one
// request held upstream, the next gets 429 with Retry-After before any
// authentication, however it dresses as long-running, a watch included;
// once authenticated, a watch (long-running as kube-apiserver decides it)
// gives its slot back; a caller that drops its connection mid-body gives
// its slot back; a counted request, an upgrade included, ends at
// RequestTimeout.
func TestProxyCapsRequestsInFlight(t *testing.T) {
	is, a := issuerAndAuthn(t, legacyConfig)
	tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, aliceClaims), testissuer.Valid)
	require.NoError(t, err)
	release, stopStream, entered := make(chan struct{}), make(chan struct{}), make(chan struct{}, 16)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		switch r.URL.Query().Get("mode") {
		case "hold":
			<-release
		case "stream":
			<-stopStream
		case "big": // a large body, written until the caller goes away
			for range 4096 {
				if _, err := w.Write(make([]byte, 64<<10)); err != nil {
					return
				}
			}
			return
		}
		_, _ = io.WriteString(w, "{}")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p := httptest.NewServer(&Handler{Upstream: u, Transport: http.DefaultTransport, Authenticator: a, MaxInFlight: 1})
	defer p.Close()
	get := func(method, path string, headers ...string) (int, http.Header) {
		req, _ := http.NewRequest(method, p.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	wait := func() {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the request never reached the upstream")
		}
	}
	held := make(chan int, 1)
	go func() { code, _ := get("GET", "/api/v1/pods?mode=hold"); held <- code }()
	wait()
	code, h := get("GET", "/api/v1/pods")
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	for name, try := range map[string][]string{
		"an Upgrade header":              {"GET", "/api/v1/pods", "Upgrade", "x"},
		"follow=true off a log":          {"GET", "/api/v1/pods?follow=true"},
		"watch=1 on a POST":              {"POST", "/api/v1/namespaces/a/pods?watch=1"},
		"a namespace named watch":        {"GET", "/api/v1/namespaces/watch/pods"},
		"a path with /watch/ in a label": {"GET", "/api/v1/pods?labelSelector=/watch/"},
	} {
		code, _ := get(try[0], try[1], try[2:]...)
		assert.Equal(t, http.StatusTooManyRequests, code, "dressed as long-running: %s", name)
	}
	code, _ = get("GET", "/api/v1/pods?watch=true")
	assert.Equal(t, http.StatusTooManyRequests, code, "a watch too holds a slot until it is authenticated")
	close(release)
	assert.Equal(t, http.StatusOK, <-held)

	// Authenticated, a watch (long-running as kube-apiserver decides it)
	// gives its slot back: a request passes while it streams.
	watching := make(chan int, 1)
	go func() { code, _ := get("GET", "/api/v1/pods?watch=true&mode=stream"); watching <- code }()
	wait()
	code, _ = get("GET", "/api/v1/pods")
	assert.Equal(t, http.StatusOK, code, "the watch does not hold the slot")
	close(stopStream)
	assert.Equal(t, http.StatusOK, <-watching)

	// A caller that goes away mid-body: ReverseProxy aborts the handler.
	req, _ := http.NewRequest("GET", p.URL+"/api/v1/pods?mode=big", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.ReadFull(resp.Body, make([]byte, 1<<10))
	resp.Body.Close() // mid-body
	var last int
	for range 50 {
		if last, _ = get("GET", "/api/v1/pods"); last == http.StatusOK {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, http.StatusOK, last, "the dropped caller's slot is free again")
}

// TestProxyCountedUpgradeEndsAtRequestTimeout: an upgrade on a path that
// is not long-running (an aggregated API's websocket, say) holds its slot
// until RequestTimeout, not for as long as the upstream keeps it open.
func TestProxyCountedUpgradeEndsAtRequestTimeout(t *testing.T) {
	old := RequestTimeout
	RequestTimeout = time.Second
	defer func() { RequestTimeout = old }()
	is, a := issuerAndAuthn(t, legacyConfig)
	tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, aliceClaims), testissuer.Valid)
	require.NoError(t, err)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			_, _ = io.WriteString(w, "{}")
			return
		}
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(io.Discard, c) // held open until the proxy closes it
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p := httptest.NewServer(&Handler{Upstream: u, Transport: http.DefaultTransport, UpgradeTransport: http.DefaultTransport, Authenticator: a, MaxInFlight: 1})
	defer p.Close()
	c, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /apis/example.com/v1/namespaces/a/vms/x/console HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "101")
	get := func() int {
		req, _ := http.NewRequest("GET", p.URL+"/api/v1/pods", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusTooManyRequests, get(), "the upgrade holds the slot")
	start := time.Now()
	var last int
	for time.Since(start) < 5*time.Second {
		if last = get(); last == http.StatusOK {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, http.StatusOK, last, "the slot is free after RequestTimeout")
	assert.Less(t, time.Since(start), 3*time.Second)
}
