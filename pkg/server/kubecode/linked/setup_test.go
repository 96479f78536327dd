package linked

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd"
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
		{name: "access token, issuer not configured", flags: append(dex, "--oidc-use-access-token"), config: config("https://other.example.com", "other"),
			want: `has no jwt issuer "https://dex.example.com"`},
		{name: "client credentials: the access token's aud is the provider's choice", flags: append(dex, "--grant-type=client-credentials", "--oidc-client-secret-file="+secret),
			config: config("https://dex.example.com", "kubernetes-api")},
		{name: "token exchange to one audience", flags: append(dex, "--exchange=token-exchange", "--exchange-audience=cluster"), config: config("https://dex.example.com", "kubernetes"),
			want: `the tokens carry aud "cluster"`},
		{name: "a configuration kube-apiserver refuses", flags: dex, config: config("http://dex.example.com", "kubernetes"),
			wantErr: "--authentication-config:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "config"))
			var out, errOut bytes.Buffer
			streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
			code := cmd.Execute(context.Background(), append(append([]string{"setup", "--user=oidc"}, tt.flags...), "--authentication-config="+tt.config), streams, Code{})
			if tt.wantErr != "" {
				assert.Equal(t, 1, code)
				assert.Contains(t, errOut.String(), tt.wantErr)
				return
			}
			require.Equal(t, 0, code, errOut.String())
			if tt.want == "" {
				assert.NotContains(t, errOut.String(), "AuthenticationConfiguration")
				assert.NotContains(t, errOut.String(), "refuses")
				return
			}
			assert.Contains(t, errOut.String(), tt.want)
		})
	}
}

// TestAuthenticationConfigFileIsBounded: setup and claims read a regular
// file of at most 1 MiB; a FIFO (which would block) or /dev/zero (which
// never ends) is refused in one line, and a hostile file's text reaches
// the terminal as one printable line.
func TestAuthenticationConfigFileIsBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	testfs.Mkfifo(t, fifo)
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, 2<<20), 0o600))
	evil := filepath.Join(dir, "evil.yaml")
	require.NoError(t, os.WriteFile(evil, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: \"https://x.example.com\", audiences: [a]}\n  claimMappings:\n    username: {expression: \"claims.\\u001b]0;pwned\\u0007\\u001b[31mRED\"}\n"), 0o600))
	for _, tt := range []struct {
		file, want string
	}{
		{fifo, "is not a regular file"},
		{"/dev/zero", "is not a regular file"},
		{big, "is larger than 1 MiB"},
		{evil, "kube-apiserver would refuse this AuthenticationConfiguration"},
	} {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			var errOut bytes.Buffer
			streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &errOut}
			code := cmd.Execute(context.Background(), []string{"setup", "--oidc-issuer-url=https://x.example.com", "--oidc-client-id=a", "--authentication-config=" + tt.file}, streams, Code{})
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut.String(), tt.want)
			assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line: %q", errOut.String())
			assert.NotContains(t, errOut.String(), "\x1b", "no terminal escape")
			assert.NotContains(t, errOut.String(), "\a")
		})
	}
}
