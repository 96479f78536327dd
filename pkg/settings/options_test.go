package settings

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"a flag with the default value wins too", []string{"--cloudsigma-oauth-url=" + DefaultCloudSigmaOAuthURL}, DefaultCloudSigmaOAuthURL, "zrh"},
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
		require.NoError(t, o.Complete(func(string) string { return "" }, func(string) {}))
		return o
	}
	common := []string{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s"}
	old := parse(append(common, "--certificate-authority=/etc/ca.pem", "--audit-log=/tmp/audit")...)
	cur := parse(append(common, "--oidc-certificate-authority=/etc/ca.pem", "--exchange-audit-log=/tmp/audit")...)
	assert.Equal(t, "/etc/ca.pem", old.CertificateAuthority)
	assert.Equal(t, "/tmp/audit", old.AuditLog)
	assert.Equal(t, cur.Key(), old.Key())
	assert.Equal(t, cur.Args(), old.Args())
	assert.Contains(t, old.Args(), "--oidc-certificate-authority=/etc/ca.pem")
	assert.Contains(t, old.Args(), "--exchange-audit-log=/tmp/audit")
}
