package recorder

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/rolegen"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/attributes"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/proxy"
)

// answer is how the cluster answers a row's request.
type answer func(w http.ResponseWriter, r *http.Request)

func status(code int, contentType, body string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func jsonStatus(code int, msg string) answer {
	return status(code, "application/json", fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure",`+
		`"code":%d,"message":%q}`, code, msg))
}

var (
	ok200      = status(200, "application/json", `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	slowAnswer = answer(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
		jsonStatus(403, `User "ci" cannot delete resource "pods"`)(w, r)
	})
)

// auditEvent is a line of kube-apiserver's audit log (k8s.io/apiserver
// v0.37's shape: the decision annotation only past the authorizer).
func auditEvent(user, verb, group, resource, ns string, code int, decision string) string {
	ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "id-" +
		verb + resource, "stage": "ResponseComplete", "requestURI": "/x", "verb": verb,
		"user":           map[string]any{"username": user},
		"objectRef":      map[string]any{"apiGroup": group, "resource": resource, "namespace": ns},
		"responseStatus": map[string]any{"code": code}}
	if decision != "" {
		ev["annotations"] = map[string]string{"authorization.k8s.io/decision": decision}
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// TestGrantsOnlyWhatTheClusterAllowed is least-privilege's positive
// evidence rule over its three inputs (issue 56's attacks 1-4): a request
// is granted only when the cluster was seen to allow it. record drives a
// real endpoint in front of a cluster that answers as the row says;
// --from-audit reads kube-apiserver's audit lines as it writes them; the
// impersonating proxy's log is written by a real proxy. Each row names the
// cells that must not be granted; the control rows show the harness
// grants at all.
func TestGrantsOnlyWhatTheClusterAllowed(t *testing.T) {
	const sa = "system:serviceaccount:ci:robot"
	tests := []struct {
		name, source string
		// record and proxy: the cluster's answer and the request sent.
		cluster       answer
		method, path  string
		header        [][2]string
		abandon       bool
		auditLines    []string
		wantCode      int
		granted       []string
		neverGranted  []string
		wantUndecided int
	}{
		{name: "control: an allowed list is granted", source: "record", cluster: ok200, method: "GET",
			path: "/api/v1/namespaces/a/pods", wantCode: 200, granted: []string{"list pods in a"}},
		{name: "1. Connection: drops the command's Impersonate-* in transit", source: "record", cluster: ok200,
			method: "GET", path: "/api/v1/namespaces/a/pods", header: [][2]string{{"Impersonate-User", "admin"},
				{"Impersonate-Group", "system:masters"}, {"Connection", "close, Impersonate-User, Impersonate-Group"}},
			wantCode: 403, neverGranted: []string{"impersonate users", "impersonate groups", "list pods in a"}},
		{name: "2. a 1.36+ impersonation refusal (impersonate-on:)", source: "record",
			cluster: jsonStatus(403, `pods is forbidden: User "ci" cannot impersonate-on:user-info:list resource `+
				`"pods" in API group "" in the namespace "a"`),
			method: "GET", path: "/api/v1/namespaces/a/pods", header: [][2]string{{"Impersonate-User", "x"}},
			wantCode: 403, neverGranted: []string{"impersonate users", "list pods in a"}, wantUndecided: 1},
		{name: "2. an impersonation refusal in protobuf", source: "record",
			cluster: status(403, "application/vnd.kubernetes.protobuf", "k8s\x00\n\x0c\n\x02v1\x12\x06Status"),
			method:  "GET", path: "/api/v1/namespaces/a/pods", header: [][2]string{{"Impersonate-User", "x"},
				{"Accept", "application/vnd.kubernetes.protobuf"}},
			wantCode: 403, neverGranted: []string{"impersonate users"}, wantUndecided: 1},
		{name: "2. a gzip 403 of impersonation", source: "record",
			cluster: status(403, "application/json", "\x1f\x8b\x08\x00"), method: "GET",
			path: "/api/v1/namespaces/a/pods", header: [][2]string{{"Impersonate-User", "x"}},
			wantCode: 403, neverGranted: []string{"impersonate users"}, wantUndecided: 1},
		{name: "2. Impersonate-Group without a user is kube-apiserver's 400", source: "record",
			cluster: jsonStatus(400, "requested [{Group  system:masters}] without impersonating a user"),
			method:  "GET", path: "/api/v1/namespaces/a/pods", header: [][2]string{{"Impersonate-Group", "system:masters"}},
			wantCode: 400, neverGranted: []string{"impersonate groups", "list pods in a"}, wantUndecided: 1},
		{name: "4. priority and fairness' 429", source: "record", cluster: jsonStatus(429, "Too many requests"),
			method: "GET", path: "/api/v1/namespaces/a/secrets", wantCode: 429,
			neverGranted: []string{"list secrets in a"}, wantUndecided: 1},
		{name: "4. an authorizer's error (500)", source: "record", cluster: jsonStatus(500, "Internal error"),
			method: "DELETE", path: "/api/v1/namespaces/a/pods", wantCode: 500,
			neverGranted: []string{"deletecollection pods in a"}, wantUndecided: 1},
		{name: "control: an allowed create in the audit log", source: "audit", auditLines: []string{
			auditEvent(sa, "create", "", "configmaps", "ci", 201, "allow")}, granted: []string{"create configmaps in ci"}},
		{name: "3. an impersonation refused before the authorizer (403, no decision)", source: "audit",
			auditLines:   []string{auditEvent(sa, "create", "apps", "deployments", "kube-system", 403, "")},
			neverGranted: []string{"create deployments.apps in kube-system"}, wantUndecided: 1},
		{name: "3. priority and fairness' 429, no decision", source: "audit",
			auditLines:   []string{auditEvent(sa, "list", "", "secrets", "kube-system", 429, "")},
			neverGranted: []string{"list secrets in kube-system"}, wantUndecided: 1},
		{name: "3. an authorizer's error (500), no decision", source: "audit",
			auditLines:   []string{auditEvent(sa, "delete", "", "pods", "kube-system", 500, "")},
			neverGranted: []string{"delete pods in kube-system"}, wantUndecided: 1},
		{name: "control: the proxy's allowed list", source: "proxy", cluster: ok200, method: "GET",
			path: "/api/v1/namespaces/a/pods", wantCode: 200, granted: []string{"list pods in a"}},
		{name: "4. the cluster's 429 through the proxy", source: "proxy", cluster: jsonStatus(429, "Too many requests"),
			method: "GET", path: "/api/v1/namespaces/a/secrets", wantCode: 429,
			neverGranted: []string{"list secrets in a"}, wantUndecided: 1},
		{name: "4. the cluster's 503 through the proxy", source: "proxy", cluster: jsonStatus(503, "unavailable"),
			method: "DELETE", path: "/api/v1/namespaces/a/configmaps", wantCode: 503,
			neverGranted: []string{"deletecollection configmaps in a"}, wantUndecided: 1},
		{name: "4. the proxy's own 502 for a request its caller abandoned", source: "proxy", cluster: slowAnswer,
			method: "DELETE", path: "/api/v1/namespaces/a/pods/p", abandon: true,
			neverGranted: []string{"delete pods in a"}, wantUndecided: 1},
	}
	for _, tt := range tests {
		t.Run(tt.source+": "+tt.name, func(t *testing.T) {
			var log []byte
			ro := auditlog.ReadOptions{}
			switch tt.source {
			case "record":
				log = recordOne(t, tt.cluster, tt.method, tt.path, tt.header, tt.wantCode)
			case "audit":
				log, ro = []byte(strings.Join(tt.auditLines, "\n")), auditlog.ReadOptions{User: sa}
			case "proxy":
				log = proxyOne(t, tt.cluster, tt.method, tt.path, tt.abandon, tt.wantCode)
				ro = auditlog.ReadOptions{User: "alice@example.com"}
			}
			l, err := auditlog.Read(bytes.NewReader(log), ro)
			require.NoError(t, err)
			require.Zero(t, l.Skipped, "%s", log)
			p := rolegen.Generate(l.Requests, rolegen.PolicyOptions{})
			var used []string
			for _, c := range p.Used {
				used = append(used, c.String())
			}
			for _, want := range tt.granted {
				assert.Contains(t, used, want)
			}
			for _, never := range tt.neverGranted {
				assert.NotContains(t, used, never, "granted what the cluster was not seen to allow:\n%s", log)
			}
			if len(tt.granted) == 0 {
				assert.Empty(t, used, "%s", log)
				assert.Nil(t, p.ClusterRole)
				assert.Empty(t, p.Roles)
			}
			assert.Len(t, p.Undecided, tt.wantUndecided, "undecided requests are counted: %+v", p.Undecided)
		})
	}
}

// recordOne sends one request through a real endpoint to a cluster that
// answers as given (HTTP/1.1 written byte for byte, as an attacker would:
// client-go's HTTP/2 sends no Connection header) and returns the recording.
func recordOne(t *testing.T, cluster answer, method, path string, header [][2]string, wantCode int) []byte {
	t.Helper()
	u := newUpstream(t)
	u.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		cluster(w, r)
	})
	e, log := start(t, u)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(e.ca))
	conn, err := tls.Dial("tcp", strings.TrimPrefix(e.url, "https://"), &tls.Config{RootCAs: pool,
		NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	defer conn.Close()
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n", method, path,
		strings.TrimPrefix(e.url, "https://"), e.token)
	for _, h := range header {
		fmt.Fprintf(&req, "%s: %s\r\n", h[0], h[1])
	}
	req.WriteString("\r\n")
	_, err = io.WriteString(conn, req.String())
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, wantCode, resp.StatusCode)
	require.NoError(t, e.Close())
	return log.Bytes()
}

// proxyOne sends one request as alice through a real impersonating proxy
// to a cluster that answers as given (abandon: the caller gives up first)
// and returns the proxy's audit log.
func proxyOne(t *testing.T, cluster answer, method, path string, abandon bool, wantCode int) []byte {
	t.Helper()
	is, err := testissuer.Start()
	require.NoError(t, err)
	t.Cleanup(is.Close)
	cfg, algs := authn.LegacyConfig(authn.LegacyFlags{IssuerURL: is.URL, ClientIDs: []string{"kube"}, CA: is.CAPEM(),
		UsernameClaim: "email"})
	a, err := authn.New(context.Background(), authn.Options{Config: cfg, SigningAlgs: algs})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.WaitReady(ctx))
	up := httptest.NewServer(http.HandlerFunc(cluster))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	audit := &testkit.SyncBuffer{}
	h := &proxy.Handler{Upstream: u, Transport: http.DefaultTransport, Authenticator: a, Audit: audit}
	p := httptest.NewServer(h)
	t.Cleanup(p.Close)
	tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, map[string]any{"email": "alice@example.com",
		"email_verified": true}), testissuer.Valid)
	require.NoError(t, err)
	req, err := http.NewRequest(method, p.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	c := &http.Client{}
	if abandon {
		c.Timeout = 200 * time.Millisecond
	}
	resp, err := c.Do(req)
	if abandon {
		require.Error(t, err)
		require.Eventually(t, func() bool { return strings.Contains(audit.String(), `"code":502`) }, 5*time.Second,
			20*time.Millisecond, "the proxy writes its line once the upstream call is cut")
	} else {
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, wantCode, resp.StatusCode)
	}
	p.Close()
	return []byte(audit.String())
}

// TestAttributesAreTheOutgoingRequest: what is recorded is the request as
// it left the endpoint. With the endpoint's refusal set aside, a request
// whose Connection header drops its Impersonate-User in transit is
// recorded as the plain request the cluster got, not as an impersonation.
func TestAttributesAreTheOutgoingRequest(t *testing.T) {
	u := newUpstream(t)
	e, log := start(t, u)
	r := httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil)
	r.Header.Set("Impersonate-User", "admin")
	r.Header.Set("Connection", "Impersonate-User")
	st := &state{rec: e.rec, reqs: attributes.Of(r), uri: r.URL.RequestURI(), impersonated: "admin"}
	w := httptest.NewRecorder()
	e.h.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
	assert.Equal(t, 200, w.Code)
	assert.Equal(t, []auditlog.Request{{Verb: "list", Resource: "pods", Namespace: "a", Code: 200,
		Decision: auditlog.Allow}}, read(t, e, log), "the cluster got no impersonation: none is recorded")
}

// TestAttributesBehindAPrefixedUpstream: a context whose server has a path
// (a gateway's /k8s/clusters/ID) records the requests as the API reads
// them, not as non-resource paths under the prefix.
func TestAttributesBehindAPrefixedUpstream(t *testing.T) {
	u := newUpstream(t)
	e, log := startWith(t, u, func(c *rest.Config) { c.Host += "/k8s/clusters/c-1" })
	assert.Equal(t, 200, do(t, client(t, e), "GET", e.url+"/api/v1/namespaces/a/pods", nil))
	assert.Equal(t, []auditlog.Request{{Verb: "list", Resource: "pods", Namespace: "a", Code: 200,
		Decision: auditlog.Allow}}, read(t, e, log))
	assert.Equal(t, "GET /k8s/clusters/c-1/api/v1/namespaces/a/pods Bearer "+upstreamToken+" ", u.requests()[0])
}
