package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
)

// TestClientAssertions: the test provider checks client assertions as
// RFC 7523 and Keycloak's authenticators do, so that the plugin's robots
// are tested against a provider that refuses what a strict one refuses.
func TestClientAssertions(t *testing.T) {
	srv, err := NewServer()
	require.NoError(t, err)
	defer srv.Close()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	require.NoError(t, srv.SetClientKey(key.Public()))
	workload, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	srv.TrustFederation(Federation{Issuer: "https://kubernetes.default.svc", Subject: "system:serviceaccount:ci:robot", Keys: []crypto.PublicKey{workload.Public()}})
	tokenURL := srv.URL + "/token"
	post := func(form url.Values) int {
		form.Set("grant_type", "client_credentials")
		form.Set("client_id", srv.ClientID)
		resp, err := http.PostForm(tokenURL, form)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assertion := func(a string) url.Values {
		return url.Values{"client_assertion_type": {AssertionType}, "client_assertion": {a}}
	}
	sign := func(s *oauth.Signer) string {
		a, err := s.Assertion(tokenURL)
		require.NoError(t, err)
		return a
	}
	federatedFor := func(aud, sub string, exp time.Duration) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{Issuer: "https://kubernetes.default.svc", Subject: sub,
			Audience: jwt.ClaimStrings{aud}, ID: "federated-" + sub + exp.String(), ExpiresAt: jwt.NewNumericDate(time.Now().Add(exp))})
		s, err := tok.SignedString(workload)
		require.NoError(t, err)
		return s
	}
	federated := func(sub string, exp time.Duration) string { return federatedFor(srv.URL, sub, exp) }
	good := sign(&oauth.Signer{ClientID: srv.ClientID, Key: key})
	for _, tt := range []struct {
		name       string
		form       url.Values
		wantStatus int
		wantWhy    string
	}{
		{"private_key_jwt", assertion(good), 200, ""},
		{"the same assertion again", assertion(good), 401, "replayed"},
		{"no assertion, no secret", url.Values{}, 401, ""},
		{"expired", assertion(sign(&oauth.Signer{ClientID: srv.ClientID, Key: key, Now: func() time.Time { return time.Now().Add(-time.Hour) }})), 401, "expired"},
		{"another audience", assertion(sign(&oauth.Signer{ClientID: srv.ClientID, Key: key, Audience: "https://elsewhere.example.com"})), 401, "aud"},
		{"a key the client does not have", assertion(sign(&oauth.Signer{ClientID: srv.ClientID, Key: workload})), 401, "no key of the client"},
		{"federated", assertion(federated("system:serviceaccount:ci:robot", 10*time.Minute)), 200, ""},
		{"federated, the same token again (a projected token is read for each request)", assertion(federated("system:serviceaccount:ci:robot", 10*time.Minute)), 200, ""},
		{"federated, for another audience", assertion(federatedFor("https://elsewhere.example.com", "system:serviceaccount:ci:robot", 10*time.Minute)), 401, "aud"},
		{"federated, another subject", assertion(federated("system:serviceaccount:ci:other", 10*time.Minute)), 401, "not the federated subject"},
		{"federated, expired", assertion(federated("system:serviceaccount:ci:robot", -time.Hour)), 401, "expired"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.AssertionRefusals())
			assert.Equal(t, tt.wantStatus, post(tt.form))
			if tt.wantWhy != "" {
				refusals := srv.AssertionRefusals()
				require.Greater(t, len(refusals), before)
				assert.True(t, strings.Contains(refusals[len(refusals)-1], tt.wantWhy), "refused because: %s", refusals[len(refusals)-1])
			}
		})
	}
}
