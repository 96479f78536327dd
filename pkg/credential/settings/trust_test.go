package settings

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

func parsed(t *testing.T, getenv func(string) string, args ...string) (*AuthOptions, error) {
	t.Helper()
	return parsedWithEntryEnv(t, getenv, nil, args...)
}

// parsedWithEntryEnv parses get-token's args as kubectl runs them: kubectl's
// environment is getenv's, and the exec entry's env adds entry on top.
func parsedWithEntryEnv(t *testing.T, getenv func(string) string, entry map[string]string, args ...string) (*AuthOptions, error) {
	t.Helper()
	o := NewAuthOptions()
	fs := pflag.NewFlagSet("get-token", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	o.FromExecEntry = true
	// kubectl's environment: what getenv knows of these names.
	kubectl := map[string]string{}
	for _, name := range []string{"HOME", "KUBERC", "KUBECTL_IMPERSONATE_CONFIG", "HTTPS_PROXY", "PATH"} {
		if v := getenv(name); v != "" {
			kubectl[name] = v
		}
	}
	o.KubectlEnv = func() (map[string]string, error) { return kubectl, nil }
	o.Environ = func() []string {
		var env []string
		for k, v := range kubectl {
			if _, ok := entry[k]; !ok {
				env = append(env, k+"="+v)
			}
		}
		for k, v := range entry {
			env = append(env, k+"="+v)
		}
		return append(env, "KUBERNETES_EXEC_INFO={}")
	}
	return o, o.Complete(func(name string) string {
		if v, ok := entry[name]; ok {
			return v
		}
		return getenv(name)
	}, func(string) {})
}

// TestCacheKeyHoldsWhatChangesTheToken: two settings that get different
// tokens, or tokens that may go to different servers, never share a cache
// entry (the attacks of issue 26: two password-grant robots, Auth0's
// audience for two clusters, a token fetched without TLS verification).
func TestCacheKeyHoldsWhatChangesTheToken(t *testing.T) {
	base := []string{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s", "--token-cache-dir=/tmp/x"}
	env := func(string) string { return "" }
	for _, tt := range []struct {
		name string
		a, b []string
	}{
		{"password grant: two robots", []string{"--grant-type=password", "--username=robot-a"}, []string{"--grant-type=password", "--username=robot-b"}},
		{"Auth0 audience per cluster", []string{"--oidc-auth-request-extra-params=audience=cluster-a"}, []string{"--oidc-auth-request-extra-params=audience=cluster-b"}},
		{"ADFS resource", []string{"--oidc-auth-request-extra-params=resource=a"}, nil},
		{"fetched without TLS verification", []string{"--insecure-skip-tls-verify"}, nil},
		{"another provider CA file", []string{"--oidc-certificate-authority=/etc/a.pem"}, nil},
		{"another provider CA data", []string{"--certificate-authority-data=QQ=="}, nil},
		{"a request header", []string{"--oidc-request-header=X-Tenant=a"}, []string{"--oidc-request-header=X-Tenant=b"}},
		{"allowed servers", []string{"--allowed-server=https://a.example:6443"}, nil},
		{"other allowed servers", []string{"--allowed-server=https://a.example:6443"}, []string{"--allowed-server=https://b.example:6443"}},
		{"a CA pin", []string{"--allowed-server=https://a.example:6443", "--allowed-server-certificate-authority=/etc/ca.pem"}, []string{"--allowed-server=https://a.example:6443"}},
		{"token exchange with allowed servers", []string{"--exchange=token-exchange", "--allowed-server=https://a.example:6443"}, []string{"--exchange=token-exchange"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parsed(t, env, append(append([]string{}, base...), tt.a...)...)
			require.NoError(t, err)
			b, err := parsed(t, env, append(append([]string{}, base...), tt.b...)...)
			require.NoError(t, err)
			assert.NotEqual(t, a.Key().ID(), b.Key().ID())
		})
	}
	t.Run("the same settings in another order: one entry", func(t *testing.T) {
		a, err := parsed(t, env, append(append([]string{}, base...), "--allowed-server=https://a.example:6443", "--allowed-server=https://B.example:6443/", "--oidc-auth-request-extra-params=x=1", "--oidc-auth-request-extra-params=y=2")...)
		require.NoError(t, err)
		b, err := parsed(t, env, append(append([]string{}, base...), "--oidc-auth-request-extra-params=y=2", "--allowed-server=https://b.example:6443,https://a.example:6443", "--oidc-auth-request-extra-params=x=1")...)
		require.NoError(t, err)
		assert.Equal(t, a.Key().ID(), b.Key().ID())
	})
}

// TestExecEntryLocks: which exec entries are locked, and what a locked one
// may set (docs/security.md).
func TestExecEntryLocks(t *testing.T) {
	dir := t.TempDir()
	profiles := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte(`profiles:
  guarded:
    oidc-issuer-url: https://id.example.com
    oidc-client-id: k8s
    allowedServers: [https://a.example:6443, https://b.example:6443]
  open:
    oidc-issuer-url: https://id.example.com
    oidc-client-id: k8s
`), 0o600))
	kuberc := filepath.Join(dir, "kuberc")
	require.NoError(t, os.WriteFile(kuberc, []byte("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- command: /usr/local/bin/kubectl-impersonate-get_token\n"), 0o600))
	other := filepath.Join(dir, "kuberc-other")
	require.NoError(t, os.WriteFile(other, []byte("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: kubelogin\n"), 0o600))
	envWith := func(kv map[string]string) func(string) string {
		return func(k string) string {
			if k == "KUBECTL_IMPERSONATE_CONFIG" {
				return profiles
			}
			if k == "HOME" {
				return dir // no .kube/kuberc there
			}
			return kv[k]
		}
	}
	none := envWith(nil)
	for _, tt := range []struct {
		name    string
		env     func(string) string
		args    []string
		wantErr string
		entry   map[string]string
	}{
		{"guarded profile: the entry sets HTTPS_PROXY and SSL_CERT_FILE", none, []string{"--profile=guarded"}, "$HTTPS_PROXY, $SSL_CERT_FILE", map[string]string{"HTTPS_PROXY": "http://evil:3128", "SSL_CERT_FILE": "/tmp/evil.pem"}},
		{"open profile: the entry sets DBUS_SESSION_BUS_ADDRESS", none, []string{"--profile=open"}, "$DBUS_SESSION_BUS_ADDRESS", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "tcp:host=evil.example,port=1"}},
		{"open profile: the entry sets BROWSER", none, []string{"--profile=open"}, "$BROWSER", map[string]string{"BROWSER": "sh -c 'touch /tmp/x'"}},
		{"open profile: the entry sets BASH_ENV and a bash function (the browser's shell scripts run them)", none, []string{"--profile=open"}, "$BASH_ENV, $BASH_FUNC_grep%%",
			map[string]string{"BASH_ENV": "$(id)", "BASH_FUNC_grep%%": "() { id; }"}},
		{"open profile: the entry sets DISPLAY", none, []string{"--profile=open"}, "$DISPLAY", map[string]string{"DISPLAY": "evil.example:0"}},
		{"open profile: the entry sets only the keyring hand-off", none, []string{"--profile=open"}, "", map[string]string{"KUBECTL_IMPERSONATE_KEYRING_UNAVAILABLE": "x"}},
		{"open profile: the entry sets HOME", none, []string{"--profile=open"}, "$HOME", map[string]string{"HOME": "/tmp/elsewhere"}},
		{"open profile: kubectl's own proxy is fine", envWith(map[string]string{"HTTPS_PROXY": "http://corp:3128"}), []string{"--profile=open"}, "", nil},
		{"unlocked: the entry's env is its own business", none, []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c"}, "", map[string]string{"HTTPS_PROXY": "http://p:3128"}},
		{"kuberc of kubectl's: the entry moves $KUBERC away", envWith(map[string]string{"KUBERC": kuberc}), []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c"}, "allowlists this plugin", map[string]string{"KUBERC": "/dev/null"}},
		{"unlocked: anything goes", none, []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c", "--browser-command=true"}, "", nil},
		{"profile: safe flags", none, []string{"--profile=open", "--oidc-extra-scope=groups", "--skip-open-browser"}, "", nil},
		{"profile: unsafe flag", none, []string{"--profile=open", "--token-cache-dir=/tmp/y"}, "it names your profile \"open\"", nil},
		{"profile: unsafe flag by its old name --audit-log", none, []string{"--profile=open", "--audit-log=/tmp/y"}, "--exchange-audit-log", nil},
		{"profile: unsafe flag by kubelogin's name --certificate-authority", none, []string{"--profile=open", "--certificate-authority=/tmp/y"}, "--oidc-certificate-authority", nil},
		{"open profile: overriding a safe value is fine", none, []string{"--profile=open", "--oidc-client-id=other"}, "", nil},
		{"guarded profile: overriding its values", none, []string{"--profile=guarded", "--oidc-client-id=other"}, "over the profile's", nil},
		{"guarded profile: narrowing", none, []string{"--profile=guarded", "--allowed-server=https://a.example:6443"}, "", nil},
		{"guarded profile: widening", none, []string{"--profile=guarded", "--allowed-server=https://c.example:6443"}, "may only narrow", nil},
		{"guarded profile: empty", none, []string{"--profile=guarded", "--allowed-server="}, "needs a server URL", nil},
		{"no profile: empty --allowed-server", none, []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c", "--allowed-server="}, "needs a server URL", nil},
		{"kuberc lists the plugin by command", envWith(map[string]string{"KUBERC": kuberc}), []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c"}, "allowlists this plugin", nil},
		{"kuberc lists other plugins only", envWith(map[string]string{"KUBERC": other}), []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c"}, "", nil},
		{"kuberc: cloudsigma env from the entry", envWith(map[string]string{"KUBERC": kuberc}),
			[]string{"--profile=open", "--exchange=cloudsigma"}, "$CLOUDSIGMA_OAUTH_URL", map[string]string{"CLOUDSIGMA_OAUTH_URL": "https://evil.example"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parsedWithEntryEnv(t, tt.env, tt.entry, tt.args...)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestKubectlEnvFailsClosed: kubectl's environment read but empty (env -i
// kubectl) is an empty environment, so every variable is the entry's; one
// that could not be read on Linux refuses a locked entry; where the
// platform does not read it, the entry's variables pass (docs/security.md).
func TestKubectlEnvFailsClosed(t *testing.T) {
	dir := t.TempDir()
	profiles := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte("profiles:\n  open:\n    oidc-issuer-url: https://id.example.com\n    oidc-client-id: k8s\n"), 0o600))
	environ := []string{"KUBECTL_IMPERSONATE_CONFIG=" + profiles, "HOME=" + dir, "HTTPS_PROXY=http://evil:3128", "KUBERNETES_EXEC_INFO={}"}
	for _, tt := range []struct {
		name    string
		kubectl func() (map[string]string, error)
		args    []string
		wantErr string
	}{
		{"empty: every variable is the entry's", func() (map[string]string, error) { return map[string]string{}, nil }, []string{"--profile=open"}, "$HOME, $HTTPS_PROXY, $KUBECTL_IMPERSONATE_CONFIG"},
		{"unreadable on Linux: refused", func() (map[string]string, error) { return nil, os.ErrPermission }, []string{"--profile=open"}, "cannot tell the exec entry's environment variables from your own"},
		{"unreadable, unlocked: nothing to refuse", func() (map[string]string, error) { return nil, os.ErrPermission }, []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c"}, ""},
		{"not read on this platform: passes", func() (map[string]string, error) { return nil, errEnvNotRead }, []string{"--profile=open"}, ""},
		{"kubectl's own variables", func() (map[string]string, error) {
			return map[string]string{"KUBECTL_IMPERSONATE_CONFIG": profiles, "HOME": dir, "HTTPS_PROXY": "http://evil:3128"}, nil
		}, []string{"--profile=open"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := NewAuthOptions()
			fs := pflag.NewFlagSet("get-token", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			o.FromExecEntry = true
			o.KubectlEnv = tt.kubectl
			o.Environ = func() []string { return environ }
			err := o.Complete(func(name string) string {
				for _, kv := range environ {
					if k, v, _ := strings.Cut(kv, "="); k == name {
						return v
					}
				}
				return ""
			}, func(string) {})
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestExecEntrySafeIsAllowlist: every flag AddFlags binds is either safe
// for an exec entry or unsafe, and the unsafe ones include what
// runs a program, touches a file or chooses a destination.
func TestExecEntrySafeIsAllowlist(t *testing.T) {
	o := NewAuthOptions()
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	var unsafe []string
	for name := range o.names {
		if !execEntrySafe[name] {
			unsafe = append(unsafe, name)
		}
	}
	for _, f := range []string{credspec.FlagBrowserCommand, credspec.FlagClientSecretFile, credspec.FlagPasswordFile, credspec.FlagAuditLog, credspec.FlagCacheDir, credspec.FlagIssuerURL,
		credspec.FlagCSOAuthURL, credspec.FlagCSAPIURL, credspec.FlagIPEndpoint, credspec.FlagSecureTokenEndpoint, credspec.FlagGoogleIssuer, credspec.FlagInsecure, credspec.FlagCAData, credspec.FlagCA,
		credspec.FlagPKCEMethod, credspec.FlagLocalCert, credspec.FlagLocalKey, credspec.FlagOpenAfterAuth, credspec.FlagIPEmulator, credspec.FlagCSLegacy, credspec.FlagClientSecret, credspec.FlagRequestHeader, credspec.FlagExchange} {
		assert.Contains(t, unsafe, f)
	}
	for name := range execEntrySafe {
		assert.True(t, o.names[name], "execEntrySafe names %q, which is not a flag", name)
	}
}

// TestKubercAsKubectlReadsIt: the lock reads the kuberc as kubectl does
// (a Preference in any document of the stream), and a $KUBERC an entry
// points at /dev/zero or a FIFO neither exhausts memory nor waits: it locks.
func TestKubercAsKubectlReadsIt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for _, tt := range []struct {
		name, path string
		wantLock   bool
	}{
		{"allowlist in the second document", write("multi", "kind: Other\nfoo: bar\n---\napiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- command: kubectl-impersonate\n"), true},
		{"AllowAll", write("all", "kind: Preference\ncredentialPluginPolicy: AllowAll\n"), false},
		{"missing file", filepath.Join(dir, "none"), false},
		{"/dev/zero", "/dev/zero", true},
		{"unparsable", write("bad", "credentialPluginPolicy: [\n"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := KubercLocks(func(k string) string {
				if k == "KUBERC" {
					return tt.path
				}
				return ""
			}, func() string { return "" }, "", dir)
			require.NoError(t, err)
			assert.Equal(t, tt.wantLock, got != "", got)
		})
	}
}

// TestExecEntryRefusalSays: the refusal names what the entry set, why it
// is locked and where the setting belongs, whole (issue 46: its parts
// were not asserted, and changing them passed).
func TestExecEntryRefusalSays(t *testing.T) {
	dir := t.TempDir()
	profiles := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte("profiles:\n  guarded:\n    oidc-issuer-url: https://id.example.com\n    oidc-client-id: k8s\n    allowedServers: [https://a.example:6443]\n  open:\n    oidc-issuer-url: https://id.example.com\n    oidc-client-id: k8s\n"), 0o600))
	locking := "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- command: kubectl-impersonate-get_token\n"
	kuberc := filepath.Join(dir, "kuberc")
	require.NoError(t, os.WriteFile(kuberc, []byte(locking), 0o600))
	kubectlHome := filepath.Join(dir, "kubectl-home")
	require.NoError(t, os.MkdirAll(filepath.Join(kubectlHome, ".kube"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(kubectlHome, ".kube", "kuberc"), []byte(locking), 0o600))
	env := func(kv map[string]string) func(string) string {
		return func(k string) string {
			switch k {
			case "KUBECTL_IMPERSONATE_CONFIG":
				return profiles
			case "HOME":
				if v, ok := kv[k]; ok {
					return v
				}
				return dir
			}
			return kv[k]
		}
	}
	const tail = ", or remove it from the exec entry (docs/security.md)"
	// Flags any entry may set (the issuer's are locked under a kuberc).
	plain := []string{"--oidc-extra-scope=groups"}
	for _, tt := range []struct {
		name  string
		env   func(string) string
		entry map[string]string
		args  []string
		want  string
	}{
		{"a profile: an unsafe flag", env(nil), nil, []string{"--profile=open", "--token-cache-dir=/tmp/y"},
			`the kubeconfig's exec entry sets --token-cache-dir, which only you may choose since it names your profile "open": put it in profile "open"` + tail},
		{"a guarded profile: an override", env(nil), nil, []string{"--profile=guarded", "--oidc-client-id=other"},
			`the kubeconfig's exec entry sets --oidc-client-id over the profile's, which only you may choose since profile "guarded" limits its tokens to allowedServers: put it in profile "guarded"` + tail},
		{"a guarded profile: an unsafe flag and an override", env(nil), nil, []string{"--profile=guarded", "--browser-command=true", "--oidc-client-id=other"},
			`the kubeconfig's exec entry sets --browser-command, --oidc-client-id over the profile's, which only you may choose since profile "guarded" limits its tokens to allowedServers: put it in profile "guarded"` + tail},
		{"an open profile: an override is the user's own business", env(nil), nil, []string{"--profile=open", "--oidc-client-id=other"}, ""},
		{"a guarded profile: the entry's environment", env(nil), map[string]string{"HTTPS_PROXY": "http://evil:3128"}, []string{"--profile=guarded"},
			`the kubeconfig's exec entry sets $HTTPS_PROXY, which only you may choose since profile "guarded" limits its tokens to allowedServers: put it in your own environment or profile "guarded"` + tail},
		{"the kuberc: an unsafe flag without a profile", env(map[string]string{"KUBERC": kuberc}), nil, append(plain, "--browser-command=true"),
			"the kubeconfig's exec entry sets --browser-command, which only you may choose since the kuberc " + kuberc + " allowlists this plugin: put it in a profile (docs/profiles.md; setup --profile writes one)" + tail},
		{"the kuberc: nothing unsafe", env(map[string]string{"KUBERC": kuberc}), nil, plain, ""},
		{"KUBERC=off locks nothing", env(map[string]string{"KUBERC": "off"}), nil, append(plain, "--browser-command=true"), ""},
		{"kubectl's own HOME holds the kuberc, the entry moves HOME", env(map[string]string{"HOME": kubectlHome}), map[string]string{"HOME": dir}, append(plain, "--browser-command=true"),
			"the kubeconfig's exec entry sets --browser-command, $HOME, which only you may choose since the kuberc " + filepath.Join(kubectlHome, ".kube", "kuberc") + " allowlists this plugin: put it in a profile (docs/profiles.md; setup --profile writes one)" + tail},
		{"the entry's HOME holds the kuberc", env(nil), map[string]string{"HOME": kubectlHome}, append(plain, "--browser-command=true"),
			"the kubeconfig's exec entry sets --browser-command, $HOME, which only you may choose since the kuberc " + filepath.Join(kubectlHome, ".kube", "kuberc") + " allowlists this plugin: put it in a profile (docs/profiles.md; setup --profile writes one)" + tail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parsedWithEntryEnv(t, tt.env, tt.entry, tt.args...)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

// TestKubercLocksReadsEveryKuberc: the kuberc that locks may be the
// plugin's $KUBERC or $HOME's, kubectl's own $KUBERC or $HOME's, or, when
// kubectl's own HOME is not known, the account's home's; KUBERC=off and
// empty values name none.
func TestKubercLocksReadsEveryKuberc(t *testing.T) {
	dir := t.TempDir()
	home := func(name string, locks bool) string {
		h := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Join(h, ".kube"), 0o700))
		if locks {
			require.NoError(t, os.WriteFile(filepath.Join(h, ".kube", "kuberc"), []byte("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: kubectl-impersonate\n"), 0o600))
		}
		return h
	}
	locking, plain, account := home("locking", true), home("plain", false), home("account", true)
	kuberc := filepath.Join(locking, ".kube", "kuberc")
	for _, tt := range []struct {
		name    string
		env     map[string]string
		account string
		more    []string
		want    string
	}{
		{name: "nothing anywhere", env: map[string]string{"HOME": plain}, more: []string{"", plain}},
		{name: "the plugin's $KUBERC", env: map[string]string{"KUBERC": kuberc, "HOME": plain}, more: []string{"", plain}, want: kuberc},
		{name: "the plugin's KUBERC=off", env: map[string]string{"KUBERC": "off", "HOME": plain}, more: []string{"", plain}},
		{name: "the plugin's $HOME", env: map[string]string{"HOME": locking}, more: []string{"", plain}, want: kuberc},
		{name: "kubectl's own $KUBERC", env: map[string]string{"HOME": plain}, more: []string{kuberc, plain}, want: kuberc},
		{name: "kubectl's own KUBERC=off", env: map[string]string{"HOME": plain}, more: []string{"off", plain}},
		{name: "kubectl's own $HOME", env: map[string]string{"HOME": plain}, more: []string{"", locking}, want: kuberc},
		{name: "kubectl's HOME known: the account's home is not read", env: map[string]string{"HOME": plain}, account: account, more: []string{"", plain}},
		{name: "kubectl's HOME empty: the account's home", env: map[string]string{"HOME": plain}, account: account, more: []string{"", ""}, want: filepath.Join(account, ".kube", "kuberc")},
		{name: "kubectl's environment not read: the account's home", env: map[string]string{"HOME": plain}, account: account, want: filepath.Join(account, ".kube", "kuberc")},
		{name: "kubectl's KUBERC alone known: the account's home", env: map[string]string{"HOME": plain}, account: account, more: []string{""}, want: filepath.Join(account, ".kube", "kuberc")},
		{name: "no account home", env: map[string]string{"HOME": plain}, account: "", more: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := KubercLocks(func(k string) string { return tt.env[k] }, func() string { return tt.account }, tt.more...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestAccountHome: the user database's home, as os/user reads it.
func TestAccountHome(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Skip("no user database entry")
	}
	assert.Equal(t, u.HomeDir, AccountHome())
}
