package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fast binary answers from the cache exactly as get-token does, and
// hands everything else to the full binary.
func TestFastBinary(t *testing.T) {
	e := newEnv(t)
	never := []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}

	// A miss: the full binary logs in (curl as the browser).
	r := e.runBinary(fastBinary, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Interactive}, e.authArgs()...)
	require.Equal(t, 0, r.code, r.stderr)
	first := parseCred(t, r.stdout)
	assert.Contains(t, r.stderr, "in your browser to log in", "the full binary did the login")
	assert.Equal(t, 1, e.idp.AuthRequests())

	// A hit: the same answer as the full binary's get-token, nothing on stderr.
	fast := e.runBinary(fastBinary, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1beta1}, e.authArgs()...)
	full := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1beta1}, append([]string{"get-token"}, e.authArgs()...)...)
	require.Equal(t, 0, fast.code, fast.stderr)
	assert.Equal(t, full.stdout, fast.stdout)
	assert.Empty(t, fast.stderr)
	assert.Equal(t, first.Status.Token, parseCred(t, fast.stdout).Status.Token)
	assert.Equal(t, 1, e.idp.AuthRequests())

	tests := []struct {
		name          string
		args          []string
		wantCode      int
		wantStderr    string
		wantNoStdout  bool
		wantFromCache bool
	}{
		{name: "unknown flag: the full binary's error", args: append(e.authArgs(), "--no-such-flag"), wantCode: 1, wantStderr: "unknown flag: --no-such-flag", wantNoStdout: true},
		{name: "verbose: the full binary logs", args: append(e.authArgs(), "-v", "1"), wantStderr: "using the cached token", wantFromCache: true},
		{name: "invalid settings: the full binary says so", args: append(e.authArgs(), "--listen-address=0.0.0.0:1"), wantCode: 1, wantStderr: "must be a loopback address", wantNoStdout: true},
		{name: "allowed servers without cluster info", args: append(e.authArgs(), "--allowed-server=https://k8s.example.com"), wantCode: 1, wantStderr: "provideClusterInfo: true", wantNoStdout: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.runBinary(fastBinary, never, tt.args...)
			assert.Equal(t, tt.wantCode, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.wantStderr)
			if tt.wantNoStdout {
				assert.Empty(t, r.stdout)
			}
			if tt.wantFromCache {
				assert.Equal(t, first.Status.Token, parseCred(t, r.stdout).Status.Token)
			}
		})
	}

	// A corrupted entry: the full binary discards it with a notice and,
	// non-interactive, says how to log in.
	files, _ := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	require.Len(t, files, 1)
	require.NoError(t, os.WriteFile(files[0], []byte("{garbage"), 0o600))
	r = e.runBinary(fastBinary, never, e.authArgs()...)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "discarding the cached token")
	assert.Contains(t, r.stderr, "kubectl impersonate login")
}

func TestFastBinaryAlone(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	b, err := os.ReadFile(fastBinary)
	require.NoError(t, err)
	alone := filepath.Join(dir, "kubectl-impersonate-get_token")
	require.NoError(t, os.WriteFile(alone, b, 0o755))
	r := e.runBinary(alone, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, e.authArgs()...)
	assert.Equal(t, 1, r.code)
	assert.Equal(t, 1, len(strings.Split(strings.TrimSpace(r.stderr), "\n")))
	assert.Contains(t, r.stderr, "kubectl-impersonate is not next to")
}

// TestOutputFormats: each command accepts exactly its formats (json, yaml,
// jsonpath everywhere; wide and name where it prints them) and refuses the
// rest before any request.
func TestOutputFormats(t *testing.T) {
	tests := []struct {
		cmd           []string
		output        string
		wantErrSubstr string
	}{
		{cmd: []string{"whoami"}, output: "json"}, {cmd: []string{"whoami"}, output: "yaml"},
		{cmd: []string{"whoami"}, output: "jsonpath={.username}"},
		{cmd: []string{"whoami"}, output: "wide", wantErrSubstr: `--output "wide" is not one of json, yaml, jsonpath=TEMPLATE`},
		{cmd: []string{"whoami"}, output: "xml", wantErrSubstr: `--output "xml" is not one of`},
		{cmd: []string{"whoami"}, output: "jsonpath={.username", wantErrSubstr: "unclosed action"},
		{cmd: []string{"list", "pods"}, output: "wide"}, {cmd: []string{"list", "pods"}, output: "name"},
		{cmd: []string{"who-can", "get", "pods"}, output: "name", wantErrSubstr: `--output "name" is not one of dot, svg, html, json, yaml, jsonpath=TEMPLATE`},
		{cmd: []string{"access"}, output: "jsonpath={.rows}"},
		{cmd: []string{"why", "get", "pods"}, output: "table", wantErrSubstr: `--output "table" is not one of`},
	}
	e := newEnv(t)
	// A cluster nobody listens on: accepted formats fail at the request.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u, namespace: team}}]\ncurrent-context: c\n"), 0o600))
	for _, tt := range tests {
		t.Run(strings.Join(tt.cmd, " ")+" -o "+tt.output, func(t *testing.T) {
			r := e.run(nil, append(tt.cmd, "-o", tt.output, "--kubeconfig="+kc, "--request-timeout=2s")...)
			assert.Equal(t, 1, r.code)
			if tt.wantErrSubstr != "" {
				assert.Contains(t, r.stderr, tt.wantErrSubstr)
			} else {
				assert.NotContains(t, r.stderr, "--output", "accepted; fails later at the request")
				assert.Contains(t, r.stderr, "127.0.0.1:1", "failed at the request")
			}
		})
	}
}

// TestDeprecatedNameWarnsOnStderr: a deprecated name still works and says
// so on stderr; stdout (kubectl's, and -o json's) stays clean.
func TestDeprecatedNameWarnsOnStderr(t *testing.T) {
	e := newEnv(t)
	r := e.run(nil, "claims", "--oidc-ca-file=/nonexistent", "--token-file=/dev/null", "-o", "json")
	assert.Equal(t, 1, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "Flag --oidc-ca-file has been deprecated, use --oidc-certificate-authority\n")
}
