package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// TestGate: the one reader of a cached token for a server judges the
// cluster a client of the plugin's own targets as get-token judges the
// one kubectl names (issue 46), and hands out a configuration carrying
// that token alone.
func TestGate(t *testing.T) {
	const allowed = "https://api.tenant.example:6443"
	dir := t.TempDir()
	base := []string{"--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=k", "--token-cache-storage=disk", "--token-cache-dir=" + dir}
	session := func(t *testing.T, provide bool, args ...string) *Session {
		raw := clientcmdapi.NewConfig()
		raw.Clusters["c"] = &clientcmdapi.Cluster{Server: allowed}
		raw.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "kubectl-impersonate-get_token", Args: append(append([]string{}, base...), args...),
			APIVersion: "client.authentication.k8s.io/v1", ProvideClusterInfo: provide}}
		raw.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		s, err := Current(raw, Selection{Context: "x"}, nil, func(string) string { return "" })
		require.NoError(t, err)
		return s
	}
	cache := func(t *testing.T, s *Session, cfg *rest.Config, token string) {
		// The entry get-token would find for the cluster cfg names.
		c, err := ExecCluster(cfg)
		require.NoError(t, err)
		a := *s.unbound
		require.NoError(t, a.ForCluster(c))
		store, err := a.NewStore(Quiet)
		require.NoError(t, err)
		now := time.Now()
		b, err := (&tokencache.Entry{IDToken: token, IDTokenExpiry: now.Add(time.Hour), AccessToken: "at-" + token, AccessTokenExpiry: now.Add(time.Hour), ObtainedAt: now}).Encode()
		require.NoError(t, err)
		require.NoError(t, store.Put(context.Background(), a.Key().ID(), b))
	}
	cfgFor := func(s *Session, host string, f func(*rest.Config)) *rest.Config {
		cfg := &rest.Config{Host: host, ExecProvider: s.Exec.DeepCopy(), BearerToken: "", Username: "u", Password: "p",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")},
			Impersonate:     rest.ImpersonationConfig{UserName: "bob"}}
		if f != nil {
			f(cfg)
		}
		return cfg
	}

	s := session(t, true, "--allowed-server="+allowed)
	cache(t, s, cfgFor(s, allowed, nil), "token-a")
	for _, tt := range []struct {
		name    string
		host    string
		edit    func(*rest.Config)
		wantErr string
	}{
		{name: "the allowed server", host: allowed},
		{name: "another server", host: "https://evil.example:6443", wantErr: "not among the allowed servers"},
		{name: "http", host: "http://api.tenant.example:6443", wantErr: "in clear text"},
		{name: "without TLS verification", host: allowed, edit: func(c *rest.Config) { c.Insecure, c.CAData = true, nil }, wantErr: "skips TLS verification"},
		{name: "another tls-server-name", host: allowed, edit: func(c *rest.Config) { c.ServerName = "evil.example" }, wantErr: "tls-server-name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bound, ts, err := s.Gate(context.Background(), cfgFor(s, tt.host, tt.edit), nil)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, bound)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "token-a", bound.BearerToken)
			assert.Nil(t, bound.ExecProvider, "no exec entry to run")
			assert.Empty(t, bound.Username+bound.Password, "no other credential")
			assert.Empty(t, bound.CertData, "no client certificate")
			assert.Equal(t, []byte("ca"), bound.CAData, "the TLS settings that were judged")
			assert.Equal(t, "bob", bound.Impersonate.UserName, "impersonation kept")
			assert.True(t, ts.Cached)
		})
	}

	t.Run("the CA file is read once, bounded, into the configuration judged", func(t *testing.T) {
		ca := filepath.Join(t.TempDir(), "ca.crt")
		require.NoError(t, os.WriteFile(ca, []byte("ca from the file"), 0o600))
		bound, _, err := s.Gate(context.Background(), cfgFor(s, allowed, func(c *rest.Config) { c.CAData, c.CAFile = nil, ca }), nil)
		require.NoError(t, err)
		assert.Equal(t, []byte("ca from the file"), bound.CAData)
		assert.Empty(t, bound.CAFile, "the transport does not read the file again")
		for _, bad := range []string{"/dev/zero", filepath.Join(t.TempDir(), "missing")} {
			_, _, err := s.Gate(context.Background(), cfgFor(s, allowed, func(c *rest.Config) { c.CAData, c.CAFile = nil, bad }), nil)
			require.Error(t, err, bad)
			assert.Contains(t, err.Error(), "certificate-authority")
		}
	})
	t.Run("a list without cluster information", func(t *testing.T) {
		s := session(t, false, "--allowed-server="+allowed)
		_, _, err := s.Gate(context.Background(), cfgFor(s, allowed, nil), nil)
		require.ErrorContains(t, err, "set provideClusterInfo: true")
	})
	t.Run("no list: any https server, not http", func(t *testing.T) {
		s := session(t, false)
		cache(t, s, cfgFor(s, "https://any.example", nil), "token-b")
		bound, _, err := s.Gate(context.Background(), cfgFor(s, "https://any.example", nil), nil)
		require.NoError(t, err)
		assert.Equal(t, "token-b", bound.BearerToken)
		_, _, err = s.Gate(context.Background(), cfgFor(s, "http://any.example", nil), nil)
		require.ErrorContains(t, err, "in clear text")
	})
	t.Run("nothing cached", func(t *testing.T) {
		s := session(t, true, "--allowed-server="+allowed, "--oidc-extra-scope=other")
		_, ts, err := s.Gate(context.Background(), cfgFor(s, allowed, nil), nil)
		require.ErrorIs(t, err, ErrNoValidToken)
		assert.False(t, ts.Cached)
	})
	t.Run("a fleet: the cluster the client targets picks the audience", func(t *testing.T) {
		s := session(t, true, "--exchange=token-exchange", "--exchange-audience-from-cluster")
		withAudience := func(aud string) func(*rest.Config) {
			return func(c *rest.Config) {
				c.ExecProvider.Config = &runtime.Unknown{Raw: []byte(`{"audience":"` + aud + `"}`)}
			}
		}
		cache(t, s, cfgFor(s, "https://a.example", withAudience("cluster-a")), "token-for-a")
		cache(t, s, cfgFor(s, "https://b.example", withAudience("cluster-b")), "token-for-b")
		for host, aud := range map[string]string{"https://a.example": "cluster-a", "https://b.example": "cluster-b"} {
			bound, _, err := s.Gate(context.Background(), cfgFor(s, host, withAudience(aud)), nil)
			require.NoError(t, err)
			assert.Equal(t, "at-token-for-"+aud[len(aud)-1:], bound.BearerToken, "%s gets its own audience's token", host)
		}
	})
}

// TestInlineFiles: every file a configuration names is read into it, once
// and bounded; data already given wins; nothing is read from a device.
func TestInlineFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	cfg := &rest.Config{Host: "https://h", BearerTokenFile: file("token", " tok\n"),
		TLSClientConfig: rest.TLSClientConfig{CAFile: file("ca", "ca"), CertFile: file("cert", "cert"), KeyFile: file("key", "key")}}
	out, err := InlineFiles(cfg)
	require.NoError(t, err)
	assert.Equal(t, []byte("ca"), out.CAData)
	assert.Equal(t, []byte("cert"), out.CertData)
	assert.Equal(t, []byte("key"), out.KeyData)
	assert.Equal(t, "tok", out.BearerToken)
	assert.Empty(t, out.CAFile+out.CertFile+out.KeyFile+out.BearerTokenFile, "no file left to read again")
	assert.Equal(t, file("ca", "ca"), cfg.CAFile, "the caller's configuration is unchanged")

	given := &rest.Config{Host: "https://h", TLSClientConfig: rest.TLSClientConfig{CAFile: "/dev/zero", CAData: []byte("given")}}
	out, err = InlineFiles(given)
	require.NoError(t, err, "data given: the file is not read")
	assert.Equal(t, []byte("given"), out.CAData)
	assert.Empty(t, out.CAFile)

	for _, bad := range []*rest.Config{
		{Host: "https://h", TLSClientConfig: rest.TLSClientConfig{CertFile: "/dev/zero"}},
		{Host: "https://h", TLSClientConfig: rest.TLSClientConfig{KeyFile: "/dev/zero"}},
		{Host: "https://h", BearerTokenFile: "/dev/zero"},
		{Host: "https://h", BearerTokenFile: filepath.Join(dir, "missing")},
	} {
		_, err := InlineFiles(bad)
		assert.Error(t, err)
	}
}
