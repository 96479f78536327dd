//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

type sessionRow struct {
	Context       string `json:"context"`
	Identity      string `json:"identity"`
	LoggedIn      bool   `json:"loggedIn"`
	Valid         bool   `json:"valid"`
	RefreshToken  bool   `json:"refreshToken"`
	Storage       string `json:"storage"`
	AllowedServer string `json:"allowedServer"`
	Check         *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
		Error    string   `json:"error"`
	} `json:"check"`
	SharedWith []string `json:"sharedWith"`
}

func (p *person) sessions(args ...string) map[string]sessionRow {
	p.t.Helper()
	r := p.plugin(nil, append([]string{"status", "-o", "json"}, args...)...)
	require.Equal(p.t, 0, r.code, "status: %s", r.stderr)
	var out struct {
		Sessions []sessionRow `json:"sessions"`
	}
	require.NoError(p.t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	rows := map[string]sessionRow{}
	for _, s := range out.Sessions {
		rows[s.Context] = s
	}
	return rows
}

// TestSessionsOnThreeClusters: one kubeconfig, the stack's three
// kube-apiservers (legacy --oidc-* flags, a structured
// AuthenticationConfiguration, and the webhook-authorizer chain), two Dex
// accounts: alice (browser login) on two contexts and bob (password grant,
// the confidential client) on the third. status reads who is logged in
// from the keyring; --check's answers equal kubectl auth whoami's (the
// clusters' SelfSubjectReview through kubectl and the exec plugin);
// logout --context of bob's context says Dex cannot revoke, deletes bob's
// token only, and alice's contexts keep working without a login.
func TestSessionsOnThreeClusters(t *testing.T) {
	alice := newPerson(t, "alice", st.api["legacy"])
	bobArgs := []string{"--grant-type=password", "--username=" + users["bob"].email, "--oidc-client-id=" + confidentialClient,
		"--oidc-client-secret-file=" + st.secretFile, "--oidc-issuer-url=" + st.issuer, "--oidc-certificate-authority=" + st.caFile,
		"--oidc-extra-scope=email", "--oidc-extra-scope=groups", "--oidc-extra-scope=offline_access"}

	cfg, err := clientcmd.LoadFromFile(alice.kubeconfig)
	require.NoError(t, err)
	for _, mode := range []string{"legacy", "structured", "webhook"} {
		cfg.Clusters[mode] = &clientcmdapi.Cluster{Server: st.api[mode].url, CertificateAuthority: st.caFile}
		cfg.Contexts[mode] = &clientcmdapi.Context{Cluster: mode, AuthInfo: "alice"}
	}
	require.NoError(t, clientcmd.WriteToFile(*cfg, alice.kubeconfig))
	r := alice.plugin(nil, append([]string{"setup", "--write", "--kubeconfig=" + alice.kubeconfig, "--user=bob", "--context=webhook"}, bobArgs...)...)
	require.Equal(t, 0, r.code, "setup for bob: %s", r.stderr)

	rows := alice.sessions()
	require.Len(t, rows, 4, "e2e, legacy, structured, webhook")
	for name, row := range rows {
		assert.False(t, row.LoggedIn, name)
	}

	// alice logs in once (Chromium through Dex), bob with his password.
	r = alice.kubectl("--context=legacy", "auth", "whoami")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, alice.browserStarts())
	r = alice.plugin([]string{"KUBECTL_IMPERSONATE_PASSWORD=" + users["bob"].password}, "login", "--context=webhook")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Logged in as bob@example.com")

	rows = alice.sessions("--check")
	// The keyring, unless an earlier test left it locked: then the disk.
	storage := "keyring"
	if len(alice.diskEntries()) > 0 {
		storage = "disk"
	}
	want := map[string]string{"e2e": "alice@example.com", "legacy": "alice@example.com", "structured": "oidc:alice@example.com", "webhook": "oidc:bob@example.com"}
	for name, username := range want {
		row := rows[name]
		assert.True(t, row.LoggedIn && row.Valid && row.RefreshToken, "%s: %+v", name, row)
		assert.Equal(t, strings.TrimPrefix(username, "oidc:"), row.Identity, name)
		assert.Equal(t, storage, row.Storage, name)
		require.NotNil(t, row.Check, name)
		assert.Empty(t, row.Check.Error, name)
		// The oracle: what the cluster tells kubectl.
		k := alice.kubectl("--context="+name, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		require.Equal(t, 0, k.code, "%s: %s", name, k.stderr)
		assert.Equal(t, k.stdout, row.Check.Username, "%s: status --check says what kubectl auth whoami says", name)
		assert.Equal(t, username, row.Check.Username, name)
	}
	assert.ElementsMatch(t, []string{"e2e", "structured"}, rows["legacy"].SharedWith)
	assert.Empty(t, rows["webhook"].SharedWith)
	assert.Equal(t, 1, alice.browserStarts(), "status and kubectl used the cache")

	auth0 := st.proxy.Count("auth")
	r = alice.plugin(nil, "logout", "--context=webhook")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Logged bob@example.com out of context webhook (client \""+confidentialClient+"\"")
	assert.Contains(t, r.stdout, "the provider has no revocation endpoint, so its refresh token stays valid there until it expires", "Dex: no RFC 7009")

	rows = alice.sessions()
	assert.False(t, rows["webhook"].LoggedIn, "bob's token is gone")
	for _, name := range []string{"e2e", "legacy", "structured"} {
		assert.True(t, rows[name].LoggedIn, "%s: alice's token stays", name)
		k := alice.kubectl("--context="+name, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		assert.Equal(t, 0, k.code, "%s: %s", name, k.stderr)
	}
	assert.Equal(t, 1, alice.browserStarts(), "alice's contexts need no login")
	assert.Equal(t, auth0, st.proxy.Count("auth"))
}
