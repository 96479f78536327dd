package linked

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/serve"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/jwtclaims"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/proxy"
)

// TestIdentityPlatformAudience: Identity Platform's tokens carry the
// project ID as aud; a configuration that expects the OAuth client ID
// gets one line naming the fix, and only then.
func TestIdentityPlatformAudience(t *testing.T) {
	const iss = "https://securetoken.google.com/my-project"
	token := func(iss string) *jwtclaims.Token {
		enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
		tok, err := jwtclaims.Decode(enc(map[string]string{"alg": "RS256"}) + "." + enc(map[string]any{"iss": iss, "aud": "my-project"}) + ".sig")
		require.NoError(t, err)
		return tok
	}
	config := func(url string, audiences ...string) *authn.Config {
		l := authn.LegacyFlags{IssuerURL: url, ClientIDs: audiences, UsernameClaim: "sub"}
		cfg, _ := authn.LegacyConfig(l)
		return cfg
	}
	for _, tt := range []struct {
		name string
		tok  *jwtclaims.Token
		cfg  *authn.Config
		want string
	}{
		{"client ID configured", token(iss), config(iss, "123-abc.apps.googleusercontent.com"),
			`Identity Platform tokens carry the project ID "my-project" as aud, but this configuration expects 123-abc.apps.googleusercontent.com (an OAuth client ID?): the API server refuses them; set the audience to "my-project"`},
		{"project configured", token(iss), config(iss, "my-project"), ""},
		{"another issuer", token("https://accounts.google.com"), config("https://accounts.google.com", "x"), ""},
		{"no configuration", token(iss), nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := identityPlatformAudience(tt.tok, tt.cfg)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
		})
	}
}

// TestProxyDefaults: the proxy command's flag defaults, bound in a binary
// that does not link pkg/server/proxy, are pkg/server/proxy's; --token-cache-ttl=0 (or
// the deprecated --token-cache-size=0) turns the cache off (the handler's
// -1; docs/proxy.md: "0 authenticates every request").
func TestProxyDefaults(t *testing.T) {
	for _, tt := range []struct {
		flags []string
		ttl   time.Duration
	}{
		{nil, proxy.DefaultCacheTTL},
		{[]string{"--token-cache-ttl=0"}, -1},
		{[]string{"--token-cache-ttl=2s"}, 2 * time.Second},
		{[]string{"--token-cache-size=0"}, -1},
		{[]string{"--token-cache-size=10"}, proxy.DefaultCacheTTL},
	} {
		c := cmd.NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
		p, _, err := c.Find([]string{"proxy"})
		require.NoError(t, err)
		require.NoError(t, p.ParseFlags(tt.flags))
		ttl, err := p.Flags().GetDuration("token-cache-ttl")
		require.NoError(t, err)
		size, err := p.Flags().GetInt("token-cache-size")
		require.NoError(t, err)
		inflight, err := p.Flags().GetInt("max-requests-inflight")
		require.NoError(t, err)
		assert.Equal(t, proxy.DefaultMaxInFlight, inflight)
		assert.Equal(t, tt.ttl, (&serve.ProxyOptions{TokenCacheTTL: ttl, TokenCacheSize: size}).CacheTTL(), "%q", tt.flags)
	}
}
