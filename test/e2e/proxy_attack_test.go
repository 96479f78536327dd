//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	Verb       string   `json:"verb"`
	RequestURI string   `json:"requestURI"`
	UserAgent  string   `json:"userAgent"`
	SourceIPs  []string `json:"sourceIPs"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string              `json:"username"`
		Groups   []string            `json:"groups"`
		Extra    map[string][]string `json:"extra"`
	} `json:"impersonatedUser"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// AuthenticationMetadata names the constrained impersonation verb that
	// allowed an impersonated request (Kubernetes 1.35+).
	AuthenticationMetadata *struct {
		ImpersonationConstraint string `json:"impersonationConstraint"`
	} `json:"authenticationMetadata"`
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
	is, authConfig := attackIssuer(t)
	proxyURL := startProxyWith(t, "privileged", adminToken, "", "--authentication-config="+authConfig)
	prefixed := startProxyWith(t, "prefixed", adminToken, "/c-1", "--authentication-config="+authConfig)

	// The table pkg/server/proxy's TestProxyAttacks drives in-process: here each
	// forwarded request gets kube-apiserver's own answer for alice.
	attacks, err := proxyattacks.Table(aliceMinter(is), "e2e-admin")
	require.NoError(t, err)
	require.Len(t, attacks, 139, "docs/testing.md's count of the attacks")
	uas := sendAttacks(t, api, "ki-attack", attacks, func(a proxyattacks.Attack) string {
		if a.Prefixed {
			return prefixed
		}
		return proxyURL
	}, func(a proxyattacks.Attack) bool { return a.Path == proxyattacks.AllowedPath }) // alice's RBAC
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

// sendAttacks sends each attack to base(a) with a user agent of its own
// (prefix/i, returned), and asserts its status: the proxy's for a refused
// one, kube-apiserver's for a forwarded one (200 where allowed(a), else
// 403). Then it waits (bounded) for the control attacks[1]'s audit event:
// kube-apiserver writes each event as the request completes.
func sendAttacks(t *testing.T, api *apiserver, prefix string, attacks []proxyattacks.Attack, base func(proxyattacks.Attack) string, allowed func(proxyattacks.Attack) bool) []string {
	t.Helper()
	tlsConfig := &tls.Config{RootCAs: caPool()}
	uas := make([]string, len(attacks))
	for i, a := range attacks {
		uas[i] = fmt.Sprintf("%s/%d", prefix, i)
		code, err := proxyattacks.Send(base(a), tlsConfig, a, [2]string{"User-Agent", uas[i]})
		require.NoError(t, err, a.Name)
		want := a.Want
		if a.Forwarded {
			want = map[bool]int{true: 200, false: 403}[allowed(a)]
		}
		assert.Equal(t, want, code, "%s: status", a.Name)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && len(auditEvents(t, api.auditLog, uas[1])) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	return uas
}

// attackIssuer starts a test issuer and writes the attack tables' mapping:
// the most exposed one, no prefixes, so a claim could name system:
// identities; uid and extra mapped.
func attackIssuer(t *testing.T) (*testissuer.Issuer, string) {
	t.Helper()
	is, err := testissuer.Start()
	require.NoError(t, err)
	t.Cleanup(is.Close)
	authConfig := filepath.Join(t.TempDir(), "authn.yaml")
	require.NoError(t, os.WriteFile(authConfig, []byte(is.AuthenticationConfig(testissuer.UnprefixedMappings)), 0o600))
	return is, authConfig
}

// aliceMinter mints alice's tokens (group developers) at is.
func aliceMinter(is *testissuer.Issuer) proxyattacks.Minter {
	return func(extra map[string]any, tamper testissuer.Tamper) (string, error) {
		claims := is.Claims("alice-uid", "kube", time.Hour, map[string]any{"email": "alice@example.com", "email_verified": true, "groups": []any{"developers"}})
		for k, v := range extra {
			claims[k] = v
		}
		return is.Mint(claims, tamper)
	}
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

// TestProxyCallerImpersonation: kubectl --as through a proxy started with
// --allow-caller-impersonation, whose own credential (e2e-proxy) may only
// impersonate and ask SubjectAccessReviews. The caller-impersonation attack
// table runs against it (alice may impersonate proxyattacks.Impersonable
// alone, by a ClusterRoleBinding): each status asserted, and
// kube-apiserver's audit log shows refused requests never arrived and
// forwarded ones arrived as the impersonated user with alice under the
// original-user extra. Then a person: alice's kubectl, logged in through
// Dex, runs kubectl --as=bob through the proxy.
func TestProxyCallerImpersonation(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	kubectlApply(t, admin, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-bob}
rules:
- {apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: [%q]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-impersonates-bob}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-bob}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice@example.com}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: proxy:alice@example.com}
`, proxyattacks.Impersonable))
	is, authConfig := attackIssuer(t)
	proxyURL := startProxyWith(t, "callers", proxyToken, "", "--authentication-config="+authConfig, "--allow-caller-impersonation")
	attacks, err := proxyattacks.CallerImpersonationTable(aliceMinter(is))
	require.NoError(t, err)
	// kube-apiserver's answer: alice's group may list team-a's pods; bob
	// has no RBAC at all.
	uas := sendAttacks(t, api, "ki-caller-attack", attacks, func(proxyattacks.Attack) string { return proxyURL },
		func(a proxyattacks.Attack) bool { return a.Path == proxyattacks.AllowedPath && a.As == "" })
	forwarded := 0
	for i, a := range attacks {
		events := auditEvents(t, api.auditLog, uas[i])
		if !a.Forwarded {
			assert.Empty(t, events, "%s: refused by the proxy, never reached kube-apiserver", a.Name)
			continue
		}
		forwarded++
		require.NotEmpty(t, events, a.Name)
		for _, e := range events {
			assert.Equal(t, "e2e-proxy", e.User.Username, a.Name)
			require.NotNil(t, e.ImpersonatedUser, a.Name)
			if a.As == "" {
				assert.Equal(t, "alice@example.com", e.ImpersonatedUser.Username, a.Name)
				continue
			}
			assert.Equal(t, a.As, e.ImpersonatedUser.Username, a.Name)
			assert.Equal(t, []string{"alice@example.com"}, e.ImpersonatedUser.Extra["kubectl-impersonate.io/original-user"], "%s: the caller, in the audit log", a.Name)
			assert.NotContains(t, e.ImpersonatedUser.Groups, "system:masters", a.Name)
		}
	}
	t.Logf("%d caller-impersonation attacks, %d forwarded (%d as %s), the others refused before kube-apiserver", len(attacks), forwarded, forwarded-1, proxyattacks.Impersonable)

	// A person: kubectl --as through the proxy, after a browser login.
	dex := startProxyWith(t, "callers-dex", proxyToken, "",
		"--oidc-issuer-url="+st.issuer, "--oidc-certificate-authority="+st.caFile, "--oidc-client-id="+publicClient,
		"--oidc-username-claim=email", "--oidc-username-prefix=proxy:", "--oidc-groups-claim=groups", "--allow-caller-impersonation")
	alice := newPerson(t, "alice", &apiserver{mode: "proxy", url: dex})
	r := alice.kubectl("--as="+proxyattacks.Impersonable, "auth", "whoami", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var review struct {
		Status struct {
			UserInfo struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &review), r.stdout)
	assert.Equal(t, proxyattacks.Impersonable, review.Status.UserInfo.Username, "kubectl --as through the proxy")
	assert.Equal(t, []string{"proxy:alice@example.com"}, review.Status.UserInfo.Extra["kubectl-impersonate.io/original-user"])
	r = alice.kubectl("--as=carol@example.com", "get", "pods", "-n", "team-a")
	assert.NotEqual(t, 0, r.code, "alice may not impersonate carol")
	assert.Contains(t, r.stderr, "Forbidden", r.stderr)
	audit, err := os.ReadFile(filepath.Join(st.logs, "TestProxyCallerImpersonation-callers-dex-audit.log"))
	require.NoError(t, err)
	assert.Contains(t, string(audit), `"reason":"impersonation refused: `, "the proxy's audit line gives the reason")
	assert.Contains(t, string(audit), `User \"proxy:alice@example.com\" cannot impersonate`, "kube-apiserver's reason: the classic verb, or the constrained filter's first question")
	r = alice.kubectl("--as="+proxyattacks.Impersonable, "--as-group=system:masters", "get", "secrets", "-n", "kube-system")
	assert.NotEqual(t, 0, r.code, "nor add system:masters")
}

// TestProxyCallerImpersonationAsTheCluster: kubectl --as through the proxy
// succeeds or fails exactly as kubectl --as against the API server, for a
// caller with classic rights (the impersonate verb) and one with
// constrained rights (impersonate:user-info and impersonate-on:user-info:
// VERB, Kubernetes 1.36+): the same people, logged in through Dex, the
// same kubectl commands, once against kube-apiserver (which trusts Dex with
// the proxy's mapping) and once through the proxy (--caller-impersonation-
// mode=auto). A refusal through the proxy reads as kube-apiserver's reason,
// never "unknown".
func TestProxyCallerImpersonationAsTheCluster(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	kubectlApply(t, admin, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: carol-lists-pods, namespace: team-a}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-lists-pods, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: carol-lists-pods}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol@example.com}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: classic-impersonates-carol}
rules:
- {apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: [carol@example.com]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-classic-impersonates-carol}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: classic-impersonates-carol}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice@example.com}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: constrained-impersonates-carol}
rules:
- {apiGroups: [authentication.k8s.io], resources: [users], verbs: ["impersonate:user-info"], resourceNames: [carol@example.com]}
- {apiGroups: [""], resources: [pods], verbs: ["impersonate-on:user-info:list", "impersonate-on:user-info:get"]}
- {nonResourceURLs: ["*"], verbs: ["impersonate-on:user-info:get"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-constrained-impersonates-carol}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: constrained-impersonates-carol}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob@example.com}]
`)
	minor, err := strconv.Atoi(strings.TrimPrefix(os.Getenv("KI_E2E_K8S"), "1."))
	require.NoError(t, err, "KI_E2E_K8S")
	constrainedOn := minor >= 36 // the ConstrainedImpersonation gate's default
	proxyURL := startProxyWith(t, "as-cluster", proxyToken, "",
		"--oidc-issuer-url="+st.issuer, "--oidc-certificate-authority="+st.caFile, "--oidc-client-id="+publicClient,
		"--oidc-username-claim=email", "--oidc-groups-claim=groups", "--allow-caller-impersonation")
	type kubectlCase struct {
		args   []string
		wantOK bool // on this Kubernetes version, against the API server
		// refused is what kubectl prints of a refusal through the proxy.
		refused string
	}
	const forbidden = "Forbidden"
	for _, caller := range []struct {
		name, rights string
		cases        []kubectlCase
	}{
		{"alice", "classic", []kubectlCase{
			{[]string{"--as=carol@example.com", "get", "pods", "-n", "team-a"}, true, forbidden},
			{[]string{"--as=carol@example.com", "get", "configmaps", "-n", "team-a"}, false, forbidden}, // impersonated; carol may not
			{[]string{"--as=dave@example.com", "get", "pods", "-n", "team-a"}, false, forbidden},
			{[]string{"--as=carol@example.com", "--as-group=admins", "get", "pods", "-n", "team-a"}, false, forbidden},
		}},
		{"bob", "constrained", []kubectlCase{
			{[]string{"--as=carol@example.com", "get", "pods", "-n", "team-a"}, constrainedOn, forbidden},
			{[]string{"--as=carol@example.com", "get", "configmaps", "-n", "team-a"}, false, forbidden}, // no impersonate-on:user-info:list configmaps
			// nor create selfsubjectreviews: kubectl's own words for a 403 there
			{[]string{"--as=carol@example.com", "auth", "whoami"}, false, "you do not have permission to call it"},
			{[]string{"--as=dave@example.com", "get", "pods", "-n", "team-a"}, false, forbidden},
		}},
	} {
		t.Run(caller.rights, func(t *testing.T) {
			direct := newPerson(t, caller.name, api)
			through := newPerson(t, caller.name, &apiserver{mode: "proxy", url: proxyURL})
			for _, c := range caller.cases {
				d, p := direct.kubectl(c.args...), through.kubectl(c.args...)
				what := strings.Join(c.args, " ")
				assert.Equal(t, c.wantOK, d.code == 0, "%s against the API server: %s", what, d.stderr)
				assert.Equal(t, d.code == 0, p.code == 0, "%s: through the proxy as against the API server (direct: %s; proxy: %s)", what, d.stderr, p.stderr)
				if p.code != 0 {
					assert.Contains(t, p.stderr, c.refused, what)
					assert.NotContains(t, p.stderr, "unknown", "%s: kubectl reads the reason: %s", what, p.stderr)
				}
				t.Logf("%s as %s (%s rights): direct exit %d, proxy exit %d; proxy says %s", what, caller.name, caller.rights, d.code, p.code, strings.TrimSpace(p.stderr))
			}
		})
	}
}
