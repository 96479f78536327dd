package authn

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

func startIssuer(t testing.TB) *testissuer.Issuer {
	t.Helper()
	is, err := testissuer.Start()
	require.NoError(t, err)
	t.Cleanup(is.Close)
	return is
}

func newAuthn(t testing.TB, opts Options) *Authenticator {
	t.Helper()
	a, err := New(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.WaitReady(ctx))
	return a
}

func TestLoadConfigRefusesWhatKubeAPIServerRefuses(t *testing.T) {
	tests := []struct {
		name, yaml, wantErrSubstr string
	}{
		{name: "v1 ok", yaml: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://issuer.example, audiences: [k]}
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {expression: 'dyn(claims.groups).map(g, "oidc:" + g)'}`},
		{name: "v1beta1 ok", yaml: `apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://issuer.example, audiences: [k]}
  claimMappings: {username: {claim: email, prefix: ""}}`},
		{name: "untyped groups.map does not compile", wantErrSubstr: "cannot be range of a comprehension", yaml: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://issuer.example, audiences: [k]}
  claimMappings:
    username: {claim: sub, prefix: ""}
    groups: {expression: 'claims.groups.map(g, "oidc:" + g)'}`},
		{name: "http issuer", wantErrSubstr: "https", yaml: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: http://issuer.example, audiences: [k]}
  claimMappings: {username: {claim: sub, prefix: ""}}`},
		{name: "username claim without prefix", wantErrSubstr: "prefix", yaml: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://issuer.example, audiences: [k]}
  claimMappings: {username: {claim: sub}}`},
		{name: "unknown field (strict)", wantErrSubstr: "unknown field", yaml: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://issuer.example, audiences: [k], audience: x}
  claimMappings: {username: {claim: sub, prefix: ""}}`},
		{name: "two audiences without MatchAny", wantErrSubstr: "audienceMatchPolicy", yaml: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://issuer.example, audiences: [a, b]}
  claimMappings: {username: {claim: sub, prefix: ""}}`},
		{name: "not a config", wantErrSubstr: "decoding", yaml: `apiVersion: v1
kind: ConfigMap`},
		{name: "empty", wantErrSubstr: "empty", yaml: "  \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig([]byte(tt.yaml))
			if tt.wantErrSubstr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErrSubstr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, cfg.JWT, 1)
		})
	}
}

func TestLegacyFlagsConvertAsKubeAPIServer(t *testing.T) {
	is := startIssuer(t)
	claims := is.Claims("u-1", "kube", time.Hour, map[string]any{"email": "a@example.com", "email_verified": true, "groups": []any{"dev", "ops"}})
	tok, err := is.Mint(claims, testissuer.Valid)
	require.NoError(t, err)
	tests := []struct {
		name         string
		flags        LegacyFlags
		wantUser     string
		wantGroups   []string
		wantErrSubst string
	}{
		{name: "sub gets the issuer prefix", flags: LegacyFlags{}, wantUser: is.URL + "#u-1"},
		{name: "email gets no prefix", flags: LegacyFlags{UsernameClaim: "email"}, wantUser: "a@example.com"},
		{name: "dash means none", flags: LegacyFlags{UsernamePrefix: "-"}, wantUser: "u-1"},
		{name: "explicit prefix and groups", flags: LegacyFlags{UsernameClaim: "email", UsernamePrefix: "oidc:", GroupsClaim: "groups", GroupsPrefix: "g:"},
			wantUser: "oidc:a@example.com", wantGroups: []string{"g:dev", "g:ops"}},
		{name: "required claim missing", flags: LegacyFlags{RequiredClaims: map[string]string{"hd": "example.com"}}, wantErrSubst: "hd"},
		{name: "wrong client id", flags: LegacyFlags{ClientIDs: []string{"other"}}, wantErrSubst: "aud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.flags
			f.IssuerURL = is.URL
			if f.ClientIDs == nil {
				f.ClientIDs = []string{"kube"}
			}
			f.CA = is.CAPEM()
			cfg, algs := LegacyConfig(f)
			a := newAuthn(t, Options{Config: cfg, SigningAlgs: algs})
			u, err := a.Authenticate(context.Background(), tok)
			if tt.wantErrSubst != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErrSubst)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantUser, u.GetName())
			assert.Equal(t, tt.wantGroups, u.GetGroups())
		})
	}
}

// Every tampered token is refused, and each for its own reason.
func TestTamperedTokensRefused(t *testing.T) {
	is := startIssuer(t)
	cfg, algs := LegacyConfig(LegacyFlags{IssuerURL: is.URL, ClientIDs: []string{"kube"}, CA: is.CAPEM(), UsernamePrefix: "-"})
	a := newAuthn(t, Options{Config: cfg, SigningAlgs: algs})
	valid := is.Claims("u-1", "kube", time.Hour, nil)
	tests := []struct {
		name          string
		claims        map[string]any
		tamper        testissuer.Tamper
		wantErrSubstr string
	}{
		{name: "alg none", claims: valid, tamper: testissuer.AlgNone, wantErrSubstr: "unsupported algorithm"},
		{name: "HS256 keyed with the public key", claims: valid, tamper: testissuer.HS256PublicKey, wantErrSubstr: "unsupported algorithm"},
		{name: "unknown kid", claims: valid, tamper: testissuer.UnknownKid, wantErrSubstr: "signature"},
		{name: "bad signature", claims: valid, tamper: testissuer.BadSignature, wantErrSubstr: "signature"},
		{name: "wrong audience", claims: is.Claims("u-1", "other", time.Hour, nil), wantErrSubstr: "aud"},
		{name: "expired", claims: is.Claims("u-1", "kube", -time.Minute, nil), wantErrSubstr: "expired"},
		{name: "nbf in the future", claims: is.Claims("u-1", "kube", time.Hour, map[string]any{"nbf": time.Now().Add(10 * time.Minute).Unix()}), wantErrSubstr: "nbf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := is.Mint(tt.claims, tt.tamper)
			require.NoError(t, err)
			_, err = a.Authenticate(context.Background(), tok)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErrSubstr)
		})
	}
	t.Run("the valid token passes", func(t *testing.T) {
		tok, err := is.Mint(valid, testissuer.Valid)
		require.NoError(t, err)
		u, err := a.Authenticate(context.Background(), tok)
		require.NoError(t, err)
		assert.Equal(t, "u-1", u.GetName())
	})
	t.Run("a token of another issuer is no match", func(t *testing.T) {
		tok, err := is.Mint(is.Claims("u-1", "kube", time.Hour, map[string]any{"iss": "https://elsewhere.example"}), testissuer.Valid)
		require.NoError(t, err)
		_, err = a.Authenticate(context.Background(), tok)
		assert.ErrorIs(t, err, ErrNoAuthenticator)
	})
}

func TestStaticAndUnverifiedKeys(t *testing.T) {
	is := startIssuer(t)
	cfg, algs := LegacyConfig(LegacyFlags{IssuerURL: is.URL, ClientIDs: []string{"kube"}, UsernamePrefix: "-"})
	good, err := is.Mint(is.Claims("u-1", "kube", time.Hour, nil), testissuer.Valid)
	require.NoError(t, err)
	forged, err := is.Mint(is.Claims("u-1", "kube", time.Hour, nil), testissuer.BadSignature)
	require.NoError(t, err)
	expired, err := is.Mint(is.Claims("u-1", "kube", -time.Minute, nil), testissuer.BadSignature)
	require.NoError(t, err)
	jwks, _ := json.Marshal(is.JWKS())
	for name, keys := range map[string][]byte{"pem": is.PublicKeyPEM(), "jwks": jwks} {
		t.Run(name, func(t *testing.T) {
			before := is.JWKSFetches.Load()
			a := newAuthn(t, Options{Config: cfg, SigningAlgs: algs, Keys: KeysStatic, StaticKeys: keys})
			u, err := a.Authenticate(context.Background(), good)
			require.NoError(t, err)
			assert.Equal(t, "u-1", u.GetName())
			_, err = a.Authenticate(context.Background(), forged)
			assert.ErrorContains(t, err, "signature")
			assert.Equal(t, before, is.JWKSFetches.Load(), "static keys: the issuer's JWKS is never fetched")
		})
	}
	t.Run("unverified checks all but the signature", func(t *testing.T) {
		a := newAuthn(t, Options{Config: cfg, SigningAlgs: algs, Keys: KeysUnverified})
		u, err := a.Authenticate(context.Background(), forged)
		require.NoError(t, err)
		assert.Equal(t, "u-1", u.GetName())
		_, err = a.Authenticate(context.Background(), expired)
		assert.ErrorContains(t, err, "expired")
	})
	t.Run("static keys for two issuers refused", func(t *testing.T) {
		two, _ := LegacyConfig(LegacyFlags{IssuerURL: is.URL, ClientIDs: []string{"kube"}, UsernamePrefix: "-"})
		other, _ := LegacyConfig(LegacyFlags{IssuerURL: "https://b.example", ClientIDs: []string{"kube"}, UsernamePrefix: "-"})
		two.JWT = append(two.JWT, other.JWT...)
		_, err := New(context.Background(), Options{Config: two, Keys: KeysStatic, StaticKeys: is.PublicKeyPEM()})
		assert.ErrorContains(t, err, "static signing keys serve one issuer")
	})
	t.Run("bad static keys", func(t *testing.T) {
		for _, k := range []string{"", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", `{"keys": []}`} {
			_, err := New(context.Background(), Options{Config: cfg, Keys: KeysStatic, StaticKeys: []byte(k)})
			assert.Error(t, err, "%q", k)
		}
	})
}
