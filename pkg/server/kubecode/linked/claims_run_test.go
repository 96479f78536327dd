package linked

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/authn/oidcflags"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
)

// TestPredict runs kube-apiserver's real authenticator behind the seam
// (the test issuer's keys): the rules, the signature verdict and the
// identity, for a trusted issuer, a bad signature, and a token whose own
// iss fills the rules (not trusted, not verified).
func TestPredict(t *testing.T) {
	is, err := testissuer.Start()
	require.NoError(t, err)
	t.Cleanup(is.Close)
	mint := func(tamper testissuer.Tamper) string {
		tok, err := is.Mint(is.Claims("sub-1", "kube", time.Hour, map[string]any{"email": "alice@example.com", "email_verified": true, "groups": []any{"dev"}}), tamper)
		require.NoError(t, err)
		return tok
	}
	trusted := kubecode.Authentication{OIDC: oidcflags.Legacy{IssuerURL: is.URL, ClientIDs: []string{"kube"}, CA: is.CAPEM(),
		UsernameClaim: "email", UsernamePrefix: "oidc:", GroupsClaim: "groups", GroupsPrefix: "oidc:"}}
	for _, tt := range []struct {
		name          string
		r             kubecode.PredictRequest
		wantSignature string
		wantVerified  bool
		wantUser      string
		wantRules     string
	}{
		{name: "verified, as predicted", r: kubecode.PredictRequest{Token: mint(testissuer.Valid), Authentication: trusted, Trusted: true},
			wantSignature: "verified against the trusted issuer's keys", wantVerified: true, wantUser: "oidc:alice@example.com", wantRules: `legacy --oidc-* flags: username = "oidc:" + claim "email", groups = "oidc:" + claim "groups"`},
		{name: "a bad signature", r: kubecode.PredictRequest{Token: mint(testissuer.BadSignature), Authentication: trusted, Trusted: true},
			wantSignature: "INVALID: ", wantUser: ""},
		{name: "not checked", r: kubecode.PredictRequest{Token: mint(testissuer.Valid), Authentication: trusted, Trusted: true, SkipVerify: true},
			wantSignature: "not verified: --skip-signature-check", wantUser: "oidc:alice@example.com"},
		{name: "the token's own issuer, not trusted", r: kubecode.PredictRequest{Token: mint(testissuer.Valid), Authentication: kubecode.Authentication{OIDC: oidcflags.Legacy{UsernameClaim: "sub"}}},
			wantSignature: "not verified: no trusted issuer given", wantUser: is.URL + "#sub-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Code{}.Predict(context.Background(), tt.r)
			require.NoError(t, err)
			assert.Contains(t, p.Signature, tt.wantSignature)
			assert.Equal(t, tt.wantVerified, p.SignatureVerified)
			if tt.wantUser != "" {
				assert.Equal(t, tt.wantUser, p.Predicted.Username)
			}
			if tt.wantRules != "" {
				assert.Equal(t, tt.wantRules, p.Rules)
			}
		})
	}
}
