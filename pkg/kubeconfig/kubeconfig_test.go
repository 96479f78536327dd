package kubeconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const existing = `apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://old.example.com", certificate-authority-data: AAAA, extensions: [{name: keep}]}
contexts:
- name: prod
  context: {cluster: prod, user: someone, namespace: ns1}
current-context: prod
`

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
			wantCluster: map[string]any{"server": "https://proxy.example.com", "certificate-authority": "/ca.crt", "extensions": []any{map[string]any{"name": "keep"}}},
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
			files := []string{path}
			if tc.server != "" {
				_, err := SetCluster(files, tc.cluster, tc.server, tc.ca)
				require.NoError(t, err)
			}
			_, err := SetContext(files, tc.context, tc.cluster, "alice")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				b, _ := os.ReadFile(path)
				assert.Equal(t, existing, string(b), "nothing written on error")
				return
			}
			require.NoError(t, err)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, yaml.Unmarshal(b, &doc))
			find := func(list, name, field string) map[string]any {
				for _, it := range doc[list].([]any) {
					m := it.(map[string]any)
					if m["name"] == name {
						return m[field].(map[string]any)
					}
				}
				return nil
			}
			if tc.wantCluster != nil {
				assert.Equal(t, tc.wantCluster, find("clusters", tc.cluster, "cluster"))
			}
			assert.Equal(t, tc.wantContext, find("contexts", tc.context, "context"))
			assert.Equal(t, "prod", doc["current-context"], "the current context is left alone")
		})
	}
}
