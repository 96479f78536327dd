package settings

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parsed(t *testing.T, getenv func(string) string, args ...string) (*AuthOptions, error) {
	t.Helper()
	o := NewAuthOptions()
	fs := pflag.NewFlagSet("get-token", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	o.FromExecEntry = true
	return o, o.Complete(getenv, func(string) {})
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
	}{
		{"unlocked: anything goes", none, []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c", "--browser-command=true"}, ""},
		{"profile: safe flags", none, []string{"--profile=open", "--oidc-extra-scope=groups", "--skip-open-browser"}, ""},
		{"profile: unsafe flag", none, []string{"--profile=open", "--token-cache-dir=/tmp/y"}, "it names your profile \"open\""},
		{"profile: unsafe flag by its old name --audit-log", none, []string{"--profile=open", "--audit-log=/tmp/y"}, "--exchange-audit-log"},
		{"profile: unsafe flag by kubelogin's name --certificate-authority", none, []string{"--profile=open", "--certificate-authority=/tmp/y"}, "--oidc-certificate-authority"},
		{"open profile: overriding a safe value is fine", none, []string{"--profile=open", "--oidc-client-id=other"}, ""},
		{"guarded profile: overriding its values", none, []string{"--profile=guarded", "--oidc-client-id=other"}, "over the profile's"},
		{"guarded profile: narrowing", none, []string{"--profile=guarded", "--allowed-server=https://a.example:6443"}, ""},
		{"guarded profile: widening", none, []string{"--profile=guarded", "--allowed-server=https://c.example:6443"}, "may only narrow"},
		{"guarded profile: empty", none, []string{"--profile=guarded", "--allowed-server="}, "needs a server URL"},
		{"no profile: empty --allowed-server", none, []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c", "--allowed-server="}, "needs a server URL"},
		{"kuberc lists the plugin by command", envWith(map[string]string{"KUBERC": kuberc}), []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c"}, "allowlists this plugin"},
		{"kuberc lists other plugins only", envWith(map[string]string{"KUBERC": other}), []string{"--oidc-issuer-url=https://x.example", "--oidc-client-id=c"}, ""},
		{"kuberc: cloudsigma env from the entry", envWith(map[string]string{"KUBERC": kuberc, "CLOUDSIGMA_OAUTH_URL": "https://evil.example"}),
			[]string{"--profile=open", "--exchange=cloudsigma"}, "$CLOUDSIGMA_OAUTH_URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parsed(t, tt.env, tt.args...)
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
// for an exec entry or in ExecEntryUnsafe, and the unsafe list holds what
// runs a program, touches a file or chooses a destination.
func TestExecEntrySafeIsAllowlist(t *testing.T) {
	o := NewAuthOptions()
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	unsafe := o.ExecEntryUnsafe()
	for _, f := range []string{flagBrowserCommand, flagClientSecretFile, flagPasswordFile, flagAuditLog, flagCacheDir, flagIssuerURL,
		flagCSOAuthURL, flagCSAPIURL, flagIPEndpoint, flagSecureTokenEndpoint, flagGoogleIssuer, flagInsecure, flagCAData, flagCA,
		flagPKCEMethod, flagLocalCert, flagLocalKey, flagOpenAfterAuth, flagIPEmulator, flagCSLegacy, flagClientSecret, flagRequestHeader, flagExchange} {
		assert.Contains(t, unsafe, f)
	}
	for name := range execEntrySafe {
		assert.True(t, o.names[name], "execEntrySafe names %q, which is not a flag", name)
	}
}
