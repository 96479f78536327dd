//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requestsOf are the requests kube-apiserver's audit log holds from user
// with a user agent starting with ua, each "METHOD URI" (one per request:
// the ResponseComplete stage).
func requestsOf(t *testing.T, api *apiserver, user, ua string) []string {
	t.Helper()
	var out []string
	for _, e := range readAudit(t, api.auditLog) {
		if e.Stage == "ResponseComplete" && e.User.Username == user && strings.HasPrefix(e.UserAgent, ua) {
			out = append(out, e.Verb+" "+e.RequestURI)
		}
	}
	return out
}

// TestDiscoveryAsKubectl: inspection discovers the API as kubectl does,
// aggregated discovery into kubectl's disk cache, counted in
// kube-apiserver's audit log: a cold access -n NS sends 3 requests (/api,
// /apis, the rules review), a warm one 1; kubectl then finds its cache
// warm (no discovery request), and a cache kubectl wrote serves the plugin.
func TestDiscoveryAsKubectl(t *testing.T) {
	api := st.api["legacy"]
	alice := newPerson(t, "alice", api)
	r := alice.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	user := "alice@example.com"
	cache := filepath.Join(alice.home, ".kube", "cache", "discovery")

	ours := func() []string { return requestsOf(t, api, user, "kubectl-impersonate/") }
	kubectls := func() []string { return requestsOf(t, api, user, "kubectl/") }

	before := len(ours())
	r = alice.plugin(nil, "access", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	cold := ours()[before:]
	t.Logf("cold access -n team-a: %v", cold)
	assert.Len(t, cold, 3, "cold: /api, /apis (aggregated) and the rules review: %v", cold)
	_, err := os.Stat(cache)
	require.NoError(t, err, "kubectl's discovery cache was written")

	before = len(ours())
	r = alice.plugin(nil, "access", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	warm := ours()[before:]
	assert.Len(t, warm, 1, "warm: the rules review only: %v", warm)
	assert.Contains(t, warm[0], "selfsubjectrulesreviews")

	// kubectl reads the cache the plugin wrote: no discovery request.
	before = len(kubectls())
	r = alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	got := kubectls()[before:]
	assert.Equal(t, []string{"list /api/v1/namespaces/team-a/pods?limit=500"}, got, "kubectl's cache was warm")

	// A cache kubectl wrote serves the plugin.
	bob := newPerson(t, "alice", api)
	r = bob.kubectl("auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	r = bob.kubectl("api-resources", "-o", "name")
	require.Equal(t, 0, r.code, r.stderr)
	before = len(ours())
	r = bob.plugin(nil, "access", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, ours()[before:], 1, "the plugin found kubectl's cache warm: %v", ours()[before:])

	// A resource the cache does not know (a CRD installed since) is looked
	// up again on the server, as kubectl does.
	before = len(ours())
	r = bob.plugin(nil, "why", "get", "no-such-things", "-n", "team-a")
	assert.Contains(t, r.stderr, "no-such-things", "the warning names it")
	again := ours()[before:]
	assert.Contains(t, strings.Join(again, " "), "get /apis", "a miss asks discovery again: %v", again)
}
