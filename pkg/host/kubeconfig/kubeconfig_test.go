package kubeconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

const existing = `apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://old.example.com", certificate-authority-data: AAAA, proxy-url: "http://proxy.internal:3128"}
contexts:
- name: prod
  context: {cluster: prod, user: someone, namespace: ns1}
current-context: prod
`

// entry reads list[name][field] from the YAML of path.
func entry(t *testing.T, path, list, name, field string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(b, &doc))
	items, _ := doc[list].([]any)
	for _, it := range items {
		m := it.(map[string]any)
		if m["name"] == name {
			return m[field].(map[string]any)
		}
	}
	return nil
}

func TestSetClusterAndContext(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		context, cluster, server, ca string
		wantErr                      string
		wantCluster                  map[string]any
		wantContext                  map[string]any
	}{
		{
			name: "new context and cluster (a proxy)", context: "prod-proxy", cluster: "prod-proxy",
			server: "https://proxy.example.com:8443", ca: "/etc/proxy-ca.crt",
			wantCluster: map[string]any{"server": "https://proxy.example.com:8443", "certificate-authority": "/etc/proxy-ca.crt"},
			wantContext: map[string]any{"cluster": "prod-proxy", "user": "alice"},
		},
		{
			name: "existing cluster: server and CA replaced, other fields kept", context: "prod", cluster: "prod",
			server: "https://proxy.example.com", ca: "/ca.crt",
			wantCluster: map[string]any{"server": "https://proxy.example.com", "certificate-authority": "/ca.crt", "proxy-url": "http://proxy.internal:3128"},
			wantContext: map[string]any{"cluster": "prod", "user": "alice", "namespace": "ns1"},
		},
		{
			name: "existing context, no cluster: only the user changes", context: "prod",
			wantContext: map[string]any{"cluster": "prod", "user": "alice", "namespace": "ns1"},
		},
		{
			name: "missing context without a cluster", context: "absent",
			wantErr: `context "absent" is not in`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			require.NoError(t, os.WriteFile(path, []byte(existing), 0o600))
			kc := Open(path)
			err := kc.Edit(func(cfg *clientcmdapi.Config) error {
				SetUser(cfg, "alice", &clientcmdapi.ExecConfig{Command: "kubectl-impersonate-get_token", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode})
				if tc.server != "" {
					SetCluster(cfg, tc.cluster, tc.server, tc.ca)
				}
				return SetContext(cfg, kc.Files(), tc.context, tc.cluster, "alice")
			})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				b, _ := os.ReadFile(path)
				assert.Equal(t, existing, string(b), "nothing written on error")
				return
			}
			require.NoError(t, err)
			if tc.wantCluster != nil {
				assert.Equal(t, tc.wantCluster, entry(t, path, "clusters", tc.cluster, "cluster"))
			}
			assert.Equal(t, tc.wantContext, entry(t, path, "contexts", tc.context, "context"))
			assert.Equal(t, "kubectl-impersonate-get_token", entry(t, path, "users", "alice", "user")["exec"].(map[string]any)["command"])
			cfg, err := Open(path).po.GetStartingConfig()
			require.NoError(t, err)
			assert.Equal(t, "prod", cfg.CurrentContext, "the current context is left alone")
		})
	}
}

// TestWriteKeepsLinkModeAndFiles: a symlinked kubeconfig stays a link and
// its target is written; an existing file keeps its mode; with several
// files in $KUBECONFIG, an entry is written back to the file that defines
// it and a new one to the first existing file, the others untouched.
func TestWriteKeepsLinkModeAndFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "kubeconfig")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o700))
	require.NoError(t, os.WriteFile(target, []byte(existing), 0o640))
	link := filepath.Join(dir, "config")
	require.NoError(t, os.Symlink(target, link))

	kc := Open(link)
	require.NoError(t, kc.Edit(func(cfg *clientcmdapi.Config) error {
		SetUser(cfg, "alice", &clientcmdapi.ExecConfig{Command: "x", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode})
		return nil
	}))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink, "the link stays a link")
	fi, err = os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the file keeps its mode")
	assert.NotNil(t, entry(t, target, "users", "alice", "user"), "written through the link")

	// Several files: the user defined in the second stays there.
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	require.NoError(t, os.WriteFile(first, []byte("apiVersion: v1\nkind: Config\nusers: [{name: other, user: {token: t}}]\n"), 0o600))
	require.NoError(t, os.WriteFile(second, []byte("apiVersion: v1\nkind: Config\nusers: [{name: bob, user: {token: old}}]\n"), 0o600))
	firstBefore, _ := os.ReadFile(first)
	t.Setenv("KUBECONFIG", first+string(os.PathListSeparator)+second)
	kc = Open("")
	assert.Equal(t, second, kc.FileOf("users", "bob"))
	assert.Equal(t, first, kc.FileOf("users", "new"))
	require.NoError(t, kc.Edit(func(cfg *clientcmdapi.Config) error {
		SetUser(cfg, "bob", &clientcmdapi.ExecConfig{Command: "x", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode})
		return nil
	}))
	assert.NotNil(t, entry(t, second, "users", "bob", "user")["exec"], "bob is rewritten where he is defined")
	firstAfter, _ := os.ReadFile(first)
	assert.Equal(t, string(firstBefore), string(firstAfter), "the other file is untouched")
}
