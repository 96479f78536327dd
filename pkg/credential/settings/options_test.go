package settings

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// CloudSigma's deployment variables apply unless a flag says otherwise:
// with the staging URL set, the client secret must not go to production.
func TestCloudSigmaEnvironment(t *testing.T) {
	env := map[string]string{"CLOUDSIGMA_OAUTH_URL": "https://oauth.staging.example.com", "CLOUDSIGMA_REGION": "zrh",
		"CLOUDSIGMA_CLIENT_ID": "robot", "HOME": t.TempDir()}
	for _, tc := range []struct {
		name               string
		args               []string
		wantOAuth, wantReg string
	}{
		{"variables apply", nil, "https://oauth.staging.example.com", "zrh"},
		{"flags win", []string{"--cloudsigma-oauth-url=https://oauth.other.example.com", "--cloudsigma-region=sjc"}, "https://oauth.other.example.com", "sjc"},
		{"a flag with the default value wins too", []string{"--cloudsigma-oauth-url=" + credspec.DefaultCloudSigmaOAuthURL}, credspec.DefaultCloudSigmaOAuthURL, "zrh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewAuthOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(append([]string{"--exchange=cloudsigma", "--impersonate-user-email=alice@example.com"}, tc.args...)))
			require.NoError(t, o.Complete(func(k string) string { return env[k] }, func(string) {}))
			cs := o.CloudSigma()
			assert.Equal(t, tc.wantOAuth, cs.OAuthURL)
			assert.Equal(t, tc.wantReg, cs.Region)
		})
	}
}

// TestOldFlagNames: a kubeconfig written before the renames
// (--certificate-authority, --audit-log) reads the same settings and the
// same cache key; what setup writes now uses the new names.
func TestOldFlagNames(t *testing.T) {
	parse := func(args ...string) *AuthOptions {
		o := NewAuthOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		require.NoError(t, fs.Parse(args))
		require.NoError(t, o.Complete(testfs.HomeOnlyEnv, func(string) {}))
		return o
	}
	common := []string{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s"}
	old := parse(append(common, "--certificate-authority=/etc/ca.pem", "--audit-log=/tmp/audit")...)
	cur := parse(append(common, "--oidc-certificate-authority=/etc/ca.pem", "--exchange-audit-log=/tmp/audit")...)
	assert.Equal(t, []string{"/etc/ca.pem"}, old.CertificateAuthorities)
	assert.Equal(t, "/tmp/audit", old.AuditLog)
	assert.Equal(t, cur.Key(), old.Key())
	assert.Equal(t, cur.Args(), old.Args())
	assert.Contains(t, old.Args(), "--oidc-certificate-authority=/etc/ca.pem")
	assert.Contains(t, old.Args(), "--exchange-audit-log=/tmp/audit")
}

// TestKubeloginFlags: kubelogin's flags parse, are checked, and setup
// writes them back as they parse (key=value flags one pair per flag).
func TestKubeloginFlags(t *testing.T) {
	common := []string{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s"}
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "extra params, headers, pkce, CAs", args: []string{"--oidc-auth-request-extra-params=audience=https://api", "--oidc-auth-request-extra-params=prompt=consent",
			"--oidc-request-header=X-Key=v", "--oidc-pkce-method=no", "--certificate-authority=/a.pem", "--oidc-certificate-authority=/b.pem",
			"--certificate-authority-data=QUJD", "--force-refresh"}},
		{name: "fixed https loopback redirect", args: []string{"--oidc-redirect-url=https://localhost:8000/callback", "--local-server-cert=/c", "--local-server-key=/k",
			"--open-url-after-authentication=https://example.com/done"}},
		{name: "password grant", args: []string{"--grant-type=password", "--username=ci@example.com"}},
		{name: "password grant without a username", args: []string{"--grant-type=password"}, wantErr: "--grant-type=password needs --username"},
		{name: "pkce method", args: []string{"--oidc-pkce-method=plain"}, wantErr: `--oidc-pkce-method "plain" is not one of auto, no, S256`},
		{name: "extra param replacing state", args: []string{"--oidc-auth-request-extra-params=state=x"}, wantErr: "that parameter is the login's own"},
		{name: "header replacing Authorization", args: []string{"--oidc-request-header=authorization=Bearer x"}, wantErr: "that header is the request's own"},
		{name: "redirect off loopback", args: []string{"--oidc-redirect-url=http://evil.example.com:8000/"}, wantErr: "the loopback server binds 127.0.0.1"},
		{name: "redirect to IPv6 loopback (another user may listen there)", args: []string{"--oidc-redirect-url=http://[::1]:8000/"}, wantErr: "the loopback server binds 127.0.0.1"},
		{name: "redirect without a port", args: []string{"--oidc-redirect-url=http://localhost/"}, wantErr: "the loopback server binds 127.0.0.1"},
		{name: "redirect to port 0", args: []string{"--oidc-redirect-url=http://127.0.0.1:0/"}, wantErr: "the loopback server binds 127.0.0.1"},
		{name: "extra param request object", args: []string{"--oidc-auth-request-extra-params=request_uri=https://evil/x"}, wantErr: "that parameter is the login's own"},
		{name: "https redirect without a certificate", args: []string{"--oidc-redirect-url=https://localhost:8000/"}, wantErr: "https needs --local-server-cert"},
		{name: "cert without key", args: []string{"--local-server-cert=/c"}, wantErr: "go together"},
		{name: "open url not https", args: []string{"--open-url-after-authentication=javascript:alert(1)"}, wantErr: "is not an https URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := NewAuthOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(append(append([]string{}, common...), tt.args...)))
			require.NoError(t, o.Complete(testfs.HomeOnlyEnv, func(string) {}))
			err := o.Validate()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			// What setup writes parses to the same settings.
			again := NewAuthOptions()
			fs2 := pflag.NewFlagSet("t", pflag.ContinueOnError)
			again.AddFlags(fs2)
			require.NoError(t, fs2.Parse(o.Args()))
			require.NoError(t, again.Complete(testfs.HomeOnlyEnv, func(string) {}))
			assert.Equal(t, o.OIDC, again.OIDC)
			assert.Equal(t, o.ForceRefresh, again.ForceRefresh)
		})
	}
}

// TestFileSettingsExpandHome: every setting that names a file reads
// "~/..." from the home directory, never from a directory called "~" in
// kubectl's working directory (a cloned repository could hold one, with a
// key or a federated token of someone else's).
func TestFileSettingsExpandHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct {
		flag string
		got  func(o *AuthOptions) string
	}{
		{"--oidc-client-key-file", func(o *AuthOptions) string { return o.ClientKeyFile }},
		{"--oidc-client-certificate-file", func(o *AuthOptions) string { return o.ClientCertificateFile }},
		{"--oidc-client-assertion-file", func(o *AuthOptions) string { return o.ClientAssertionFile }},
		{"--local-server-cert", func(o *AuthOptions) string { return o.LocalServerCert }},
		{"--local-server-key", func(o *AuthOptions) string { return o.LocalServerKey }},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			o := NewAuthOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse([]string{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=robot", tc.flag + "=~/robot/file"}))
			require.NoError(t, o.Complete(func(k string) string { return map[string]string{"HOME": home}[k] }, func(string) {}))
			assert.Equal(t, home+"/robot/file", tc.got(o))
		})
	}
}
