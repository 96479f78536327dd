package login

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

func newIdentityPlatform(t *testing.T) (*IdentityPlatform, *oidctest.Server, *idp.GoogleSim) {
	google := oidctest.New(t)
	sim := idp.NewGoogle(t, google.Issuer(), google.ClientID)
	sim.Configure(func(s *idp.GoogleSim) { s.Roles["alice@example.com"] = []string{"cluster-viewer"} })
	gc, _ := newClient(t, google, func(c *Config) {
		c.ExtraScopes = []string{"email"}
		c.ClientSecret = google.ClientSecret
	})
	return &IdentityPlatform{Google: gc, Issuer: sim.Issuer(), APIKey: sim.APIKey, ToolkitURL: sim.URL, SecureTokenURL: sim.URL,
		HTTPClient: http.DefaultClient}, google, sim
}

func TestIdentityPlatformFlow(t *testing.T) {
	p, google, sim := newIdentityPlatform(t)
	e, err := p.Grant(context.Background())
	require.NoError(t, err)
	claims := jwt.MapClaims{}
	_, _, err = jwt.NewParser().ParseUnverified(e.IDToken, claims)
	require.NoError(t, err)
	assert.Equal(t, sim.Issuer(), claims["iss"])
	assert.Equal(t, "demo-project", claims["aud"])
	assert.Equal(t, "alice@example.com", claims["email"])
	assert.Equal(t, []any{"cluster-viewer"}, claims["gcp.iam.roles"])
	assert.Equal(t, credspec.GrantIdentityPlatform, e.GrantType)
	assert.NotEmpty(t, e.RefreshToken)
	assert.Equal(t, 1, google.AuthRequests(), "one Google sign-in")
	assert.Equal(t, 1, sim.Calls("signInWithIdp"))

	e2, err := p.Refresh(context.Background(), e.RefreshToken)
	require.NoError(t, err)
	assert.NotEmpty(t, e2.IDToken)
	assert.Equal(t, 1, sim.Calls("token"))
	assert.Equal(t, 1, google.AuthRequests(), "refresh is silent")
}

func TestIdentityPlatformErrors(t *testing.T) {
	tests := []struct {
		name          string
		mutate        func(*IdentityPlatform, *idp.GoogleSim)
		refresh       string
		wantErrSubstr string
	}{
		{name: "bad API key", mutate: func(p *IdentityPlatform, _ *idp.GoogleSim) { p.APIKey = "wrong" },
			wantErrSubstr: "HTTP 400 API key not valid. Please pass a valid API key.: check --identity-platform-api-key"},
		{name: "disabled user", mutate: func(_ *IdentityPlatform, s *idp.GoogleSim) {
			s.Configure(func(s *idp.GoogleSim) { s.Disabled["alice@example.com"] = true })
		}, wantErrSubstr: "HTTP 400 USER_DISABLED: the user is disabled"},
		{name: "another OAuth client", mutate: func(_ *IdentityPlatform, s *idp.GoogleSim) {
			s.Configure(func(s *idp.GoogleSim) { s.GoogleClient = "other-client" })
		}, wantErrSubstr: "INVALID_IDP_RESPONSE"},
		{name: "tampered signature", mutate: func(_ *IdentityPlatform, s *idp.GoogleSim) { s.SignWithOtherKey(true) },
			wantErrSubstr: "verifying ID token"},
		{name: "unknown refresh token", refresh: "AMf-unknown", wantErrSubstr: "HTTP 400 INVALID_REFRESH_TOKEN: log in again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, sim := newIdentityPlatform(t)
			if tt.mutate != nil {
				tt.mutate(p, sim)
			}
			var err error
			if tt.refresh != "" {
				_, err = p.Refresh(context.Background(), tt.refresh)
			} else {
				_, err = p.Grant(context.Background())
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErrSubstr)
			assert.NotContains(t, err.Error(), "\n")
			assert.NotContains(t, err.Error(), sim.APIKey, "the API key in the URL stays out of errors")
		})
	}
}

func TestIdentityPlatformProject(t *testing.T) {
	assert.Equal(t, "my-project", (&IdentityPlatform{Issuer: "https://securetoken.google.com/my-project"}).Project())
}

// TestUnsignedTokenRefusedWithoutEmulator: the Firebase Auth emulator's
// tokens are unsigned (alg none). Without --identity-platform-emulator they
// are verified against the issuer's keys, and refused; with it, iss, aud and
// exp are still checked. Offline and deterministic: the issuer is the
// simulator's, on loopback.
func TestUnsignedTokenRefusedWithoutEmulator(t *testing.T) {
	p, _, sim := newIdentityPlatform(t)
	unsigned := func(iss string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": iss, "aud": p.Project(), "sub": "u-1",
			"email": "alice@example.com", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
		raw, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		require.NoError(t, err)
		return raw
	}
	_, err := p.entry(context.Background(), unsigned(sim.Issuer()), "rt", "")
	require.Error(t, err, "refused without the emulator flag")
	assert.Contains(t, err.Error(), "verifying ID token")

	p.Emulator = true
	e, err := p.entry(context.Background(), unsigned(sim.Issuer()), "rt", "")
	require.NoError(t, err, "the emulator's token, with the flag")
	assert.NotEmpty(t, e.IDToken)
	_, err = p.entry(context.Background(), unsigned("https://evil.example.com"), "rt", "")
	assert.ErrorContains(t, err, "has iss")
}
