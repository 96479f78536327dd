package setup

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
)

// TestMigrateKubelogin: invocations from kubelogin's README and docs map
// to get-token flags that check; what has no equivalent is reported.
func TestMigrateKubelogin(t *testing.T) {
	issuer := "--oidc-issuer-url=https://issuer.example.com"
	for _, tt := range []struct {
		name      string
		command   string
		args      []string
		want      []string
		wantNotes []string
		secrets   int
	}{
		{name: "README setup", command: "kubectl", args: []string{"oidc-login", "get-token", issuer, "--oidc-client-id=YOUR_CLIENT_ID", "--oidc-client-secret=YOUR_CLIENT_SECRET"},
			want: []string{issuer, "--oidc-client-id=YOUR_CLIENT_ID", "--oidc-client-secret-file=/s/kubelogin-u.oidc-client-secret"}, secrets: 1,
			wantNotes: []string{"--oidc-client-secret moves out of the kubeconfig"}},
		{name: "extra scopes, space-separated values", command: "kubectl", args: []string{"oidc-login", "get-token", "--oidc-issuer-url", "https://issuer.example.com", "--oidc-client-id", "k8s", "--oidc-extra-scope=email", "--oidc-extra-scope=groups"},
			want: []string{issuer, "--oidc-client-id=k8s", "--oidc-extra-scope=email", "--oidc-extra-scope=groups"}},
		{name: "keyboard, standalone binary", command: "/usr/local/bin/kubelogin", args: []string{"get-token", issuer, "--oidc-client-id=k8s", "--grant-type=authcode-keyboard"},
			want: []string{issuer, "--oidc-client-id=k8s", "--grant-type=authcode-keyboard"}},
		{name: "password grant with the password in argv", command: "kubectl-oidc_login", args: []string{"get-token", issuer, "--oidc-client-id=k8s", "--grant-type=password", "--username=foo", "--password=bar"},
			want: []string{issuer, "--oidc-client-id=k8s", "--grant-type=password", "--username=foo", "--password-file=/s/kubelogin-u.password"}, secrets: 1},
		{name: "device code, CA, listen port, timeout", command: "kubectl", args: []string{"oidc-login", "get-token", issuer, "--oidc-client-id=k8s", "--grant-type=device-code",
			"--certificate-authority=/etc/ca.crt", "--listen-port=8000", "--authentication-timeout-sec=60", "--skip-open-browser"},
			want: []string{issuer, "--oidc-client-id=k8s", "--grant-type=device-code", "--oidc-certificate-authority=/etc/ca.crt", "--listen-address=127.0.0.1:8000", "--authentication-timeout=1m0s", "--skip-open-browser"}},
		{name: "Auth0 audience, pkce, keyring, cache dir, verbosity", command: "kubectl", args: []string{"oidc-login", "get-token", issuer, "--oidc-client-id=k8s",
			"--oidc-auth-request-extra-params=audience=https://api", "--oidc-pkce-method=S256", "--token-cache-storage=keyring", "--token-cache-dir=/tmp/c", "-v1", "--unknown-flag=x"},
			want:      []string{issuer, "--oidc-client-id=k8s", "--oidc-auth-request-extra-params=audience=https://api", "--oidc-pkce-method=S256", "--token-cache-storage=keyring"},
			wantNotes: []string{"--token-cache-dir: dropped: kubectl-impersonate keeps its own cache", "--v1 has no equivalent", "--unknown-flag has no equivalent"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, ok := kubeloginArgs(&clientcmdapi.ExecConfig{Command: tt.command, Args: tt.args})
			require.True(t, ok)
			m, err := migrateArgs("u", args, "/s")
			require.NoError(t, err)
			assert.Equal(t, tt.want, m.Args)
			assert.Len(t, m.Secrets, tt.secrets)
			notes := strings.Join(m.Notes, "\n")
			for _, n := range tt.wantNotes {
				assert.Contains(t, notes, n)
			}
			_, err = parseGetTokenArgs(m.Args, testfs.HomeOnlyEnv)
			require.NoError(t, err, "what is written checks as get-token's flags")
		})
	}
	for _, e := range []*clientcmdapi.ExecConfig{{Command: "kubectl", Args: []string{"other-plugin", "get-token"}}, {Command: "gke-gcloud-auth-plugin"}, nil} {
		_, ok := kubeloginArgs(e)
		assert.False(t, ok)
	}
}

// TestSetupFromKubeloginWrite: --write backs up the file (mode kept),
// rewrites only the kubelogin users, moves the secret into a 0600 file,
// keeps interactiveMode and env, and leaves other entries alone.
func TestSetupFromKubeloginWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(path, testkit.KubeloginKubeconfig(t, testkit.Kubelogin{Extra: []string{"--oidc-client-secret=s3cret"}}, func(c *clientcmdapi.Config) {
		e := c.AuthInfos["oidc"].Exec
		e.InteractiveMode = clientcmdapi.NeverExecInteractiveMode
		e.Env = []clientcmdapi.ExecEnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}}
		c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
	}), 0o640))
	var out bytes.Buffer
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	root := NewCmdSetup(cmdutil.NewGlobalOptions(nil, nil), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	root.SetArgs([]string{"--from-kubelogin", "--write", "--kubeconfig=" + path})
	require.NoError(t, root.Execute(), out.String())
	assert.Contains(t, out.String(), `user "oidc":`)
	assert.Contains(t, out.String(), "Migrated 1 user(s)")

	backups, _ := filepath.Glob(path + ".kubelogin-backup-*")
	require.Len(t, backups, 1)
	fi, err := os.Stat(backups[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the backup holds the secrets moved out: 0600 whatever the original's mode")
	fi, err = os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the kubeconfig keeps its mode")

	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	e := cfg.AuthInfos["oidc"].Exec
	require.NotNil(t, e)
	assert.NotEqual(t, "kubectl", e.Command)
	assert.Contains(t, e.Args, "--oidc-issuer-url=https://issuer.example.com")
	assert.Equal(t, clientcmdapi.NeverExecInteractiveMode, e.InteractiveMode)
	assert.Equal(t, []clientcmdapi.ExecEnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}}, e.Env)
	assert.Equal(t, "admin-token", cfg.AuthInfos["admin"].Token, "other entries untouched")
	b, _ := os.ReadFile(path)
	assert.NotContains(t, string(b), "s3cret", "the secret left the kubeconfig")
	var secretFile string
	for _, a := range e.Args {
		if v, ok := strings.CutPrefix(a, "--oidc-client-secret-file="); ok {
			secretFile = v
		}
	}
	require.NotEmpty(t, secretFile)
	fi, err = os.Stat(secretFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestSetupFromKubeloginLocked: with --write-kuberc (or a kuberc that
// already allowlists the plugin) exec entries are locked, so each migrated
// user's settings go into a profile of its name and the entry says only
// --profile: get-token would refuse the migrated flags otherwise.
func TestSetupFromKubeloginLocked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(path, testkit.KubeloginKubeconfig(t, testkit.Kubelogin{}, nil), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".kube"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".kube", "kuberc"), []byte("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: /bin/true\n"), 0o600))
	t.Setenv("HOME", dir)
	t.Setenv("KUBERC", "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	var out bytes.Buffer
	root := NewCmdSetup(cmdutil.NewGlobalOptions(nil, nil), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	root.SetArgs([]string{"--from-kubelogin", "--write", "--write-kuberc", "--kubeconfig=" + path})
	require.NoError(t, root.Execute(), out.String())
	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	args := cfg.AuthInfos["oidc"].Exec.Args
	assert.Equal(t, "--profile=oidc", args[len(args)-1], "the entry says only --profile (after get-token when run from the full binary)")
	assert.NotContains(t, strings.Join(args, " "), "issuer.example.com")
	p, err := os.ReadFile(filepath.Join(dir, "xdg", "kubectl-impersonate", "config.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(p), "https://issuer.example.com")
	assert.Contains(t, out.String(), "Added ")
}

// TestMigrationSecretsAreSafe: a kubeconfig user name cannot choose where a
// secret is written; secret values are never printed; a symlink planted at
// the secret's path is replaced, not written through.
func TestMigrationSecretsAreSafe(t *testing.T) {
	for _, user := range []string{"../../../.bashrc", "a/b/c", "..", "ünïcode", strings.Repeat("x", 200)} {
		name := safeName(user)
		assert.NotContains(t, name, "/")
		assert.NotEqual(t, "..", name)
		assert.False(t, strings.HasPrefix(name, "."), name)
		m, err := migrateArgs(user, []string{"--oidc-client-secret=s3cret"}, "/s")
		require.NoError(t, err)
		for f := range m.Secrets {
			assert.Equal(t, "/s", filepath.Dir(f), "%q stays in the secret directory", user)
		}
	}
	assert.NotEqual(t, safeName("a/b"), safeName("a_b"), "different names, different files")
	assert.Equal(t, []string{"get-token", "--oidc-client-secret=(secret)", "--password", "(secret)", "--username=u"},
		redactSecrets([]string{"get-token", "--oidc-client-secret=s3cret", "--password", "pw", "--username=u"}))

	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(target, []byte("keep"), 0o644))
	planted := filepath.Join(dir, "secret")
	require.NoError(t, os.Symlink(target, planted))
	require.NoError(t, writeSecretFile(planted, "s3cret"))
	b, _ := os.ReadFile(target)
	assert.Equal(t, "keep", string(b), "the symlink's target is untouched")
	fi, err := os.Lstat(planted)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode(), "a regular 0600 file replaced the link")
}

// TestMigratedExecMatchesSetup: the migration writes the exec entry setup
// would write, for each way the plugin is installed.
func TestMigratedExecMatchesSetup(t *testing.T) {
	flags := []string{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s"}
	for _, tt := range []struct {
		name        string
		o           SetupOptions
		wantCommand string
		wantArgs    []string
	}{
		{"krew", SetupOptions{Executable: "/store/kubectl-impersonate", krewLink: "/home/u/.krew/bin/kubectl-impersonate"}, "/home/u/.krew/bin/kubectl-impersonate", append([]string{"get-token"}, flags...)},
		{"fast binary", SetupOptions{Executable: "/usr/local/bin/kubectl-impersonate", fast: "/usr/local/bin/kubectl-impersonate-get_token"}, "/usr/local/bin/kubectl-impersonate-get_token", flags},
		{"full binary alone", SetupOptions{Executable: "/opt/kubectl-impersonate"}, "/opt/kubectl-impersonate", append([]string{"get-token"}, flags...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.o.execFor(flags)
			assert.Equal(t, tt.wantCommand, e.Command)
			assert.Equal(t, tt.wantArgs, e.Args)
		})
	}
}
