package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
)

// TestSetupChecksAuthenticationConfig: given the cluster's
// AuthenticationConfiguration, setup says in one line when it would
// refuse the entry's tokens, and what to change.
func TestSetupChecksAuthenticationConfig(t *testing.T) {
	dir := t.TempDir()
	n := 0
	config := func(iss string, audiences string) string {
		n++
		path := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", n))
		require.NoError(t, os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "`+iss+`", audiences: [`+audiences+`]}
  claimMappings:
    username: {claim: email, prefix: ""}
`), 0o600))
		return path
	}
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s\n"), 0o600))
	const ip = "https://securetoken.google.com/my-project"
	ipFlags := []string{"--grant-type=identity-platform", "--oidc-issuer-url=" + ip, "--oidc-client-id=123-abc.apps.googleusercontent.com",
		"--oidc-client-secret-file=" + secret, "--identity-platform-api-key=AIza"}
	dex := []string{"--oidc-issuer-url=https://dex.example.com", "--oidc-client-id=kubernetes"}
	for _, tt := range []struct {
		name    string
		flags   []string
		config  string
		want    string
		wantErr string
	}{
		{name: "Identity Platform, the client ID configured", flags: ipFlags, config: config(ip, "123-abc.apps.googleusercontent.com"),
			want: `Identity Platform tokens carry the project ID "my-project" as aud, but this configuration expects 123-abc.apps.googleusercontent.com (an OAuth client ID?): the API server refuses them; set the audience to "my-project"`},
		{name: "Identity Platform, the project configured", flags: ipFlags, config: config(ip, "my-project")},
		{name: "ID token, the client configured", flags: dex, config: config("https://dex.example.com", "kubernetes")},
		{name: "ID token, another audience", flags: dex, config: config("https://dex.example.com", "other"),
			want: `the tokens carry aud "kubernetes", but the configuration of issuer "https://dex.example.com" expects other: the API server refuses them; add "kubernetes" to its audiences`},
		{name: "issuer not configured", flags: dex, config: config("https://other.example.com", "kubernetes"),
			want: `has no jwt issuer "https://dex.example.com": the API server refuses these tokens; add an entry with issuer.url: https://dex.example.com`},
		{name: "access token: aud unknown, issuer checked", flags: append(dex, "--oidc-use-access-token"), config: config("https://dex.example.com", "other")},
		{name: "token exchange to one audience", flags: append(dex, "--exchange=token-exchange", "--exchange-audience=cluster"), config: config("https://dex.example.com", "kubernetes"),
			want: `the tokens carry aud "cluster"`},
		{name: "a configuration kube-apiserver refuses", flags: dex, config: config("http://dex.example.com", "kubernetes"),
			wantErr: "--authentication-config:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := &SetupOptions{Auth: settings.NewAuthOptions(), IOStreams: genericiooptions.NewTestIOStreamsDiscard(),
				global: &GlobalOptions{Getenv: func(string) string { return "" }}, InteractiveMode: "IfAvailable", User: "oidc"}
			require.NoError(t, newCmdSetup(opts).ParseFlags(append(tt.flags, "--authentication-config="+tt.config)))
			require.NoError(t, opts.Complete())
			require.NoError(t, opts.Validate())
			note, err := opts.checkAuthConfig()
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				assert.Empty(t, note)
				return
			}
			assert.Contains(t, note, tt.want)
		})
	}
}
