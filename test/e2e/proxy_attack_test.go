//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/proxyattacks"
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

	// The table pkg/proxy's TestProxyAttacks drives in-process: here each
	// forwarded request gets kube-apiserver's own answer for alice.
	attacks, err := proxyattacks.Table(func(extra map[string]any, tamper testissuer.Tamper) (string, error) {
		claims := is.Claims("alice-uid", "kube", time.Hour, map[string]any{"email": "alice@example.com", "email_verified": true, "groups": []any{"developers"}})
		for k, v := range extra {
			claims[k] = v
		}
		return is.Mint(claims, tamper)
	}, "e2e-admin")
	require.NoError(t, err)
	require.Len(t, attacks, 139, "README's count of the attacks")
	tlsConfig := &tls.Config{RootCAs: caPool()}
	uas := make([]string, len(attacks))
	for i, a := range attacks {
		uas[i] = fmt.Sprintf("ki-attack/%d", i)
		base := proxyURL
		if a.Prefixed {
			base = prefixed
		}
		path := cmp.Or(a.Path, proxyattacks.SecretsPath)
		headers := append([][2]string{{"User-Agent", uas[i]}}, a.Headers...)
		var code int
		if a.HTTP2 {
			code, err = proxyattacks.HTTP2(base, tlsConfig, path, headers)
		} else {
			code, err = proxyattacks.HTTP1(base, tlsConfig, cmp.Or(a.Method, "GET"), path, headers)
		}
		require.NoError(t, err, a.Name)
		want := a.Want
		if a.Forwarded {
			want = map[bool]int{true: 200, false: 403}[path == proxyattacks.AllowedPath] // alice's RBAC
		}
		assert.Equal(t, want, code, "%s: status", a.Name)
	}
	// kube-apiserver writes each event as the request completes: wait
	// (bounded) for the controls to appear, then read every attack's.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && len(auditEvents(t, api.auditLog, uas[1])) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	ranAsProxy, forwarded := 0, 0
	for i, a := range attacks {
		events := auditEvents(t, api.auditLog, uas[i])
		for _, e := range events {
			if e.User.Username == "e2e-admin" && e.ImpersonatedUser == nil {
				ranAsProxy++
				t.Errorf("%s: ran as the proxy's own identity: %s", a.Name, e.RequestURI)
			}
			if e.ImpersonatedUser != nil {
				assert.Equal(t, "alice@example.com", e.ImpersonatedUser.Username, a.Name)
				assert.NotContains(t, e.ImpersonatedUser.Groups, "system:masters", a.Name)
			}
		}
		if a.Forwarded {
			forwarded++
			require.NotEmpty(t, events, "%s: the forwarded request is in kube-apiserver's audit log", a.Name)
			assert.NotNil(t, events[0].ImpersonatedUser, a.Name)
			assert.NotContains(t, events[0].SourceIPs, "10.9.9.9", "%s: no source address of the caller's choosing", a.Name)
		} else {
			assert.Empty(t, events, "%s: refused by the proxy, never reached kube-apiserver", a.Name)
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
