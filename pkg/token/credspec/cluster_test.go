package credspec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/execcred"
)

// TestForCluster: a fleet user's settings for each cluster kubectl asks
// for, from the cluster's exec extension (kubeconfig input: an attacker's
// kubeconfig may write it).
func TestForCluster(t *testing.T) {
	server := "https://a.example.com:6443"
	for _, tt := range []struct {
		name         string
		fromCluster  bool
		cluster      *execcred.Cluster
		wantExchange string
		wantAud      []string
		wantErr      string
	}{
		{name: "not a fleet user: untouched", cluster: &execcred.Cluster{Server: server, Config: []byte(`{"audience":"x"}`)}, wantExchange: ExchangeTokenExchange},
		{name: "the extension's audience", fromCluster: true, cluster: &execcred.Cluster{Server: server, Config: []byte(`{"audience":"cluster-a"}`)},
			wantExchange: ExchangeTokenExchange, wantAud: []string{"cluster-a"}},
		{name: "no extension: the login's token", fromCluster: true, cluster: &execcred.Cluster{Server: server}, wantExchange: ExchangeNone},
		{name: "null extension: the login's token", fromCluster: true, cluster: &execcred.Cluster{Server: server, Config: []byte(`null`)}, wantExchange: ExchangeNone},
		{name: "allowedServer is this server", fromCluster: true, cluster: &execcred.Cluster{Server: server + "/", Config: []byte(`{"audience":"a","allowedServer":"` + server + `"}`)},
			wantExchange: ExchangeTokenExchange, wantAud: []string{"a"}},
		{name: "allowedServer is another", fromCluster: true, cluster: &execcred.Cluster{Server: "https://evil.example.com", Config: []byte(`{"audience":"a","allowedServer":"` + server + `"}`)},
			wantErr: "refusing to hand a token to https://evil.example.com"},
		{name: "unknown key", fromCluster: true, cluster: &execcred.Cluster{Server: server, Config: []byte(`{"aud":"a"}`)}, wantErr: `unknown field "aud"`},
		{name: "not an object", fromCluster: true, cluster: &execcred.Cluster{Server: server, Config: []byte(`["a"]`)}, wantErr: "its keys are audience and allowedServer"},
		{name: "control characters", fromCluster: true, cluster: &execcred.Cluster{Server: server, Config: []byte(`{"audience":"a\u001b[31m"}`)}, wantErr: "is not a printable name"},
		{name: "no cluster information", fromCluster: true, wantErr: "set provideClusterInfo: true"},
		{name: "an audience of 512 bytes", fromCluster: true, cluster: &execcred.Cluster{Server: server, Config: []byte(`{"audience":"` + strings.Repeat("a", 512) + `"}`)},
			wantExchange: ExchangeTokenExchange, wantAud: []string{strings.Repeat("a", 512)}},
		{name: "an audience of 513 bytes", fromCluster: true, cluster: &execcred.Cluster{Server: server, Config: []byte(`{"audience":"` + strings.Repeat("a", 513) + `"}`)}, wantErr: "at most 512 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := NewSpec()
			o.Exchange, o.ExchangeFromCluster = ExchangeTokenExchange, tt.fromCluster
			err := o.ForCluster(tt.cluster)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantExchange, o.Exchange)
			assert.Equal(t, tt.wantAud, o.ExchangeAudiences)
		})
	}
}

// TestFleetKeys: each audience is a cache entry of its own; a cluster
// without one shares the login's entry.
func TestFleetKeys(t *testing.T) {
	keyFor := func(config string) string {
		o := NewSpec()
		o.IssuerURL, o.ClientID, o.Exchange, o.ExchangeFromCluster = "https://id.example.com", "k", ExchangeTokenExchange, true
		require.NoError(t, o.ForCluster(&execcred.Cluster{Server: "https://x", Config: []byte(config)}))
		return o.Key().ID()
	}
	login := NewSpec()
	login.IssuerURL, login.ClientID = "https://id.example.com", "k"
	a, b, none := keyFor(`{"audience":"a"}`), keyFor(`{"audience":"b"}`), keyFor(``)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, none)
	assert.Equal(t, login.Key().ID(), none)
}
