//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// completer runs kubectl's own plugin completion ("kubectl __complete
// impersonate WORDS..."), which finds kubectl_complete-impersonate on
// PATH beside the plugin; it returns the candidates (before cobra's
// directive line) and the run.
func completer(t *testing.T, p *person) func(words ...string) ([]string, result) {
	env := append([]string{}, p.env...)
	for i, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(st.ki) + ":" + strings.TrimPrefix(e, "PATH=")
		}
	}
	return func(words ...string) ([]string, result) {
		t.Helper()
		r := run(t, env, false, append([]string{st.kubectl, "__complete", "impersonate"}, words...)...)
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if line == "" || strings.HasPrefix(line, ":") {
				continue
			}
			out = append(out, strings.SplitN(line, "\t", 2)[0])
		}
		return out, r
	}
}

// TestCompletionThroughKubectl: through the pinned kubectl's plugin
// completion, every kind of value completes: commands, contexts, clusters
// and users from the kubeconfig, namespaces from the API server, resources
// as kubectl names them from kubectl's discovery cache, verbs, profiles,
// -o's formats, --grant-type's values. With a warm discovery cache a
// resource completion sends no request (kube-apiserver's audit log), with a
// cold one at most the two of aggregated discovery; with an expired token
// a completion answers within its bound, asks the provider nothing and
// opens no browser.
func TestCompletionThroughKubectl(t *testing.T) {
	api := st.api["legacy"]
	admin, err := st.adminKubeconfig(api)
	require.NoError(t, err)
	// kubectl's namespace completion lists namespaces: alice may, here.
	kubectlApply(t, admin, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-namespace-lister}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-alice-lists-namespaces}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-namespace-lister}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice@example.com}
`)
	t.Cleanup(func() {
		_ = adminKubectl(t, admin, "", time.Minute, "delete", "clusterrolebinding/e2e-alice-lists-namespaces", "clusterrole/e2e-namespace-lister")
	})
	alice := newPerson(t, "alice", api)
	r := alice.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	complete := completer(t, alice)
	user := "alice@example.com"
	ours := func() []string { return requestsOf(t, api, user, "kubectl-impersonate/") }

	profiles := filepath.Join(alice.home, ".config", "kubectl-impersonate", "config.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(profiles), 0o700))
	require.NoError(t, os.WriteFile(profiles, []byte("profiles:\n  tenant-a: {oidc-issuer-url: https://a.example.com, oidc-client-id: k}\n  tenant-b: {oidc-issuer-url: https://b.example.com, oidc-client-id: k}\n"), 0o600))

	for _, tt := range []struct {
		words []string
		want  []string
	}{
		{[]string{"wh"}, []string{"whoami", "who-can", "why"}},
		{[]string{"whoami", "--context", ""}, []string{"e2e"}},
		{[]string{"whoami", "--cluster", ""}, []string{"e2e"}},
		{[]string{"whoami", "--user", ""}, []string{"alice"}},
		{[]string{"why", "get", "pods", "-n", "team-"}, []string{"team-a"}},
		{[]string{"why", "get", "po"}, []string{"pods", "po", "podtemplates"}},
		{[]string{"why", "get", "pods/"}, []string{"pods/log", "pods/exec"}},
		{[]string{"who-can", "list", "deploy"}, []string{"deployments.apps", "deploy", "deployments"}},
		{[]string{"list", "configm"}, []string{"configmaps"}},
		{[]string{"access", "--resource=sec"}, []string{"secrets"}},
		{[]string{"why", "imperson"}, []string{"impersonate", "impersonate:user-info"}},
		{[]string{"access", "--verb=get,li"}, []string{"get,list"}},
		{[]string{"login", "--profile", "tenant"}, []string{"tenant-a", "tenant-b"}},
		{[]string{"whoami", "-o", ""}, []string{"json", "yaml", "jsonpath="}},
		{[]string{"login", "--grant-type", "d"}, []string{"device-code"}},
		{[]string{"login", "--context", ""}, []string{"e2e"}},
	} {
		got, r := complete(tt.words...)
		require.Equal(t, 0, r.code, "%v: %s", tt.words, r.stderr)
		for _, w := range tt.want {
			assert.Contains(t, got, w, "kubectl __complete impersonate %s", strings.Join(tt.words, " "))
		}
	}

	// Resources from kubectl's discovery cache: warm, no request; cold, at
	// most aggregated discovery's two.
	before := len(ours())
	_, r = complete("why", "get", "po")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, ours()[before:], "a warm discovery cache: no request")
	require.NoError(t, os.RemoveAll(filepath.Join(alice.home, ".kube", "cache", "discovery")))
	before = len(ours())
	got, r := complete("why", "get", "po")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, got, "pods")
	cold := ours()[before:]
	assert.LessOrEqual(t, len(cold), 2, "a cold cache: aggregated discovery only: %v", cold)
	for _, req := range cold {
		assert.Regexp(t, `^get /apis?(\?|$)`, req)
	}
}

// TestCompletionWithAnExpiredToken: a context whose cached token has
// expired completes within its bound, without a refresh at the provider
// or a browser (the cache on disk, so that its entry can be made to
// expire).
func TestCompletionWithAnExpiredToken(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	carol := newPerson(t, "alice", st.api["legacy"], "--token-cache-storage=disk", "--token-cache-dir="+cache)
	r := carol.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	entries, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	require.Len(t, entries, 1, "one cached entry")
	b, err := os.ReadFile(entries[0])
	require.NoError(t, err)
	e, err := tokencache.DecodeEntry(b)
	require.NoError(t, err)
	past := time.Now().Add(-time.Hour)
	e.IDTokenExpiry, e.AccessTokenExpiry = past, past
	b, err = e.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(entries[0], b, 0o600))

	complete := completer(t, carol)
	starts, refreshes, logins := carol.browserStarts(), st.proxy.Count("token:refresh_token"), st.proxy.Count("auth")
	got, r := complete("why", "get", "pods", "-n", "")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, got, "no namespace without a valid token")
	assert.Less(t, r.elapsed, 5*time.Second, "within the completion's bound (3 s) and kubectl's start")
	assert.Equal(t, starts, carol.browserStarts(), "no browser")
	assert.Equal(t, refreshes, st.proxy.Count("token:refresh_token"), "no refresh")
	assert.Equal(t, logins, st.proxy.Count("auth"), "no login")
	t.Logf("an expired token: %d candidates in %s", len(got), r.elapsed.Round(time.Millisecond))
}
