//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the attack test reads.
type auditEvent struct {
	Stage      string   `json:"stage"`
	RequestURI string   `json:"requestURI"`
	UserAgent  string   `json:"userAgent"`
	SourceIPs  []string `json:"sourceIPs"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"impersonatedUser"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditEvents reads kube-apiserver's audit log: the events whose user
// agent is ua.
func auditEvents(t *testing.T, path, ua string) []auditEvent {
	t.Helper()
	var out []auditEvent
	for _, e := range readAudit(t, path) {
		if e.UserAgent == ua {
			out = append(out, e)
		}
	}
	return out
}

// readAudit reads kube-apiserver's audit log (JSON lines).
func readAudit(t *testing.T, path string) []auditEvent {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []auditEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// rawHTTP1 sends a request byte for byte over TLS (header names and the
// Connection header exactly as given) and returns the status code.
func rawHTTP1(t *testing.T, base, method, path string, headers [][2]string) int {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{RootCAs: caPool(), NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, strings.TrimPrefix(base, "https://"))
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	_, err = io.WriteString(conn, b.String())
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// rawHTTP2 sends one request over HTTP/2 with headers hpack-encoded as
// given (Go's HTTP/2 client refuses to send connection-specific headers
// such as Connection, so the frames are written by hand). It returns the
// status, or 0 when the server reset the stream or closed the connection.
func rawHTTP2(t *testing.T, base, path string, headers [][2]string) int {
	t.Helper()
	host := strings.TrimPrefix(base, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: caPool(), NextProtos: []string{"h2"}})
	require.NoError(t, err)
	defer conn.Close()
	require.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol)
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	_, err = io.WriteString(conn, http2.ClientPreface)
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	require.NoError(t, fr.WriteSettings())
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", host}, {":path", path}} {
		require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	for _, h := range headers {
		require.NoError(t, enc.WriteField(hpack.HeaderField{Name: strings.ToLower(h[0]), Value: h[1]}))
	}
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}))
	dec := hpack.NewDecoder(4096, nil)
	for range 100 {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			return 0
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			require.NoError(t, err)
			for _, hf := range fields {
				if hf.Name == ":status" {
					var code int
					_, _ = fmt.Sscanf(hf.Value, "%d", &code)
					return code
				}
			}
		}
	}
	return 0
}

func caPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(st.caPEM)
	return p
}

// The impersonating proxy with a privileged upstream credential
// (system:masters), attacked: for each attack the HTTP status, and from
// kube-apiserver's own audit log, that no request ran as the proxy's
// identity (e2e-admin) without impersonation. A positive control proves
// the audit check sees forwarded requests.
func TestProxyAttacksOnTheRealStack(t *testing.T) {
	api := st.api["legacy"]
	is, err := testissuer.Start()
	require.NoError(t, err)
	defer is.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "issuer-ca.crt")
	require.NoError(t, os.WriteFile(caFile, is.CAPEM(), 0o600))
	// The most exposed mapping: no prefixes, so a claim could name
	// system: identities; uid and extra mapped.
	ca, _ := json.Marshal(string(is.CAPEM()))
	authConfig := filepath.Join(dir, "authn.yaml")
	require.NoError(t, os.WriteFile(authConfig, []byte(fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: %q, audiences: [kube], certificateAuthority: %s}
  claimMappings:
    username: {claim: email, prefix: ""}
    groups: {claim: groups, prefix: ""}
    uid: {claim: sub}
    extra:
    - {key: example.com/tenant, valueExpression: 'has(claims.tenant) ? claims.tenant : ""'}
`, is.URL, ca)), 0o600))
	proxyURL := startProxyWith(t, "privileged", adminToken, "", "--authentication-config="+authConfig)
	prefixed := startProxyWith(t, "prefixed", adminToken, "/c-1", "--authentication-config="+authConfig)

	mint := func(extra map[string]any, tamper testissuer.Tamper) string {
		claims := is.Claims("alice-uid", "kube", time.Hour, map[string]any{"email": "alice@example.com", "email_verified": true, "groups": []any{"developers"}})
		for k, v := range extra {
			claims[k] = v
		}
		raw, err := is.Mint(claims, tamper)
		require.NoError(t, err)
		return raw
	}
	alice := mint(nil, testissuer.Valid)
	bearer := [2]string{"Authorization", "Bearer " + alice}
	const secrets = "/api/v1/namespaces/kube-system/secrets"
	type attack struct {
		name    string
		base    string
		method  string
		path    string
		headers [][2]string
		h2      bool
		// want: the status (0: a reset HTTP/2 stream), forwarded: whether
		// the request may reach kube-apiserver (as alice).
		want      int
		forwarded bool
	}
	attacks := []attack{
		{name: "control: alice lists pods in team-a", path: "/api/v1/namespaces/team-a/pods", headers: [][2]string{bearer}, want: 200, forwarded: true},
		{name: "control: alice may not list secrets", headers: [][2]string{bearer}, want: 403, forwarded: true},
		{name: "no token", want: 401},
	}
	for _, h := range []string{"Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes", "Authorization"} {
		attacks = append(attacks,
			attack{name: "HTTP/1.1 Connection: " + h, headers: [][2]string{bearer, {"Connection", h}}, want: 403},
			attack{name: "HTTP/1.1 Connection: keep-alive, " + strings.ToLower(h), headers: [][2]string{bearer, {"Connection", "keep-alive, " + strings.ToLower(h)}}, want: 403},
			attack{name: "HTTP/1.1 upgrade, Connection: Upgrade, " + h, headers: [][2]string{bearer, {"Connection", "Upgrade, " + h}, {"Upgrade", "SPDY/3.1"}}, want: 403},
			// Go's HTTP/2 server answers 400 to a connection-specific
			// header (RFC 9113 8.2.2), before any handler runs.
			attack{name: "HTTP/2 connection: " + h, headers: [][2]string{bearer, {"Connection", h}}, h2: true, want: 400},
		)
	}
	for _, h := range []string{"Impersonate-User", "impersonate-user", "IMPERSONATE-USER", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes"} {
		attacks = append(attacks,
			attack{name: "HTTP/1.1 caller sends " + h, headers: [][2]string{bearer, {h, "e2e-admin"}}, want: 403},
			attack{name: "HTTP/2 caller sends " + h, headers: [][2]string{bearer, {h, "e2e-admin"}}, h2: true, want: 403},
			attack{name: "upgrade, caller sends " + h, headers: [][2]string{bearer, {h, "e2e-admin"}, {"Connection", "Upgrade"}, {"Upgrade", "SPDY/3.1"}}, want: 403},
		)
	}
	// Underscore spellings, which CGI-style gateways and nginx's
	// underscores_in_headers read as the dashed ones.
	for _, h := range []string{"Impersonate_User", "impersonate_group"} {
		attacks = append(attacks, attack{name: "HTTP/1.1 caller sends " + h, headers: [][2]string{bearer, {h, "e2e-admin"}}, want: 403})
	}
	for _, h := range [][2]string{{"X-Remote-User", "e2e-admin"}, {"X-Remote-Group", "system:masters"}, {"X_Remote_User", "e2e-admin"}} {
		// Removed, not refused: the request runs as alice.
		attacks = append(attacks, attack{name: "caller sends " + h[0], headers: [][2]string{bearer, h}, want: 403, forwarded: true})
	}
	for name, claims := range map[string]map[string]any{
		"username with a leading space":         {"email": " e2e-admin"},
		"username with a tab":                   {"email": "e2e-admin\t"},
		"group with spaces":                     {"groups": []any{" system:masters"}},
		"group with a tab and a trailing space": {"groups": []any{"\tsystem:masters "}},
		"uid with a trailing space":             {"sub": "alice-uid "},
		"control character in the username":     {"email": "e2e\x00admin"},
		"control character in extra":            {"tenant": "a\x1b]0;x\x07"},
		"system:masters in the groups claim":    {"groups": []any{"developers", "system:masters"}},
		"system: username":                      {"email": "system:admin"},
	} {
		tok := mint(claims, testissuer.Valid)
		attacks = append(attacks,
			attack{name: name, headers: [][2]string{{"Authorization", "Bearer " + tok}}, want: 403},
			attack{name: name + ", forcing the HTTP/1.1 upstream", headers: [][2]string{{"Authorization", "Bearer " + tok}, {"Connection", "Upgrade"}, {"Upgrade", "x"}}, want: 403},
		)
	}
	for name, tok := range map[string]string{
		"alg none":                        mint(nil, testissuer.AlgNone),
		"HS256 keyed with the public key": mint(nil, testissuer.HS256PublicKey),
		"unknown kid":                     mint(nil, testissuer.UnknownKid),
		"bad signature":                   mint(nil, testissuer.BadSignature),
		"wrong iss":                       mint(map[string]any{"iss": "https://evil.example"}, testissuer.Valid),
		"wrong aud":                       mint(map[string]any{"aud": "other"}, testissuer.Valid),
		"expired":                         mint(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}, testissuer.Valid),
		"nbf in the future":               mint(map[string]any{"nbf": time.Now().Add(10 * time.Minute).Unix()}, testissuer.Valid),
	} {
		attacks = append(attacks,
			attack{name: "token: " + name, headers: [][2]string{{"Authorization", "Bearer " + tok}}, want: 401},
			attack{name: "upgrade, token: " + name, headers: [][2]string{{"Authorization", "Bearer " + tok}, {"Connection", "Upgrade"}, {"Upgrade", "SPDY/3.1"}}, want: 401},
		)
	}
	for _, path := range []string{"/../api/v1/namespaces/kube-system/secrets", "/%2e%2e/api/v1/namespaces/kube-system/secrets",
		"/api/..%2f..%2fapi/v1/namespaces/kube-system/secrets", "/api/v1/../../api/v1/namespaces/kube-system/secrets",
		"/..;/api/v1/namespaces/kube-system/secrets"} {
		attacks = append(attacks, attack{name: "prefixed upstream, path " + path, base: prefixed, path: path, headers: [][2]string{bearer}, want: 400})
	}

	attacks = append(attacks,
		attack{name: "CONNECT through the proxy", method: "CONNECT", path: "kubernetes.default.svc:443", headers: [][2]string{bearer}, want: 405},
		attack{name: "CONNECT, prefixed upstream", base: prefixed, method: "CONNECT", path: "kubernetes.default.svc:443", headers: [][2]string{bearer}, want: 405},
		attack{name: "X-Real-Ip spoofing", path: "/api/v1/namespaces/team-a/pods", headers: [][2]string{bearer, {"X-Real-Ip", "10.9.9.9"}}, want: 200, forwarded: true})
	require.Len(t, attacks, 88, "README's count of the attacks")
	for i, a := range attacks {
		ua := fmt.Sprintf("ki-attack/%d", i)
		base := a.base
		if base == "" {
			base = proxyURL
		}
		path := a.path
		if path == "" {
			path = secrets
		}
		headers := append([][2]string{{"User-Agent", ua}}, a.headers...)
		var code int
		method := a.method
		if method == "" {
			method = "GET"
		}
		if a.h2 {
			code = rawHTTP2(t, base, path, headers)
		} else {
			code = rawHTTP1(t, base, method, path, headers)
		}
		assert.Equal(t, a.want, code, "%s: status", a.name)
		attacks[i].base = ua // the user agent, for the audit check below
	}
	// kube-apiserver writes each event as the request completes: wait
	// (bounded) for the controls to appear, then read every attack's.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && len(auditEvents(t, api.auditLog, attacks[1].base)) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	ranAsProxy, forwarded := 0, 0
	for _, a := range attacks {
		events := auditEvents(t, api.auditLog, a.base)
		for _, e := range events {
			if e.User.Username == "e2e-admin" && e.ImpersonatedUser == nil {
				ranAsProxy++
				t.Errorf("%s: ran as the proxy's own identity: %s", a.name, e.RequestURI)
			}
			if e.ImpersonatedUser != nil {
				assert.Equal(t, "alice@example.com", e.ImpersonatedUser.Username, a.name)
				assert.NotContains(t, e.ImpersonatedUser.Groups, "system:masters", a.name)
			}
		}
		if a.forwarded {
			forwarded++
			require.NotEmpty(t, events, "%s: the forwarded request is in kube-apiserver's audit log", a.name)
			assert.NotNil(t, events[0].ImpersonatedUser, a.name)
			assert.NotContains(t, events[0].SourceIPs, "10.9.9.9", "%s: no source address of the caller's choosing", a.name)
		} else {
			assert.Empty(t, events, "%s: refused by the proxy, never reached kube-apiserver", a.name)
		}
	}
	t.Logf("%d attacks (%d forwarded as alice), %d ran as the proxy's identity", len(attacks), forwarded, ranAsProxy)
	assert.Zero(t, ranAsProxy)
}

// pluginRequests counts the requests kube-apiserver's audit log records
// from this plugin (its user agent) while f runs: the server's count, not
// the client's. The audit log is written before each response (blocking).
func pluginRequests(t *testing.T, api *apiserver, f func()) (n int, uris []string) {
	t.Helper()
	count := func() []string {
		var uris []string
		for _, e := range readAudit(t, api.auditLog) {
			if e.Stage == "ResponseComplete" && strings.HasPrefix(e.UserAgent, "kubectl-impersonate/") {
				uris = append(uris, e.RequestURI)
			}
		}
		return uris
	}
	before := len(count())
	f()
	after := count()
	return len(after) - before, after[before:]
}
