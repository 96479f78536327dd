// Package proxyattacks is the impersonating proxy's attack table: one list,
// driven in-process against a recording upstream (pkg/server/proxy's
// TestProxyAttacks) and on the real stack against kube-apiserver and its
// audit log (test/e2e's TestProxyAttacksOnTheRealStack), and the raw
// clients that send each attack byte for byte (HTTP/1.1 and HTTP/2 frames
// written by hand: Go's clients refuse connection-specific headers).
//
// The table's valid token names alice (email alice@example.com, the
// drivers' own groups); the proxy under test maps usernames and groups
// without prefixes (the most exposed mapping: a claim could name system:
// identities), uid from sub and an extra from a tenant claim.
package proxyattacks

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// Paths the attacks use: alice may not read kube-system's secrets (so a
// request that reached kube-apiserver as the proxy's privileged identity
// would show), and may list team-a's pods (the control).
const (
	SecretsPath = "/api/v1/namespaces/kube-system/secrets"
	AllowedPath = "/api/v1/namespaces/team-a/pods"
)

// Attack is one request at the proxy.
type Attack struct {
	Name   string
	Method string // "" is GET
	Path   string // "" is SecretsPath
	// Headers are sent as given: names, case and order.
	Headers [][2]string
	// HTTP2 sends the request as HTTP/2 frames.
	HTTP2 bool
	// Prefixed sends it through a proxy whose upstream URL has a path
	// prefix (a cluster gateway's /clusters/NAME), where a dot segment
	// would climb out of it.
	Prefixed bool
	// Want is the proxy's status for a refused request. A forwarded one
	// gets the upstream's answer instead (kube-apiserver's for alice).
	Want int
	// Forwarded: the request reaches the upstream, as alice and only alice
	// (the caller's additions removed); otherwise nothing reaches it.
	Forwarded bool
	// As, for a forwarded request of CallerImpersonationTable, is the user
	// it reaches the upstream as (with alice under the proxy's
	// original-user extra); "" is alice herself.
	As string
}

// Send sends a to the proxy at base (HTTP/2 frames or HTTP/1.1 bytes, its
// path and method or the defaults), headers first, and returns the status.
func Send(base string, tlsConfig *tls.Config, a Attack, headers ...[2]string) (int, error) {
	path := a.Path
	if path == "" {
		path = SecretsPath
	}
	headers = append(headers, a.Headers...)
	if a.HTTP2 {
		return HTTP2(base, tlsConfig, path, headers)
	}
	method := a.Method
	if method == "" {
		method = http.MethodGet
	}
	return HTTP1(base, tlsConfig, method, path, headers)
}

// repeat is n headers name: value.
func repeat(name, value string, n int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{name, fmt.Sprintf("%s-%d", value, i)}
	}
	return out
}

// same is n copies of the header name: value.
func same(name, value string, n int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{name, value}
	}
	return out
}

// Impersonable is the one identity alice may impersonate in
// CallerImpersonationTable (a RoleBinding names it): a user, no group,
// UID or extra.
const Impersonable = "bob@example.com"

// CallerImpersonationTable attacks a proxy that honours callers'
// impersonation (--allow-caller-impersonation) where alice may impersonate
// the user Impersonable and nothing else: what the authorizer would not
// let alice do, spellings kube-apiserver would not read, requests without
// a user, and the proxy's own extra, are refused; Impersonable alone is
// forwarded, as Impersonable.
func CallerImpersonationTable(mint Minter) ([]Attack, error) {
	tok, err := mint(nil, testissuer.Valid)
	bearer := [2]string{"Authorization", "Bearer " + tok}
	with := func(hs ...[2]string) [][2]string { return append([][2]string{bearer}, hs...) }
	as := [2]string{"Impersonate-User", Impersonable}
	attacks := []Attack{
		{Name: "control: alice as herself", Path: AllowedPath, Headers: with(), Forwarded: true},
		{Name: "control: alice as " + Impersonable, Headers: with(as), Forwarded: true, As: Impersonable},
		{Name: "control: HTTP/2, alice as " + Impersonable, Headers: with(as), HTTP2: true, Forwarded: true, As: Impersonable},
		{Name: "control: lowercase header, alice as " + Impersonable, Headers: with([2]string{"impersonate-user", Impersonable}), Forwarded: true, As: Impersonable},
		{Name: "no token, as " + Impersonable, Headers: [][2]string{as}, Want: 401},
		{Name: "as another user", Headers: with([2]string{"Impersonate-User", "carol@example.com"}), Want: 403},
		{Name: "as system:admin", Headers: with([2]string{"Impersonate-User", "system:admin"}), Want: 403},
		{Name: "as a service account", Headers: with([2]string{"Impersonate-User", "system:serviceaccount:kube-system:default"}), Want: 403},
		{Name: "as a node", Headers: with([2]string{"Impersonate-User", "system:node:node-1"}), Want: 403},
		{Name: "as " + Impersonable + " in system:masters", Headers: with(as, [2]string{"Impersonate-Group", "system:masters"}), Want: 403},
		{Name: "HTTP/2, as " + Impersonable + " in system:masters", Headers: with(as, [2]string{"Impersonate-Group", "system:masters"}), HTTP2: true, Want: 403},
		{Name: "as " + Impersonable + " in a group", Headers: with(as, [2]string{"Impersonate-Group", "admins"}), Want: 403},
		{Name: "as " + Impersonable + " with a UID", Headers: with(as, [2]string{"Impersonate-Uid", "0"}), Want: 403},
		{Name: "as " + Impersonable + " with an extra", Headers: with(as, [2]string{"Impersonate-Extra-Scopes", "admin"}), Want: 403},
		{Name: "as " + Impersonable + " with the proxy's original-user extra", Headers: with(as, [2]string{"Impersonate-Extra-Kubectl-Impersonate.io%2foriginal-User", "admin"}), Want: 403},
		{Name: "two users", Headers: with(as, [2]string{"Impersonate-User", "system:admin"}), Want: 403},
		{Name: "a group without a user", Headers: with([2]string{"Impersonate-Group", "system:masters"}), Want: 403},
		{Name: "an empty user", Headers: with([2]string{"Impersonate-User", ""}), Want: 403},
		{Name: "Impersonate_User (underscore)", Headers: with([2]string{"Impersonate_User", Impersonable}), Want: 403},
		{Name: "Impersonate_Group (underscore) beside the user", Headers: with(as, [2]string{"Impersonate_Group", "system:masters"}), Want: 403},
		{Name: "as " + Impersonable + " in 40 groups (a SubjectAccessReview each)", Headers: with(append([][2]string{as}, repeat("Impersonate-Group", "developers", 40)...)...), Want: 403},
		{Name: "as " + Impersonable + " in one group 40 times (a SubjectAccessReview each)", Headers: with(append([][2]string{as}, same("Impersonate-Group", "developers", 40)...)...), Want: 403},
		{Name: "as " + Impersonable + " with the proxy's original-user extra spelt with an escaped capital", Headers: with(as, [2]string{"Impersonate-Extra-Kubectl-Impersonate.io%2FOriginal-%55ser", "mallory"}), Want: 403},
		{Name: "as " + Impersonable + " with invalid UTF-8", Headers: with([2]string{"Impersonate-User", Impersonable + "\xff"}), Want: 403},
		{Name: "Connection: Impersonate-User", Headers: with(as, [2]string{"Connection", "Impersonate-User"}), Want: 403},
		{Name: "upgrade, as another user", Headers: with([2]string{"Impersonate-User", "carol@example.com"}, [2]string{"Connection", "Upgrade"}, [2]string{"Upgrade", "SPDY/3.1"}), Want: 403},
	}
	return attacks, err
}

// Minter mints a token for alice with extra claims over her own (iss, aud,
// exp and nbf included), or tampered with.
type Minter func(extra map[string]any, tamper testissuer.Tamper) (string, error)

// Table is the attack table, with tokens from mint. proxyUser is the
// username of the proxy's own upstream credential: claims aimed at it
// (padded, with control characters) must be refused like any other.
func Table(mint Minter, proxyUser string) ([]Attack, error) {
	var err error
	token := func(extra map[string]any, tamper testissuer.Tamper) string {
		tok, merr := mint(extra, tamper)
		if merr != nil && err == nil {
			err = merr
		}
		return tok
	}
	bearer := [2]string{"Authorization", "Bearer " + token(nil, testissuer.Valid)}
	upgrade := [][2]string{{"Connection", "Upgrade"}, {"Upgrade", "SPDY/3.1"}}
	with := func(hs ...[2]string) [][2]string { return append([][2]string{bearer}, hs...) }

	attacks := []Attack{
		{Name: "control: alice lists pods in team-a", Path: AllowedPath, Headers: with(), Forwarded: true},
		{Name: "control: alice asks for kube-system's secrets", Headers: with(), Forwarded: true},
		{Name: "control: a lowercase bearer scheme", Headers: [][2]string{{"Authorization", strings.Replace(bearer[1], "Bearer", "bearer", 1)}}, Forwarded: true},
		{Name: "no token", Want: 401},
	}
	// Hop-by-hop removal of the proxy's own headers: a Connection header
	// naming them would make a naive proxy drop what it set.
	for _, h := range []string{"Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes", "Authorization", "X-Remote-User", "x-remote-group"} {
		attacks = append(attacks,
			Attack{Name: "Connection: " + h, Headers: with([2]string{"Connection", h}), Want: 403},
			Attack{Name: "Connection: keep-alive, " + strings.ToUpper(h), Headers: with([2]string{"Connection", "keep-alive, " + strings.ToUpper(h)}), Want: 403},
			Attack{Name: "Connection: keep-alive, " + strings.ToLower(h), Headers: with([2]string{"Connection", "keep-alive, " + strings.ToLower(h)}), Want: 403},
			Attack{Name: "upgrade, Connection: Upgrade, " + h, Headers: with([2]string{"Connection", "Upgrade, " + h}, [2]string{"Upgrade", "SPDY/3.1"}), Want: 403},
			// Go's HTTP/2 server answers 400 to a connection-specific
			// header (RFC 9113 8.2.2), before any handler runs.
			Attack{Name: "HTTP/2 connection: " + h, Headers: with([2]string{"Connection", h}), HTTP2: true, Want: 400},
		)
	}
	// The caller's own impersonation, in any case, and in the underscore
	// spellings CGI-style gateways and nginx's underscores_in_headers read
	// as the dashed ones.
	for _, h := range []string{"Impersonate-User", "impersonate-user", "IMPERSONATE-USER", "Impersonate-Group", "IMPERSONATE-GROUP", "Impersonate-Uid", "Impersonate-Extra-Scopes", "iMpErSoNaTe-ExTrA-x",
		"Impersonate_User", "impersonate_group", "Impersonate_Extra_Scopes"} {
		attacks = append(attacks,
			Attack{Name: "caller sends " + h, Headers: with([2]string{h, "system:admin"}), Want: 403},
			Attack{Name: "upgrade, caller sends " + h, Headers: append(with([2]string{h, "system:admin"}), upgrade...), Want: 403},
		)
		if !strings.Contains(h, "_") { // HTTP/2 field names are lowercase tokens
			attacks = append(attacks, Attack{Name: "HTTP/2 caller sends " + h, Headers: with([2]string{h, "system:admin"}), HTTP2: true, Want: 403})
		}
	}
	// Front-proxy headers: removed, not refused; the request runs as alice.
	for _, h := range [][2]string{{"X-Remote-User", "system:admin"}, {"X-Remote-Group", "system:masters"}, {"X_Remote_User", "system:admin"}, {"X-Remote-Extra-Scopes", "x"}} {
		attacks = append(attacks, Attack{Name: "caller sends " + h[0], Headers: with(h), Forwarded: true})
	}
	// Identities the mapping gives but the proxy must not assert: white
	// space and control characters (kube-apiserver would trim or reject
	// them differently), and system: users and groups.
	for _, c := range []struct {
		name   string
		claims map[string]any
	}{
		{"leading space in the username", map[string]any{"email": " alice@example.com"}},
		{"space and a system: username", map[string]any{"email": " system:admin"}},
		{"tab in the username", map[string]any{"email": "alice@example.com\t"}},
		{"control character in the username", map[string]any{"email": "alice\x00@example.com"}},
		{"group with spaces", map[string]any{"groups": []any{" system:masters"}}},
		{"tab and trailing space in a group", map[string]any{"groups": []any{"\tsystem:masters "}}},
		{"newline in a group", map[string]any{"groups": []any{"dev\nx"}}},
		{"trailing space in the uid", map[string]any{"sub": "sub-1 "}},
		{"control character in extra", map[string]any{"tenant": "a\x1b]0;x\x07"}},
		{"system:masters in the groups claim", map[string]any{"groups": []any{"dev", "system:masters"}}},
		{"system:nodes in the groups claim", map[string]any{"groups": []any{"system:nodes"}}},
		{"system: username", map[string]any{"email": "system:kube-controller-manager"}},
		{"the proxy's own user with a leading space", map[string]any{"email": " " + proxyUser}},
		{"the proxy's own user with a tab", map[string]any{"email": proxyUser + "\t"}},
		{"the proxy's own user with a NUL", map[string]any{"email": proxyUser[:1] + "\x00" + proxyUser[1:]}},
	} {
		tok := token(c.claims, testissuer.Valid)
		attacks = append(attacks,
			Attack{Name: c.name, Headers: [][2]string{{"Authorization", "Bearer " + tok}}, Want: 403},
			Attack{Name: c.name + ", forcing the HTTP/1.1 upstream", Headers: [][2]string{{"Authorization", "Bearer " + tok}, {"Connection", "Upgrade"}, {"Upgrade", "x"}}, Want: 403},
		)
	}
	// Tokens the authenticator must refuse.
	for _, c := range []struct {
		name   string
		claims map[string]any
		tamper testissuer.Tamper
	}{
		{"alg none", nil, testissuer.AlgNone},
		{"HS256 keyed with the public key", nil, testissuer.HS256PublicKey},
		{"unknown kid", nil, testissuer.UnknownKid},
		{"bad signature", nil, testissuer.BadSignature},
		{"wrong iss", map[string]any{"iss": "https://evil.example"}, testissuer.Valid},
		{"wrong aud", map[string]any{"aud": "other"}, testissuer.Valid},
		{"expired", map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}, testissuer.Valid},
		{"nbf in the future", map[string]any{"nbf": time.Now().Add(10 * time.Minute).Unix()}, testissuer.Valid},
	} {
		tok := token(c.claims, c.tamper)
		attacks = append(attacks,
			Attack{Name: "token: " + c.name, Headers: [][2]string{{"Authorization", "Bearer " + tok}}, Want: 401},
			Attack{Name: "upgrade, token: " + c.name, Headers: append([][2]string{{"Authorization", "Bearer " + tok}}, upgrade...), Want: 401},
		)
	}
	// Dot segments, encoded or not, that would climb out of the upstream's
	// path prefix to another cluster's.
	for _, p := range []string{"/.." + SecretsPath, "/%2e%2e" + SecretsPath, "/api/..%2f..%2f" + SecretsPath[1:], "/..;" + SecretsPath,
		"/../../c-2" + SecretsPath, "/api/../../c-2" + SecretsPath, "/%2e%2e/c-2" + SecretsPath, "/api/%2E%2E/%2e%2e/c-2/api",
		"/api/..%2f..%2fc-2/api", "/api/./v1/pods", `/api/..\..\c-2/api`, "/..;/..;/c-2/api", "/api/..%3b/x", "/api/v1/../../api/v1/namespaces/kube-system/secrets"} {
		attacks = append(attacks, Attack{Name: "prefixed upstream, path " + p, Prefixed: true, Path: p, Headers: with(), Want: 400})
	}
	attacks = append(attacks,
		Attack{Name: "CONNECT through the proxy", Method: "CONNECT", Path: "kubernetes.default.svc:443", Headers: with(), Want: 405},
		Attack{Name: "CONNECT, prefixed upstream", Prefixed: true, Method: "CONNECT", Path: "kubernetes.default.svc:443", Headers: with(), Want: 405},
		Attack{Name: "TRACE", Method: "TRACE", Headers: with(), Want: 405},
		Attack{Name: "Basic credentials", Headers: [][2]string{{"Authorization", "Basic ZTJlLWFkbWluOng="}}, Want: 401},
		Attack{Name: "an empty bearer", Headers: [][2]string{{"Authorization", "Bearer "}}, Want: 401},
		Attack{Name: "X-Real-Ip and X-Forwarded-For spoofing", Path: AllowedPath, Headers: with([2]string{"X-Real-Ip", "10.9.9.9"}, [2]string{"X-Forwarded-For", "10.9.9.9"}), Forwarded: true},
	)
	return attacks, err
}

// HTTP1 sends a request byte for byte (header names and the Connection
// header exactly as given) to base (http:// or https://, with tlsConfig)
// and returns the status code.
func HTTP1(base string, tlsConfig *tls.Config, method, path string, headers [][2]string) (int, error) {
	host := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
	var conn net.Conn
	var err error
	if strings.HasPrefix(base, "https://") {
		c := tlsConfig.Clone()
		c.NextProtos = []string{"http/1.1"}
		conn, err = tls.Dial("tcp", host, c)
	} else {
		conn, err = net.Dial("tcp", host)
	}
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host)
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return 0, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// HTTP2 sends one GET over HTTP/2 to base (https://) with the headers
// hpack-encoded as given. It returns the status, or 0 when the server
// reset the stream or closed the connection.
func HTTP2(base string, tlsConfig *tls.Config, path string, headers [][2]string) (int, error) {
	host := strings.TrimPrefix(base, "https://")
	c := tlsConfig.Clone()
	c.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", host, c)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		return 0, fmt.Errorf("the server negotiated %q, not h2", p)
	}
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return 0, err
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		return 0, err
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", host}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for _, h := range headers {
		_ = enc.WriteField(hpack.HeaderField{Name: strings.ToLower(h[0]), Value: h[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		return 0, err
	}
	dec := hpack.NewDecoder(4096, nil)
	for range 100 {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			return 0, nil
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return 0, err
			}
			for _, hf := range fields {
				if hf.Name == ":status" {
					var code int
					_, _ = fmt.Sscanf(hf.Value, "%d", &code)
					return code, nil
				}
			}
		}
	}
	return 0, nil
}
