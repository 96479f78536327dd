package inspect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func jwtOf(t *testing.T, claims map[string]any) *Token {
	seg := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	tok, err := DecodeJWT(seg(map[string]any{"alg": "RS256", "kid": "k"}) + "." + seg(claims) + ".sig")
	require.NoError(t, err)
	return tok
}

func ptr(s string) *string { return &s }

const iss = "https://dex.example.com"

func TestPredictLegacy(t *testing.T) {
	claims := map[string]any{"iss": iss, "aud": "kube", "sub": "CgVhbGljZQ", "email": "alice@example.com", "email_verified": true, "groups": []any{"dev", "ops"}}
	tests := []struct {
		name         string
		claims       map[string]any
		rules        LegacyRules
		wantUser     string
		wantGroups   []string
		wantProblems []string
	}{
		// kubernetes.io/docs: "If the claim is not email, the username is prefixed with the issuer URL and #".
		{name: "default: sub with the issuer# prefix", rules: LegacyRules{IssuerURL: iss, ClientID: "kube"}, wantUser: iss + "#CgVhbGljZQ"},
		{name: "email: no prefix", rules: LegacyRules{IssuerURL: iss, UsernameClaim: "email"}, wantUser: "alice@example.com"},
		{name: "prefix -: none", rules: LegacyRules{IssuerURL: iss, UsernamePrefix: ptr("-")}, wantUser: "CgVhbGljZQ"},
		{name: "explicit prefix and groups prefix", rules: LegacyRules{IssuerURL: iss, UsernameClaim: "email", UsernamePrefix: ptr("oidc:"), GroupsClaim: "groups", GroupsPrefix: "oidc:"},
			wantUser: "oidc:alice@example.com", wantGroups: []string{"oidc:dev", "oidc:ops"}},
		{name: "string groups claim", claims: map[string]any{"iss": iss, "sub": "x", "groups": "dev"}, rules: LegacyRules{IssuerURL: iss, UsernamePrefix: ptr("-"), GroupsClaim: "groups"},
			wantUser: "x", wantGroups: []string{"dev"}},
		{name: "missing groups claim", claims: map[string]any{"iss": iss, "sub": "x"}, rules: LegacyRules{IssuerURL: iss, UsernamePrefix: ptr("-"), GroupsClaim: "groups"},
			wantUser: "x", wantProblems: []string{`the token has no "groups" claim`}},
		{name: "unverified email", claims: map[string]any{"iss": iss, "email": "a@b", "email_verified": false}, rules: LegacyRules{IssuerURL: iss, UsernameClaim: "email"},
			wantUser: "a@b", wantProblems: []string{"email_verified is not true"}},
		{name: "wrong issuer and audience", rules: LegacyRules{IssuerURL: "https://other", ClientID: "other", UsernamePrefix: ptr("-")},
			wantUser: "CgVhbGljZQ", wantProblems: []string{`is not --oidc-issuer-url "https://other"`, `does not hold --oidc-client-id "other"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.claims
			if c == nil {
				c = claims
			}
			id := PredictLegacy(jwtOf(t, c), tt.rules)
			assert.Equal(t, tt.wantUser, id.Username)
			assert.Equal(t, tt.wantGroups, id.Groups)
			require.Len(t, id.Problems, len(tt.wantProblems), "%v", id.Problems)
			for i, p := range tt.wantProblems {
				assert.Contains(t, id.Problems[i], p)
			}
		})
	}
}

func TestPredictStructured(t *testing.T) {
	cfg, err := ParseAuthenticationConfiguration([]byte(`apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://dex.example.com", audiences: [kube, robot], audienceMatchPolicy: MatchAny}
  claimValidationRules:
  - {claim: hd, requiredValue: example.com}
  claimMappings:
    username: {claim: email, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
- issuer: {url: "https://keycloak.example.com", audiences: [robot]}
  claimValidationRules:
  - {expression: "claims.email_verified == true", message: "email must be verified"}
  claimMappings:
    username: {expression: '"kc:" + claims.email'}
    groups: {expression: 'claims.roles'}
  userValidationRules:
  - {expression: "!user.username.startsWith('kc:system')", message: "no system users"}
`))
	require.NoError(t, err)
	ctx := context.Background()
	id := PredictStructured(ctx, jwtOf(t, map[string]any{"iss": iss, "aud": []any{"robot"}, "email": "alice@example.com", "groups": []any{"dev"}, "hd": "example.com"}), cfg)
	assert.Equal(t, Identity{Username: "oidc:alice@example.com", Groups: []string{"oidc:dev"}}, id)

	id = PredictStructured(ctx, jwtOf(t, map[string]any{"iss": iss, "aud": "kube", "email": "alice@example.com", "hd": "evil.com"}), cfg)
	assert.Contains(t, id.Problems[0], `claim validation rule fails: hd must be "example.com"`)
	assert.Contains(t, id.Problems[1], `no "groups" claim`)

	// CEL, evaluated as the API server does.
	kc := "https://keycloak.example.com"
	id = PredictStructured(ctx, jwtOf(t, map[string]any{"iss": kc, "aud": "robot", "email": "bob@example.com", "email_verified": true, "roles": []any{"admin", "dev"}}), cfg)
	assert.Equal(t, Identity{Username: "kc:bob@example.com", Groups: []string{"admin", "dev"}}, id)
	id = PredictStructured(ctx, jwtOf(t, map[string]any{"iss": kc, "aud": "robot", "email": "bob@example.com", "email_verified": false}), cfg)
	require.Len(t, id.Problems, 2, "%v", id.Problems)
	assert.Contains(t, id.Problems[1], "groups mapping: evaluating \"claims.roles\"", "no roles claim")
	assert.Contains(t, id.Problems[0], "claim validation rule fails: claims.email_verified == true (email must be verified)")
	id = PredictStructured(ctx, jwtOf(t, map[string]any{"iss": kc, "aud": "robot", "email": "system@x", "email_verified": true, "roles": []any{}}), cfg)
	require.Len(t, id.Problems, 1, "%v", id.Problems)
	assert.Contains(t, id.Problems[0], "user validation rule fails: !user.username.startsWith('kc:system') (no system users)")
	id = PredictStructured(ctx, jwtOf(t, map[string]any{"iss": kc, "aud": "robot", "email_verified": true, "roles": []any{}}), cfg)
	assert.Contains(t, id.Problems[0], "username mapping: evaluating")

	id = PredictStructured(ctx, jwtOf(t, map[string]any{"iss": "https://unknown"}), cfg)
	assert.Contains(t, id.Problems[0], `no jwt authenticator of the configuration has the issuer "https://unknown"`)

	_, err = ParseAuthenticationConfiguration([]byte("kind: Pod\napiVersion: v1\n"))
	require.ErrorContains(t, err, "not an AuthenticationConfiguration")
}

func TestCompare(t *testing.T) {
	assert.Empty(t, Compare(Identity{Username: "u", Groups: []string{"g"}}, "u", []string{"g", "system:authenticated"}))
	assert.Equal(t, []string{
		`username: predicted "u", the API server says "oidc:u"`,
		`group "g" predicted, the API server does not report it`,
		`group "oidc:g" reported by the API server, not predicted from the token`,
	}, Compare(Identity{Username: "u", Groups: []string{"g"}}, "oidc:u", []string{"oidc:g", "system:authenticated"}))
}

func TestDecodeJWTErrors(t *testing.T) {
	for in, want := range map[string]string{"abc": "1 parts separated by dots, want 3", "a.b.c": "not base64url", "e30.YQ.c": "not a JSON object"} {
		_, err := DecodeJWT(in)
		assert.ErrorContains(t, err, want, in)
	}
}

func TestCELCompileErrorsAreOneLine(t *testing.T) {
	_, err := celStrings(context.Background(), `claims.roles.map(r, "x" + r)`, map[string]any{"roles": []any{"a"}})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "cannot be range of a comprehension", "the API server rejects it too: claims are map(string, any)")
}
