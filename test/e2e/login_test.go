//go:build e2e

// Logins as people do them: the browser, refresh, device code, password,
// a fixed redirect, kubeconfigs migrated from kubelogin, kuberc allowlists.

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
)

// Scenarios 1, 2, 3 and 9: browser login through kubectl, the cached second
// call, RBAC, in both API server authentication modes.
func TestBrowserLoginAndRBAC(t *testing.T) {
	for _, mode := range []string{"legacy", "structured"} {
		t.Run(mode, func(t *testing.T) {
			api := st.api[mode]
			alice := newPerson(t, "alice", api)
			auth0 := st.proxy.Count("auth")

			r := alice.kubectl("get", "pods", "-n", "team-a")
			require.Equal(t, 0, r.code, "kubectl get pods: %s", r.stderr)
			assert.Contains(t, r.stderr, "No resources found in team-a namespace")
			assert.Equal(t, 1, alice.browserStarts(), "Chromium logged in once")
			assert.Equal(t, auth0+1, st.proxy.Count("auth"))

			// 2: the next command uses the keyring, not Dex.
			tokens := st.proxy.Count("token:authorization_code") + st.proxy.Count("token:refresh_token")
			w := alice.whoami()
			assert.Equal(t, api.usernamePrefix+"alice@example.com", w.Status.UserInfo.Username)
			assert.Contains(t, w.Status.UserInfo.Groups, api.groupPrefix+"developers")
			assert.Equal(t, tokens, st.proxy.Count("token:authorization_code")+st.proxy.Count("token:refresh_token"), "no token request to Dex")
			assert.Equal(t, auth0+1, st.proxy.Count("auth"), "no new login")
			entries, chunks := alice.secretServiceEntries()
			assert.Equal(t, 1, entries, "the token is in the Secret Service")
			t.Logf("the cache entry takes %d Secret Service items", 1+chunks)
			assert.Empty(t, alice.diskEntries(), "nothing cached on disk")

			// 3: RBAC applies to the mapped identity.
			r = alice.kubectl("get", "pods", "-n", "team-b")
			assert.NotEqual(t, 0, r.code)
			assert.Contains(t, r.stderr, "Forbidden")
			assert.Contains(t, r.stderr, `User "`+api.usernamePrefix+`alice@example.com" cannot list resource "pods"`)

			// Inspection: the API server's view, and the prediction from the
			// token's claims with this API server's rules.
			r = alice.plugin(nil, "whoami", "--kubeconfig="+alice.kubeconfig, "-o", "json")
			require.Equal(t, 0, r.code, "whoami: %s", r.stderr)
			// The SelfSubjectReview, as kubectl auth whoami prints it; the
			// cached token in annotations.
			var me whoami
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &me))
			assert.Equal(t, api.usernamePrefix+"alice@example.com", me.Status.UserInfo.Username)
			assert.Contains(t, me.Status.UserInfo.Groups, api.groupPrefix+"developers")
			assert.Equal(t, st.issuer, me.Metadata.Annotations["kubectl-impersonate.io/token-issuer"])
			assert.NotEmpty(t, me.Metadata.Annotations["kubectl-impersonate.io/token-expiry"], "the token is cached")
			assert.NotRegexp(t, `eyJ[A-Za-z0-9_-]+\.eyJ`, r.stdout+r.stderr, "no token printed")

			// kube-apiserver's own flag names, as this API server runs them.
			rules := []string{"--oidc-issuer-url=" + st.issuer, "--oidc-certificate-authority=" + st.caFile, "--oidc-client-id=" + publicClient,
				"--oidc-username-claim=email", "--oidc-groups-claim=groups"}
			wrong := []string{"--oidc-username-claim=email", "--oidc-username-prefix=oidc:", "--oidc-groups-claim=groups"}
			if mode == "structured" {
				rules = []string{"--authentication-config=" + st.authConfig}
				wrong = []string{"--oidc-username-claim=email", "--oidc-groups-claim=groups"}
			}
			r = alice.plugin(nil, append([]string{"claims", "--compare", "--kubeconfig=" + alice.kubeconfig}, rules...)...)
			require.Equal(t, 0, r.code, "claims --compare: %s %s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, "verified against the trusted issuer's keys")
			assert.Regexp(t, `differences\s+none`, r.stdout)
			r = alice.plugin(nil, append([]string{"claims", "--compare", "--kubeconfig=" + alice.kubeconfig, "--skip-signature-check"}, wrong...)...)
			assert.Equal(t, 1, r.code, "a wrong prefix is flagged: %s", r.stdout)
			assert.Contains(t, r.stdout, "DIFFERENCE")
			assert.Contains(t, r.stderr, "the prediction differs from the API server")

			r = alice.plugin(nil, "groups", "--kubeconfig="+alice.kubeconfig)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Regexp(t, `developers\s+yes\s+`, r.stdout)

			bob := newPerson(t, "bob", api)
			r = bob.kubectl("get", "pods", "-n", "team-a")
			assert.NotEqual(t, 0, r.code)
			assert.Contains(t, r.stderr, `User "`+api.usernamePrefix+`bob@example.com" cannot list resource "pods"`)
			assert.Equal(t, 1, bob.browserStarts())
		})
	}
}

// Scenarios 4 and 8: 20 kubectl processes started together refresh the
// token once, with no browser: inside the renewal window (a third of the
// token's life before its expiry, at most 30 s: here 50 s / 3), and after
// the token has expired. The two run in parallel, as alice and bob. They
// are the plugin's and Dex's behavior (kubectl runs the plugin in every
// other test of each version): run with the first version only (the two
// wait 54 s together).
func TestRefreshInRenewalWindow(t *testing.T) {
	onFirstVersionOnly(t)
	t.Parallel()
	// Renewed from 50 - 50/3 = 33.3 s on: at 36 s the token is still valid.
	refreshesOnce(t, "alice", idTokenLifetime-idTokenLifetime/3+3*time.Second)
}

func TestRefreshAfterExpiry(t *testing.T) {
	onFirstVersionOnly(t)
	t.Parallel()
	refreshesOnce(t, "bob", idTokenLifetime+2*time.Second)
}

func refreshesOnce(t *testing.T, name string, after time.Duration) {
	// The tests share one Secret Service, and a cache entry is per
	// provider, client and scopes, not per person: bob asks for one scope
	// more, so that the two parallel tests never read each other's token.
	var extra []string
	if name == "bob" {
		extra = []string{"--oidc-extra-scope=profile"}
	}
	p := newPerson(t, name, st.api["structured"], extra...)
	ns := map[string]string{"alice": "team-a", "bob": "default"}[name]
	r := p.kubectl("get", "configmaps", "-n", ns)
	loggedIn := time.Now()
	require.Equal(t, 1, p.browserStarts(), r.stderr)
	// bob may read nothing: his calls end in Forbidden, with a token.
	ok := func(r result) bool { return r.code == 0 || strings.Contains(r.stderr, "Forbidden") }
	require.True(t, ok(r), r.stderr)

	time.Sleep(time.Until(loggedIn.Add(after)))
	refresh0, auth0 := st.proxy.Count("token:refresh_token"), st.proxy.Count("auth")
	const n = 20
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.kubectl("get", "configmaps", "-n", ns)
		}()
	}
	wg.Wait()
	for i, r := range results {
		assert.True(t, ok(r), "kubectl %d: %s", i, r.stderr)
		assert.NotContains(t, r.stderr, "Unauthorized", "kubectl %d never sent an expired token", i)
	}
	assert.Equal(t, refresh0+1, st.proxy.Count("token:refresh_token"), "one refresh at Dex for %d kubectl processes", n)
	assert.Equal(t, auth0, st.proxy.Count("auth"), "no new login")
	assert.Equal(t, 1, p.browserStarts(), "no browser")
}

// Scenario 5: interactiveMode Never and an empty cache: kubectl fails with
// our one line, and no browser starts.
func TestNonInteractiveEmptyCache(t *testing.T) {
	alice := newPerson(t, "alice", st.api["legacy"], "--exec-interactive-mode=Never")
	auth0 := st.proxy.Count("auth")
	r := alice.kubectl("get", "pods", "-n", "team-a")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "kubectl-impersonate: no valid cached token, and the authcode login needs a person, but this plugin runs non-interactively (kubectl's interactiveMode, or a client without a terminal): run 'kubectl impersonate login --context=e2e' in a terminal first")
	// kubectl runs the plugin several times per command (discovery retries);
	// every run says the same one line.
	var ours []string
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "kubectl-impersonate:") {
			ours = append(ours, line)
		}
	}
	require.NotEmpty(t, ours)
	for _, line := range ours {
		assert.Equal(t, ours[0], line)
	}
	assert.Equal(t, len(ours), strings.Count(r.stderr, `failed with exit code 1"`), "one line of ours per failed plugin run")
	assert.Zero(t, alice.browserStarts(), "no browser process")
	assert.Equal(t, auth0, st.proxy.Count("auth"))
}

// Scenario 6: the device authorization grant against Dex, with Chromium
// completing the device page, for the confidential client.
func TestDeviceCode(t *testing.T) {
	onFirstVersionOnly(t)
	alice := newPerson(t, "alice", st.api["structured"], "--grant-type=device-code",
		"--oidc-client-id="+confidentialClient, "--oidc-client-secret-file="+st.secretFile)
	device0 := st.proxy.Count("device")
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "kubectl get pods: %s", r.stderr)
	assert.Contains(t, r.stderr, "and enter the code")
	assert.Equal(t, device0+1, st.proxy.Count("device"))
	assert.GreaterOrEqual(t, st.proxy.Count("token:urn:ietf:params:oauth:grant-type:device_code"), 1)
	assert.Equal(t, 1, alice.browserStarts())

	kc, err := os.ReadFile(alice.kubeconfig)
	require.NoError(t, err)
	assert.NotContains(t, string(kc), "e2e-confidential-secret", "the secret stays out of kubeconfig")
}

// TestPasswordGrant: --grant-type=password against Dex's password
// connector, the password from $KUBECTL_IMPERSONATE_PASSWORD (never argv,
// never the kubeconfig): kubectl runs as bob without a browser.
func TestPasswordGrant(t *testing.T) {
	bob := newPerson(t, "bob", st.api["structured"], "--grant-type=password", "--username="+users["bob"].email,
		"--oidc-client-id="+confidentialClient, "--oidc-client-secret-file="+st.secretFile)
	bob.env = append(bob.env, "KUBECTL_IMPERSONATE_PASSWORD="+users["bob"].password)
	before := st.proxy.Count("token:password")
	r := bob.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.Equal(t, 0, r.code, "kubectl auth whoami: %s", r.stderr)
	assert.Equal(t, "oidc:"+users["bob"].email, r.stdout)
	assert.Equal(t, before+1, st.proxy.Count("token:password"), "one password grant")
	assert.Equal(t, 0, bob.browserStarts())
	kc, err := os.ReadFile(bob.kubeconfig)
	require.NoError(t, err)
	assert.NotContains(t, string(kc), users["bob"].password, "the password stays out of kubeconfig")

	// A wrong password: one line, and kubectl fails.
	bob.env = append(bob.env, "KUBECTL_IMPERSONATE_PASSWORD=wrong")
	require.Equal(t, 0, bob.plugin(nil, "logout", "--all").code)
	r = bob.kubectl("auth", "whoami")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "password grant: the identity provider answered 401 access_denied: Invalid username or password")
}

// TestFixedRedirectURL: Dex has the confidential client's redirect
// registered exactly (http://localhost:18000); --oidc-redirect-url serves
// the browser login there.
func TestFixedRedirectURL(t *testing.T) {
	bob := newPerson(t, "bob", st.api["structured"], "--oidc-client-id="+confidentialClient,
		"--oidc-client-secret-file="+st.secretFile, "--oidc-redirect-url=http://localhost:18000")
	r := bob.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.Equal(t, 0, r.code, "kubectl auth whoami: %s", r.stderr)
	assert.Equal(t, "oidc:"+users["bob"].email, r.stdout)
	assert.Contains(t, r.stderr, "redirect_uri=http%3A%2F%2Flocalhost%3A18000")
}

// TestSetupFromKubelogin: a kubeconfig written for int128/kubelogin
// (kubectl oidc-login get-token) against the stack's Dex is migrated with
// setup --from-kubelogin --write; kubectl then logs alice in through the
// plugin, as the same identity.
func TestSetupFromKubelogin(t *testing.T) {
	alice := newPerson(t, "alice", st.api["structured"])
	kubelogin := string(testkit.KubeloginKubeconfig(t, testkit.Kubelogin{Server: alice.api.url, CA: st.caFile,
		Issuer: st.issuer, ClientID: publicClient, Extra: []string{"--oidc-extra-scope=email", "--oidc-extra-scope=groups",
			"--certificate-authority=" + st.caFile, "--browser-command=" + st.browser, "--authentication-timeout-sec=60",
			"--token-cache-dir=/nonexistent"}}, nil))
	require.NoError(t, os.WriteFile(alice.kubeconfig, []byte(kubelogin), 0o640))
	require.NoError(t, os.Chmod(alice.kubeconfig, 0o640))

	r := alice.plugin(nil, "setup", "--from-kubelogin", "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "--oidc-certificate-authority="+st.caFile)
	assert.Contains(t, r.stdout, "note: --token-cache-dir: dropped")
	after, _ := os.ReadFile(alice.kubeconfig)
	assert.Equal(t, kubelogin, string(after), "without --write nothing changes")

	r = alice.plugin(nil, "setup", "--from-kubelogin", "--write", "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, r.code, r.stderr)
	fi, err := os.Stat(alice.kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	backups, _ := filepath.Glob(alice.kubeconfig + ".kubelogin-backup-*")
	require.Len(t, backups, 1)
	b, _ := os.ReadFile(backups[0])
	assert.Equal(t, kubelogin, string(b))

	r = alice.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.Equal(t, 0, r.code, "kubectl after the migration: %s", r.stderr)
	assert.Equal(t, "oidc:"+users["alice"].email, r.stdout)
	assert.Equal(t, 1, alice.browserStarts())
}

// kubectl >= 1.35 reads a kuberc whose credential plugin policy may list
// the plugins it runs: a list without this plugin stops kubectl, whoami
// says why and how to fix it, and "setup --write-kuberc" fixes it without
// touching the user's other preferences.
func TestKubercAllowlist(t *testing.T) {
	alice := newPerson(t, "alice", st.api["structured"])
	kuberc := filepath.Join(alice.home, ".kube", "kuberc")
	require.NoError(t, os.WriteFile(kuberc, []byte(`apiVersion: kubectl.config.k8s.io/v1beta1
kind: Preference
aliases:
- name: podsa
  command: get
  prependArgs: [pods]
  appendArgs: [-n, team-a]
credentialPluginPolicy: Allowlist
credentialPluginAllowlist:
- name: /bin/true
`), 0o640))
	require.NoError(t, os.Chmod(kuberc, 0o640))
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.NotEqual(t, 0, r.code, "kubectl runs no plugin outside the allowlist")
	assert.Contains(t, r.stderr, "is not permitted by the credential plugin allowlist")
	assert.Equal(t, 0, alice.browserStarts(), "the plugin never ran")

	// whoami's own client applies the kuberc as kubectl does (issue 46):
	// the plugin does not run, and whoami says why and how to fix it.
	r = run(t, alice.env, true, st.ki, "whoami", "--kubeconfig="+alice.kubeconfig)
	require.NotEqual(t, 0, r.code, r.stderr)
	assert.Equal(t, 0, alice.browserStarts(), "the plugin never ran")
	assert.Contains(t, r.stderr, "kubectl refuses to run")
	assert.Contains(t, r.stderr, "setup --write-kuberc")
	assert.Contains(t, r.stderr, "is not permitted by the credential plugin allowlist")

	r = alice.plugin(nil, append(alice.setup, "--write-kuberc")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Added ")
	fi, err := os.Stat(kuberc)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the kuberc keeps its mode")

	r = run(t, append(append([]string{}, alice.env...), "KUBECONFIG="+alice.kubeconfig), true, st.kubectl, "podsa")
	require.Equal(t, 0, r.code, "the alias (kept) runs and the plugin is allowed: %s", r.stderr)
	r = alice.plugin(nil, "whoami", "--kubeconfig="+alice.kubeconfig)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "kubectl refuses to run")
	r = alice.plugin(nil, append(alice.setup, "--write-kuberc")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "already allows")
}
