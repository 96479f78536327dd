package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/identity"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/sudo"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/upstream"
)

// sudoPair is alice's approved request for edit in payments and its grant,
// started at start for d.
func sudoPair(start time.Time, d time.Duration) (elevation.Grant, elevation.Request) {
	r := elevation.Request{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments", UID: "u-1"},
		Spec: elevation.RequestSpec{Requester: "alice@example.com", Role: "edit",
			DurationSeconds: int64(d / time.Second), Reason: "INC-1 checkout down", Ticket: "INC-1"},
		Status: &elevation.RequestStatus{ApprovedBy: "bob@example.com"}}
	g := elevation.Grant{ObjectMeta: metav1.ObjectMeta{Name: "sudo-x", Namespace: "payments",
		CreationTimestamp: metav1.NewTime(start)},
		Spec: elevation.GrantSpec{Request: "sudo-x", RequestUID: "u-1", Requester: r.Spec.Requester, Role: "edit",
			DurationSeconds: r.Spec.DurationSeconds, Reason: r.Spec.Reason, Ticket: "INC-1",
			Approver: "bob@example.com"}}
	return g, r
}

// sudoHeaders is kubectl --as SELF --as-user-extra kubectl-impersonate.io/sudo-grant=GRANT.
func sudoHeaders(self, grant string) map[string]string {
	return map[string]string{"Impersonate-User": self,
		"Impersonate-Extra-" + url.PathEscape(sudo.GrantExtra): grant}
}

// TestProxySudo: one table over every way an elevated request is served
// or refused through the proxy, the attacks among them; what goes upstream
// is read back with kube-apiserver's own header rules.
func TestProxySudo(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	store := sudo.NewStore()
	p.handler.Sudo = store
	g, r := sudoPair(time.Now().Add(-time.Minute), 30*time.Minute)
	expired, expiredReq := sudoPair(time.Now().Add(-2*time.Hour), time.Hour)
	expired.Name, expired.Spec.Request, expiredReq.Name = "sudo-old", "sudo-old", "sudo-old"
	store.Load([]elevation.Grant{g, expired}, []elevation.Request{r, expiredReq})
	alice := p.mint(t, aliceClaims, testissuer.Valid)
	bob := p.mint(t, map[string]any{"email": "bob@example.com", "email_verified": true}, testissuer.Valid)
	withSudoGroup := p.mint(t, mergeClaims(aliceClaims, map[string]any{"groups": []any{"dev", "sudo:payments:edit"}}),
		testissuer.Valid)
	const grant = "payments/sudo-x"
	for _, c := range []struct {
		name    string
		token   string
		path    string
		headers map[string]string
		noSudo  bool
		code    int
		msg     string
		// elevated: forwarded with the grant's group and extras; else as
		// the caller alone (when forwarded at all).
		elevated bool
	}{
		{"elevated in the grant's namespace", alice, "/apis/apps/v1/namespaces/payments/deployments/web",
			sudoHeaders("alice@example.com", grant), false, 200, "", true},
		{"discovery under the grant goes as the caller", alice, "/apis",
			sudoHeaders("alice@example.com", grant), false, 200, "", false},
		{"cluster-scoped under the grant goes as the caller", alice, "/api/v1/namespaces",
			sudoHeaders("alice@example.com", grant), false, 200, "", false},
		{"a question about oneself is asked with the grant", alice,
			"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", sudoHeaders("alice@example.com", grant), false,
			200, "", true},
		{"another namespace", alice, "/api/v1/namespaces/checkout/pods",
			sudoHeaders("alice@example.com", grant), false, 403, "sudo grant payments/sudo-x is for namespace payments, not checkout", false},
		{"plain request: no elevation", alice, "/api/v1/namespaces/payments/pods", nil, false, 200, "", false},
		{"someone else's grant", bob, "/api/v1/namespaces/payments/pods",
			sudoHeaders("bob@example.com", grant), false, 403, "is alice@example.com's, not yours", false},
		{"someone else's grant, as them", bob, "/api/v1/namespaces/payments/pods",
			sudoHeaders("alice@example.com", grant), false, 403, "impersonates its caller", false},
		{"grant with a group added", alice, "/api/v1/namespaces/payments/pods",
			map[string]string{"Impersonate-User": "alice@example.com", "Impersonate-Group": "system:masters",
				"Impersonate-Extra-" + url.PathEscape(sudo.GrantExtra): grant}, false, 403, "own identity", false},
		{"expired", alice, "/api/v1/namespaces/payments/pods",
			sudoHeaders("alice@example.com", "payments/sudo-old"), false, 403, "grant payments/sudo-old expired at ", false},
		{"no such grant", alice, "/api/v1/namespaces/payments/pods",
			sudoHeaders("alice@example.com", "payments/sudo-nope"), false, 403, "there is no sudo grant sudo-nope in payments", false},
		{"a token with an elevation group", withSudoGroup, "/api/v1/namespaces/payments/pods", nil, false, 403,
			"is an elevation's, which only the proxy sets", false},
		{"forging the reason", alice, "/api/v1/namespaces/payments/pods",
			map[string]string{"Impersonate-User": "alice@example.com",
				"Impersonate-Extra-" + url.PathEscape(sudo.ReasonExtra): "approved"}, false, 403,
			"impersonation headers are not accepted", false},
		{"an empty segment (a gateway would merge it)", alice,
			"/api/v1/namespaces/payments/serviceaccounts/ci//token", sudoHeaders("alice@example.com", grant), false,
			400, "may not contain empty segments", false},
		{"a path parameter (a gateway would drop it)", alice,
			"/api/v1/namespaces/payments/serviceaccounts/ci/token;x", sudoHeaders("alice@example.com", grant), false,
			400, "may not contain empty segments (//) or ;", false},
		{"a proxy without --sudo", alice, "/api/v1/namespaces/payments/pods",
			sudoHeaders("alice@example.com", grant), true, 403, "does not serve sudo grants", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p.handler.Sudo = store
			if c.noSudo {
				p.handler.Sudo = nil
			}
			method := http.MethodGet
			if strings.Contains(c.path, "selfsubject") {
				method = http.MethodPost // a create
			}
			req, _ := http.NewRequest(method, p.url+c.path, strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+c.token)
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.Equal(t, c.code, resp.StatusCode, string(body))
			seen := p.upstream.take()
			if c.code != 200 {
				assert.Empty(t, seen, "nothing forwarded")
				var st metav1.Status
				require.NoError(t, json.Unmarshal(body, &st), string(body))
				assert.Contains(t, st.Message, c.msg)
				return
			}
			require.Len(t, seen, 1)
			a, err := identity.ReadHeaders(seen[0].Header)
			require.NoError(t, err)
			up := a.Info()
			assert.Equal(t, "alice@example.com", up.GetName())
			if !c.elevated {
				assert.Equal(t, []string{"dev"}, up.GetGroups())
				for k := range up.GetExtra() {
					assert.NotContains(t, k, "sudo", "no elevation's extra")
				}
				return
			}
			assert.Equal(t, []string{"dev", "sudo:payments:edit"}, up.GetGroups())
			assert.Equal(t, []string{grant}, up.GetExtra()[sudo.GrantExtra])
			assert.Equal(t, []string{"INC-1 checkout down"}, up.GetExtra()[sudo.ReasonExtra])
			assert.Equal(t, []string{"INC-1"}, up.GetExtra()[sudo.TicketExtra])
		})
	}
	p.handler.Sudo = store
	// The audit line names the grant asked for.
	assert.Contains(t, p.audit.String(), `"grant":"payments/sudo-x"`)

	// A view that is not current is 503 (try again), never a stale allow;
	// plain requests are served.
	store.Close("connection refused")
	time.Sleep(sudo.DefaultGrace)
	req, _ := http.NewRequest(http.MethodGet, p.url+"/api/v1/namespaces/payments/pods", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	for k, v := range sudoHeaders("alice@example.com", grant) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	plain, _ := http.NewRequest(http.MethodGet, p.url+"/api/v1/namespaces/payments/pods", nil)
	plain.Header.Set("Authorization", "Bearer "+alice)
	resp, err = http.DefaultClient.Do(plain)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, p.upstream.take()[0].Header.Values("Impersonate-Group")[1:], "plain: dev alone")
}

// TestProxySudoEndsStreams: a watch and an upgraded stream (exec,
// attach, port-forward) opened under a grant are closed at the grant's
// end, and at its revocation, within a second.
func TestProxySudoEndsStreams(t *testing.T) {
	for _, c := range []struct{ name, how string }{
		{"watch at expiry", "expiry"}, {"watch at revocation", "revocation"},
		{"upgrade at expiry", "expiry"}, {"upgrade at revocation", "revocation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			upgrade := strings.HasPrefix(c.name, "upgrade")
			is, a := issuerAndAuthn(t, structuredConfig)
			tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, aliceClaims), testissuer.Valid)
			require.NoError(t, err)
			done := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if upgrade {
					conn, rw, err := http.NewResponseController(w).Hijack()
					if err != nil {
						return
					}
					defer conn.Close()
					_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n" +
						"Upgrade: SPDY/3.1\r\n\r\nevent-1\n")
					_ = rw.Flush()
					<-done // a shell that never ends by itself
					return
				}
				_, _ = io.WriteString(w, "event-1\n")
				w.(http.Flusher).Flush()
				select { // a watch that never ends by itself
				case <-r.Context().Done():
				case <-done:
				}
			}))
			defer up.Close()
			defer close(done)
			u, _ := url.Parse(up.URL)
			store := sudo.NewStore()
			// Ends in 1.5 s for expiry; in 30 minutes for revocation.
			g, r := sudoPair(time.Now().Add(-58500*time.Millisecond), time.Minute)
			if c.how == "revocation" {
				g, r = sudoPair(time.Now(), 30*time.Minute)
			}
			store.Load([]elevation.Grant{g}, []elevation.Request{r})
			p := httptest.NewServer(&Handler{Upstream: u, Sudo: store, Authenticator: a,
				Transport:        upstream.HeaderTimeout(http.DefaultTransport, 2*time.Second),
				UpgradeTransport: upstream.HeaderTimeout(http.DefaultTransport, 2*time.Second)})
			defer p.Close()
			path := "/api/v1/namespaces/payments/pods?watch=true"
			if upgrade {
				path = "/api/v1/namespaces/payments/pods/web/exec?command=sh&stdin=true&tty=true"
			}
			req, _ := http.NewRequest("GET", p.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			if upgrade {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "SPDY/3.1")
			}
			for k, v := range sudoHeaders("alice@example.com", "payments/sudo-x") {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			want := map[bool]int{false: 200, true: 101}[upgrade]
			require.Equal(t, want, resp.StatusCode)
			br := bufio.NewReader(resp.Body)
			first, _ := br.ReadString('\n')
			require.Equal(t, "event-1\n", first)
			end := g.Ends()
			if c.how == "revocation" {
				time.Sleep(300 * time.Millisecond)
				revoked := g
				revoked.Status = &elevation.GrantStatus{RevokedBy: "bob@example.com"}
				end = time.Now()
				store.Load([]elevation.Grant{revoked}, []elevation.Request{r})
			}
			closed := make(chan time.Time, 1)
			go func() { _, _ = io.Copy(io.Discard, br); closed <- time.Now() }()
			select {
			case at := <-closed:
				assert.WithinDuration(t, end, at, time.Second, "closed within a second of the grant's end")
				assert.False(t, at.Before(end.Add(-50*time.Millisecond)), "not before")
			case <-time.After(10 * time.Second):
				t.Fatal("the stream outlived its grant")
			}
		})
	}
}

// TestProxySudoClampsTokenRequests: a TokenRequest made under a grant goes
// upstream ending by the grant's end.
func TestProxySudoClampsTokenRequests(t *testing.T) {
	p := newTestProxy(t, structuredConfig, false)
	store := sudo.NewStore()
	g, r := sudoPair(time.Now(), 30*time.Minute)
	store.Load([]elevation.Grant{g}, []elevation.Request{r})
	p.handler.Sudo = store
	req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/namespaces/payments/serviceaccounts/ci/token",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":86400}}`))
	req.Header.Set("Authorization", "Bearer "+p.mint(t, aliceClaims, testissuer.Valid))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range sudoHeaders("alice@example.com", "payments/sudo-x") {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	seen := p.upstream.take()
	require.Len(t, seen, 1)
	var tr struct {
		Spec struct {
			ExpirationSeconds int64 `json:"expirationSeconds"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(p.upstream.lastBody(), &tr))
	assert.InDelta(t, 1800, tr.Spec.ExpirationSeconds, 2, "clamped to what is left of the grant")
}
