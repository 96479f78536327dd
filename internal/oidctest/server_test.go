package oidctest

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTamperFixtures: each tampered ID token breaks exactly the one property
// its name says, so a test that sees it refused learns that property is
// checked.
func TestTamperFixtures(t *testing.T) {
	s := New(t)
	now := time.Now()
	parse := func(tamper Tamper, key any) (*jwt.Token, error) {
		raw, err := s.SignIDToken(tamper, "n", now)
		require.NoError(t, err)
		return jwt.NewParser(jwt.WithValidMethods([]string{"RS256", "HS256"})).Parse(raw, func(*jwt.Token) (any, error) { return key, nil })
	}
	pub := &s.key.PublicKey

	tok, err := parse(TamperUnknownKid, pub)
	require.NoError(t, err, "unknown kid: the real key's valid signature")
	assert.NotEqual(t, "k1", tok.Header["kid"], "unknown kid: only the kid differs")

	tok, err = parse(TamperBadSig, pub)
	require.Error(t, err, "bad signature: the real key does not verify it")
	assert.Equal(t, "k1", tok.Header["kid"], "bad signature: under the real kid")

	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok, err = parse(TamperHS256PubKey, pemKey)
	require.NoError(t, err, "algorithm confusion: HMAC keyed with the PEM public key, as a confused verifier would hold it")
	assert.Equal(t, "HS256", tok.Method.Alg())

	tok, err = parse(TamperNone, pub)
	require.NoError(t, err)
	assert.Equal(t, "k1", tok.Header["kid"])
}
