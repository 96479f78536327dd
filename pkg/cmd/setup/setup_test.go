package setup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"

	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode/fake"
)

// setupRun runs setup's Complete, Validate and Run with args, in a home of
// the test's, the binary at /opt/ki/kubectl-impersonate (no fast binary
// beside it) and kube-apiserver's code faked; it returns stdout, stderr
// and Run's error.
func setupRun(t *testing.T, home string, code *fake.Code, args ...string) (string, string, error) {
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "KUBECONFIG": filepath.Join(home, "kubeconfig")}
	// client-go's loading rules read the process's environment.
	for k, v := range env {
		t.Setenv(k, v)
	}
	g := cmdutil.NewGlobalOptions(code, nil)
	g.Getenv = func(k string) string { return env[k] }
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := &SetupOptions{Auth: settings.NewAuthOptions(), IOStreams: streams, global: g, User: "oidc", InteractiveMode: "IfAvailable",
		Executable: "/opt/ki/kubectl-impersonate"}
	require.NoError(t, newCmdSetup(o).ParseFlags(args))
	err := o.Complete(context.Background(), nil)
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run(context.Background())
	}
	return out.String(), errOut.String(), err
}

var issuerFlags = []string{"--oidc-issuer-url=https://dex.example.com", "--oidc-client-id=kube", "--oidc-extra-scope=groups"}

func TestSetupRunPrints(t *testing.T) {
	home := t.TempDir()
	code := &fake.Code{}
	out, errOut, err := setupRun(t, home, code, append(issuerFlags, "--oidc-client-secret=s3cret")...)
	require.NoError(t, err)
	assert.Contains(t, out, "kubectl \\\n  config \\\n  set-credentials \\\n  oidc")
	assert.Contains(t, out, "--exec-command=/opt/ki/kubectl-impersonate")
	for _, arg := range []string{"--exec-arg=get-token", "--exec-arg=--oidc-issuer-url=https://dex.example.com", "--exec-arg=--oidc-extra-scope=groups"} {
		assert.Contains(t, out, arg)
	}
	assert.NotContains(t, out+errOut, "s3cret", "a secret never goes into the kubeconfig or the terminal")
	assert.Contains(t, errOut, "the client secret is not written into the kubeconfig")
	assert.Empty(t, code.Checked, "no --authentication-config: nothing of kube-apiserver's is run")
	_, statErr := os.Stat(filepath.Join(home, "kubeconfig"))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "printing writes nothing")
}

func TestSetupRunWrites(t *testing.T) {
	home := t.TempDir()
	ca := filepath.Join(home, "proxy-ca.crt")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600))
	out, _, err := setupRun(t, home, &fake.Code{}, append(issuerFlags, "--write", "--user=alice", "--context=prod-proxy",
		"--server=https://proxy.example.com:8443", "--cluster-certificate-authority="+ca, "--exec-interactive-mode=Never")...)
	require.NoError(t, err)
	assert.Contains(t, out, `Wrote the user "alice" to `+filepath.Join(home, "kubeconfig"))
	assert.Contains(t, out, `Wrote the cluster "prod-proxy" (https://proxy.example.com:8443)`)
	cfg, err := clientcmd.LoadFromFile(filepath.Join(home, "kubeconfig"))
	require.NoError(t, err)
	exec := cfg.AuthInfos["alice"].Exec
	require.NotNil(t, exec)
	assert.Equal(t, "/opt/ki/kubectl-impersonate", exec.Command)
	assert.Equal(t, append([]string{"get-token"}, "--oidc-client-id=kube", "--oidc-extra-scope=groups", "--oidc-issuer-url=https://dex.example.com"), exec.Args)
	assert.Equal(t, "Never", string(exec.InteractiveMode))
	assert.True(t, exec.ProvideClusterInfo, "--allowed-server and a fleet's audience read the cluster")
	assert.Equal(t, "alice", cfg.Contexts["prod-proxy"].AuthInfo)
	assert.Equal(t, "https://proxy.example.com:8443", cfg.Clusters["prod-proxy"].Server)
	assert.Equal(t, ca, cfg.Clusters["prod-proxy"].CertificateAuthority)
	info, err := os.Stat(filepath.Join(home, "kubeconfig"))
	require.NoError(t, err)
	assert.Zero(t, info.Mode().Perm()&0o077, "the kubeconfig is private")
}

// TestSetupRunChecksTheAuthenticationConfig: --authentication-config asks
// kube-apiserver's code (behind pkg/server/kubecode) about the entry's issuer and
// audience; its note is one line on stderr, its refusal stops setup before
// anything is written.
func TestSetupRunChecksTheAuthenticationConfig(t *testing.T) {
	for _, tt := range []struct {
		name     string
		code     *fake.Code
		more     []string
		wantAud  string
		wantErr  string
		wantNote string
	}{
		{name: "accepted: the ID token's audience is the client", code: &fake.Code{}, wantAud: "kube"},
		{name: "a note", code: &fake.Code{Note: "the issuer's claimMappings use email\nwithout email_verified"}, wantAud: "kube",
			wantNote: "kubectl-impersonate: the issuer's claimMappings use email without email_verified\n"},
		{name: "an exchange's audience", code: &fake.Code{}, more: []string{"--exchange=token-exchange", "--exchange-audience=cluster-a"}, wantAud: "cluster-a"},
		{name: "refused: nothing written", code: &fake.Code{CheckErr: errors.New("no jwt authenticator has issuer https://dex.example.com")},
			wantAud: "kube", wantErr: "--authentication-config: no jwt authenticator has issuer https://dex.example.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			args := append(append(append([]string{}, issuerFlags...), tt.more...), "--authentication-config=/etc/kubernetes/auth.yaml", "--write")
			out, errOut, err := setupRun(t, home, tt.code, args...)
			require.Len(t, tt.code.Checked, 1)
			assert.Equal(t, fake.Check{Path: "/etc/kubernetes/auth.yaml", Issuer: "https://dex.example.com", Audience: tt.wantAud}, tt.code.Checked[0])
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				assert.Empty(t, out)
				_, statErr := os.Stat(filepath.Join(home, "kubeconfig"))
				assert.ErrorIs(t, statErr, os.ErrNotExist, "a refused entry is not written")
				return
			}
			require.NoError(t, err)
			assert.Contains(t, out, `Wrote the user "oidc"`)
			if tt.wantNote != "" {
				assert.Equal(t, tt.wantNote, errOut)
			}
		})
	}
}

// TestSetupRunFailures: bad input stops setup with one line saying what
// to fix, before anything is written.
func TestSetupRunFailures(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no issuer", []string{"--oidc-client-id=kube"}, "--oidc-issuer-url"},
		{"--server over http", append(issuerFlags, "--write", "--context=p", "--server=http://proxy.example.com"), `--server "http://proxy.example.com" is not an https:// URL`},
		{"--context without --write", append(issuerFlags, "--context=p"), "--context takes effect with --write only"},
		{"an unknown interactive mode", append(issuerFlags, "--exec-interactive-mode=Sometimes"), `--exec-interactive-mode "Sometimes" is not one of`},
		{"--cluster-audience without --write", append(issuerFlags, "--cluster-audience=a=b"), "--cluster-audience needs --write"},
		{"a profile without a profiles file", []string{"--profile=tenant-a"}, "does not exist: create it (see docs/profiles.md)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			out, _, err := setupRun(t, home, &fake.Code{}, tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\n")
			assert.Empty(t, strings.TrimSpace(out))
			_, statErr := os.Stat(filepath.Join(home, "kubeconfig"))
			assert.ErrorIs(t, statErr, os.ErrNotExist)
		})
	}
}
