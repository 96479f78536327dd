package settings

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// TestParseArgsOverridden: login's and logout's flags replace the exec
// entry's value of each flag they set (lists and key=value flags whole),
// and the entry supplies the rest.
func TestParseArgsOverridden(t *testing.T) {
	entry := []string{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s", "--oidc-extra-scope=email",
		"--oidc-extra-scope=groups", "--browser-command=open-it", "--oidc-auth-request-extra-params=audience=a",
		"--oidc-auth-request-extra-params=prompt=login", "--authentication-timeout=60s"}
	tests := []struct {
		name  string
		user  []string
		check func(t *testing.T, o *AuthOptions)
	}{
		{name: "no flags: the entry's settings", check: func(t *testing.T, o *AuthOptions) {
			assert.Equal(t, "open-it", o.BrowserCommand)
			assert.False(t, o.SkipOpenBrowser)
			assert.Equal(t, []string{"email", "groups"}, o.ExtraScopes)
		}},
		{name: "a bool flag is added", user: []string{"--skip-open-browser", "--force-refresh"}, check: func(t *testing.T, o *AuthOptions) {
			assert.True(t, o.SkipOpenBrowser)
			assert.True(t, o.ForceRefresh)
			assert.Equal(t, "https://id.example.com", o.IssuerURL, "the entry supplies the rest")
		}},
		{name: "a scalar replaces the entry's", user: []string{"--authentication-timeout=5s", "--grant-type=device-code"}, check: func(t *testing.T, o *AuthOptions) {
			assert.Equal(t, 5*time.Second, o.AuthTimeout)
			assert.Equal(t, credspec.GrantDeviceCode, o.GrantType)
		}},
		{name: "a list replaces the entry's whole", user: []string{"--oidc-extra-scope=profile"}, check: func(t *testing.T, o *AuthOptions) {
			assert.Equal(t, []string{"profile"}, o.ExtraScopes)
		}},
		{name: "key=value flags replace the entry's whole", user: []string{"--oidc-auth-request-extra-params=prompt=none"}, check: func(t *testing.T, o *AuthOptions) {
			assert.Equal(t, map[string]string{"prompt": "none"}, o.AuthRequestExtraParams)
		}},
		{name: "a flag set to its default still overrides", user: []string{"--browser-command="}, check: func(t *testing.T, o *AuthOptions) {
			assert.Empty(t, o.BrowserCommand)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := NewAuthOptions()
			fs := pflag.NewFlagSet("login", pflag.ContinueOnError)
			user.AddFlags(fs)
			require.NoError(t, fs.Parse(tt.user))
			o, err := ParseArgsOverridden(entry, user, testfs.HomeOnlyEnv, func(string) {}, []string{}...)
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}

// TestOverridesAreNotTheEntrys: with exec entries locked (a profile with
// allowedServers), the entry may not set --browser-command, but the
// person typing login may.
func TestOverridesAreNotTheEntrys(t *testing.T) {
	home := t.TempDir()
	profiles := filepath.Join(home, "config.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte(`profiles:
  locked:
    oidc-issuer-url: https://id.example.com
    oidc-client-id: k8s
    allowedServers: [https://api.example.com]
`), 0o600))
	getenv := func(k string) string {
		return map[string]string{"HOME": home, "KUBECTL_IMPERSONATE_CONFIG": profiles}[k]
	}
	parse := func(entry, flags []string) error {
		user := NewAuthOptions()
		fs := pflag.NewFlagSet("login", pflag.ContinueOnError)
		user.AddFlags(fs)
		require.NoError(t, fs.Parse(flags))
		_, err := ParseArgsOverridden(entry, user, getenv, func(string) {}, []string{}...)
		return err
	}
	err := parse([]string{"--profile=locked", "--browser-command=evil"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the kubeconfig's exec entry sets --browser-command")
	assert.NoError(t, parse([]string{"--profile=locked"}, []string{"--browser-command=my-browser"}))
}

// TestLockedEntryCannotDropTheExchange: a locked profile that exchanges
// every token (token-exchange, allowedServers) cannot be turned into a
// fleet user by the entry, whose clusters without an audience would get
// the login's token itself.
func TestLockedEntryCannotDropTheExchange(t *testing.T) {
	home := t.TempDir()
	profiles := filepath.Join(home, "config.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte(`profiles:
  exchanging:
    oidc-issuer-url: https://id.example.com
    oidc-client-id: k8s
    exchange: token-exchange
    exchange-audience: cluster-a
    allowedServers: [https://a.example.com]
`), 0o600))
	getenv := func(k string) string {
		return map[string]string{"HOME": home, "KUBECTL_IMPERSONATE_CONFIG": profiles}[k]
	}
	_, _, err := parseArgs([]string{"--profile=exchanging", "--exchange-audience-from-cluster"}, getenv, func(string) {}, true, []string{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the kubeconfig's exec entry sets --exchange-audience-from-cluster")
}
