package recorder

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/kubeapi"
)

const upstreamToken = "the-context-s-own-token"

// bearerProtocol begins the WebSocket subprotocol that carries a bearer
// token, as kubectl and kube-apiserver spell it.
const bearerProtocol = "base64url.bearer.authorization.k8s.io."

// cluster is the cluster upstream: it wants the context's token, refuses secrets
// as RBAC does and pods creation as admission does, and keeps what it got.
type cluster struct {
	mu      sync.Mutex
	seen    []string // method path Authorization Sec-WebSocket-Protocol
	protos  []string // the HTTP version and how many Sec-WebSocket-Protocol headers
	srv     *httptest.Server
	refuseI bool
}

func newUpstream(t *testing.T) *cluster {
	u := &cluster{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, strings.Join([]string{r.Method, r.URL.Path, r.Header.Get("Authorization"),
			r.Header.Get("Sec-WebSocket-Protocol")}, " "))
		u.protos = append(u.protos, fmt.Sprintf("%s %d", r.Proto, len(r.Header.Values("Sec-WebSocket-Protocol"))))
		u.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+upstreamToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		forbid := func(msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
				`"message":%q}`, msg)
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/slow"):
			time.Sleep(300 * time.Millisecond)
			forbid(`slow is forbidden: User "ci" cannot get resource "slow"`)
		case r.Header.Get("Accept") == "application/vnd.kubernetes.protobuf" && strings.HasSuffix(r.URL.Path, "/secrets"):
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte("k8s\x00\n\x0c\n\x02v1\x12\x06Status\x12\x03..."))
		case r.Header.Get("Impersonate-User") != "" && u.refuseI:
			forbid(`users "bob" is forbidden: User "ci" cannot impersonate resource "users" in API group "" at the ` +
				`cluster scope`)
		case strings.HasSuffix(r.URL.Path, "/secrets"):
			forbid(`secrets is forbidden: User "ci" cannot list resource "secrets" in API group "" in the namespace "a"`)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pods"):
			forbid(`pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged`)
		default:
			_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
		}
	}))
	u.srv.EnableHTTP2 = true
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	return u
}

func (u *cluster) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

func start(t *testing.T, u *cluster) (*Endpoint, *bytes.Buffer) { return startWith(t, u, nil) }

// startWith starts an endpoint to u, its context's configuration edited.
func startWith(t *testing.T, u *cluster, edit func(*rest.Config)) (*Endpoint, *bytes.Buffer) {
	var log bytes.Buffer
	cfg := &rest.Config{Host: u.srv.URL, BearerToken: upstreamToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: pemOf(u.srv.Certificate())}}
	if edit != nil {
		edit(cfg)
	}
	server, _, err := rest.DefaultServerUrlFor(cfg)
	require.NoError(t, err)
	plain, upgrade, err := kubeapi.UpstreamTransports(cfg)
	require.NoError(t, err)
	imp := cfg.Impersonate
	e, err := Start(Options{Upstream: server, Transport: plain, UpgradeTransport: upgrade, Log: &log,
		Impersonates: imp.UserName != "" || len(imp.Groups) > 0})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e, &log
}

func pemOf(c *x509.Certificate) []byte {
	return []byte("-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString(c.Raw) +
		"\n-----END CERTIFICATE-----\n")
}

// client is the child's, from its kubeconfig.
func client(t *testing.T, e *Endpoint) *http.Client {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["r"] = &clientcmdapi.Cluster{Server: e.url, CertificateAuthorityData: e.ca}
	kc.AuthInfos["r"] = &clientcmdapi.AuthInfo{Token: e.token}
	kc.Contexts["r"] = &clientcmdapi.Context{Cluster: "r", AuthInfo: "r", Namespace: "a"}
	kc.CurrentContext = "r"
	b, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	cc, err := clientcmd.NewClientConfigFromBytes(b)
	require.NoError(t, err)
	cfg, err := cc.ClientConfig()
	require.NoError(t, err)
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	return hc
}

func do(t *testing.T, c *http.Client, method, url string, h http.Header) int {
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func read(t *testing.T, e *Endpoint, log *bytes.Buffer) []auditlog.Request {
	require.NoError(t, e.Close())
	l, err := auditlog.Read(bytes.NewReader(log.Bytes()), auditlog.ReadOptions{})
	require.NoError(t, err)
	require.Zero(t, l.Skipped)
	return l.Requests
}

// TestRecordsWhatTheClusterAuthorizes: each request is written as the
// authorizer sees it, with the cluster's answer; RBAC's 403 is refused,
// admission's is not; the cluster gets the context's token alone.
func TestRecordsWhatTheClusterAuthorizes(t *testing.T) {
	u := newUpstream(t)
	e, log := start(t, u)
	c := client(t, e)
	assert.Equal(t, 200, do(t, c, "GET", e.url+"/api/v1/namespaces/a/pods?watch=1", nil))
	assert.Equal(t, 403, do(t, c, "GET", e.url+"/api/v1/namespaces/a/secrets", nil))
	assert.Equal(t, 403, do(t, c, "POST", e.url+"/api/v1/namespaces/a/pods", nil))
	assert.Equal(t, 200, do(t, c, "GET", e.url+"/version", nil))
	assert.Equal(t, 200, do(t, c, "GET", e.url+"/api/v1/namespaces/a/configmaps", nil))
	assert.Equal(t, 200, do(t, c, "GET", e.url+"/api/v1/namespaces/a/pods/p", http.Header{
		"Impersonate-User": {"bob"}}))
	u.refuseI = true
	assert.Equal(t, 403, do(t, c, "GET", e.url+"/api/v1/namespaces/a/pods/q", http.Header{
		"Impersonate-User": {"bob"}}))
	written, notAllowed := e.Counts()
	assert.Equal(t, 9, written)
	assert.Equal(t, 4, notAllowed)
	assert.Equal(t, []auditlog.Request{
		{Verb: "watch", Resource: "pods", Namespace: "a", Code: 200, Decision: auditlog.Allow},
		{Verb: "list", Resource: "secrets", Namespace: "a", Code: 403, Decision: auditlog.Forbid},
		// Admission's 403 cannot be told from the authorizer's by its
		// bytes: refused all the same.
		{Verb: "create", Resource: "pods", Namespace: "a", Code: 403, Decision: auditlog.Forbid},
		{Verb: "get", Path: "/version", Code: 200, Decision: auditlog.Allow},
		{Verb: "list", Resource: "configmaps", Namespace: "a", Code: 200, Decision: auditlog.Allow},
		{Verb: "impersonate", Resource: "users", Name: "bob", Code: 200, Decision: auditlog.Allow},
		{Verb: "impersonate", Resource: "users", Name: "bob", Code: 403},
	}, read(t, e, log), "the requests sent as bob are bob's, not the recording's")
	for _, s := range u.requests() {
		assert.Contains(t, s, " Bearer "+upstreamToken, "the cluster got the context's credential")
		assert.NotContains(t, s, e.token)
	}
	assert.Len(t, u.requests(), 7)
}

// TestRefusesWithoutTheOneTimeToken: the attacks of a local program that
// is not the command: no token, another token, the token of the context,
// a WebSocket subprotocol with a wrong token, no TLS trust in the CA.
// Nothing reaches the cluster, nothing is recorded.
func TestRefusesWithoutTheOneTimeToken(t *testing.T) {
	u := newUpstream(t)
	e, log := start(t, u)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(insecure.CloseIdleConnections)
	for name, h := range map[string]http.Header{
		"no token":            nil,
		"a guessed token":     {"Authorization": {"Bearer guess"}},
		"the context's token": {"Authorization": {"Bearer " + upstreamToken}},
		"a token prefix":      {"Authorization": {"Bearer " + e.token[:10]}},
		"basic":               {"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("a:"+e.token))}},
		"a WebSocket subprotocol with another token": {"Sec-WebSocket-Protocol": {
			bearerProtocol + base64.RawURLEncoding.EncodeToString([]byte("guess")) + ", v5.channel.k8s.io"}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, http.StatusUnauthorized, do(t, insecure, "GET", e.url+"/api/v1/namespaces/a/secrets", h))
		})
	}
	_, err := http.Get(e.url + "/version") // the system's roots do not hold the one-time CA
	require.Error(t, err)
	assert.ErrorContains(t, err, "certificate")
	assert.Empty(t, u.requests(), "nothing reached the cluster")
	assert.Empty(t, read(t, e, log), "nothing was recorded")
}

// TestWebSocketTokenIsStripped: the one-time token in a WebSocket's
// subprotocols (as kubectl exec sends it where headers cannot go) lets the
// request in, and the cluster gets the other subprotocols without it.
func TestWebSocketTokenIsStripped(t *testing.T) {
	u := newUpstream(t)
	e, log := start(t, u)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(insecure.CloseIdleConnections)
	tok := bearerProtocol + base64.RawURLEncoding.EncodeToString([]byte(e.token))
	ws := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-WebSocket-Protocol": {tok + ", v5.channel.k8s.io"}}
	plain := http.Header{"Sec-WebSocket-Protocol": {tok + ", v5.channel.k8s.io"}}
	assert.Equal(t, http.StatusUnauthorized, do(t, insecure, "GET", e.url+"/api/v1/namespaces/a/pods/p/exec", plain),
		"the subprotocol carries a token on a WebSocket only, as kube-apiserver reads it")
	assert.Equal(t, 200, do(t, insecure, "GET", e.url+"/api/v1/namespaces/a/pods/p/exec?command=ls", ws))
	// The one-time token in the header, another in the subprotocols: that
	// one does not go on either; nor does an empty protocol list.
	ws2 := ws.Clone()
	ws2["Authorization"] = []string{"Bearer " + e.token}
	ws2["Sec-WebSocket-Protocol"] = []string{bearerProtocol + "b3RoZXI, , v4.channel.k8s.io"}
	assert.Equal(t, 200, do(t, insecure, "GET", e.url+"/api/v1/namespaces/a/pods/p/attach", ws2))
	ws2["Sec-WebSocket-Protocol"] = []string{bearerProtocol + "b3RoZXI"}
	assert.Equal(t, 200, do(t, insecure, "GET", e.url+"/api/v1/namespaces/a/pods/p/attach", ws2))
	assert.Equal(t, 200, do(t, client(t, e), "GET", e.url+"/api/v1/namespaces/a/pods", nil))
	assert.Equal(t, []string{
		"GET /api/v1/namespaces/a/pods/p/exec Bearer " + upstreamToken + " v5.channel.k8s.io",
		"GET /api/v1/namespaces/a/pods/p/attach Bearer " + upstreamToken + " v4.channel.k8s.io",
		"GET /api/v1/namespaces/a/pods/p/attach Bearer " + upstreamToken + " ",
		"GET /api/v1/namespaces/a/pods Bearer " + upstreamToken + " ",
	}, u.requests())
	u.mu.Lock()
	assert.Equal(t, []string{"HTTP/1.1 1", "HTTP/1.1 1", "HTTP/1.1 0", "HTTP/2.0 0"}, u.protos,
		"upgrades over HTTP/1.1 (SPDY cannot go over HTTP/2), the others over HTTP/2; no empty protocol header")
	u.mu.Unlock()
	assert.Len(t, read(t, e, log), 4)
}

// TestEventsAreWholeLines: many requests at once, each event one whole
// JSON line.
func TestEventsAreWholeLines(t *testing.T) {
	u := newUpstream(t)
	e, log := start(t, u)
	c := client(t, e)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { do(t, c, "GET", fmt.Sprintf("%s/api/v1/namespaces/n%d/configmaps", e.url, i), nil) })
	}
	wg.Wait()
	require.NoError(t, e.Close())
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 40)
	for _, l := range lines {
		assert.True(t, json.Valid([]byte(l)), l)
	}
}

// TestAttacksOnTheRecording: what the command sends must not make the
// recording grant what the cluster refused, or reach the cluster otherwise
// than as the context (the attacks of the review of issue 49).
func TestAttacksOnTheRecording(t *testing.T) {
	t.Run("a request the command abandons before the refusal is not granted", func(t *testing.T) {
		u := newUpstream(t)
		e, log := start(t, u)
		c := client(t, e)
		c.Timeout = 50 * time.Millisecond
		_, err := c.Get(e.url + "/api/v1/namespaces/a/slow")
		require.Error(t, err)
		reqs := read(t, e, log)
		require.Len(t, reqs, 1)
		assert.Equal(t, auditlog.Undecided, reqs[0].Decision, "unanswered: %+v", reqs[0])
	})
	t.Run("an authorizer's 403 in protobuf is refused", func(t *testing.T) {
		u := newUpstream(t)
		e, log := start(t, u)
		assert.Equal(t, 403, do(t, client(t, e), "GET", e.url+"/api/v1/namespaces/a/secrets",
			http.Header{"Accept": {"application/vnd.kubernetes.protobuf"}}))
		assert.Equal(t, []auditlog.Request{{Verb: "list", Resource: "secrets", Namespace: "a", Code: 403,
			Decision: auditlog.Forbid}},
			read(t, e, log))
	})
	t.Run("the command may not impersonate when the context does", func(t *testing.T) {
		u := newUpstream(t)
		e, log := startWith(t, u, func(c *rest.Config) { c.Impersonate.UserName = "ci-bot" })
		c := client(t, e)
		for _, h := range []http.Header{{"Impersonate-Group": {"system:masters"}}, {"Impersonate-User": {"admin"}},
			{"impersonate-extra-scopes": {"x"}}, {"Impersonate-Uid": {"1"}}, {"Impersonate_User": {"admin"}}} {
			assert.Equal(t, http.StatusForbidden, do(t, c, "GET", e.url+"/api/v1/namespaces/a/pods", h), "%v", h)
		}
		assert.Equal(t, 200, do(t, c, "GET", e.url+"/api/v1/namespaces/a/pods", nil))
		assert.Len(t, u.requests(), 1, "only the request without impersonation reached the cluster")
		assert.Len(t, read(t, e, log), 1)
	})
	t.Run("dot segments, CONNECT and TRACE do not reach the cluster", func(t *testing.T) {
		u := newUpstream(t)
		e, log := start(t, u)
		c := client(t, e)
		for _, tt := range []struct {
			method, path string
			code         int
		}{
			{"GET", "/api/v1/namespaces/a/pods/../../../../v3/tokens", 400},
			{"GET", "/api/v1/namespaces/a/pods/%2e%2e/x", 400},
			{"TRACE", "/api/v1/namespaces/a/pods", 405},
		} {
			req, err := http.NewRequest(tt.method, e.url+tt.path, nil)
			require.NoError(t, err)
			req.URL.Opaque = tt.path // sent as written, not cleaned by the client
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.code, resp.StatusCode, tt.path)
		}
		assert.Empty(t, u.requests())
		assert.Empty(t, read(t, e, log))
	})
}
