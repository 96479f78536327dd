package cmd

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/authn"
)

// TestIdentityPlatformAudience: Identity Platform's tokens carry the
// project ID as aud; a configuration that expects the OAuth client ID
// gets one line naming the fix, and only then.
func TestIdentityPlatformAudience(t *testing.T) {
	const iss = "https://securetoken.google.com/my-project"
	token := func(iss string) *authn.Token {
		enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
		tok, err := authn.DecodeJWT(enc(map[string]string{"alg": "RS256"}) + "." + enc(map[string]any{"iss": iss, "aud": "my-project"}) + ".sig")
		require.NoError(t, err)
		return tok
	}
	config := func(url string, audiences ...string) *authn.Config {
		l := authn.LegacyFlags{IssuerURL: url, ClientIDs: audiences, UsernameClaim: "sub"}
		cfg, _ := l.Config()
		return cfg
	}
	for _, tt := range []struct {
		name string
		tok  *authn.Token
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
