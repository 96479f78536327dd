package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/safefile"
)

// AssertionType is RFC 7523's client_assertion_type: the client
// authenticates with a JWT instead of a secret.
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Assertion makes the client assertion of one request to the token
// endpoint tokenURL, a new one at each call: a signed assertion has a
// fresh jti (a provider refuses one it has seen), a federated one is read
// again (a projected service account token rotates).
type Assertion func(tokenURL string) (string, error)

// params adds the assertion of a request to tokenURL to form.
func (a Assertion) params(tokenURL string, form map[string][]string) error {
	s, err := a(tokenURL)
	if err != nil {
		return err
	}
	form["client_assertion_type"] = []string{AssertionType}
	form["client_assertion"] = []string{s}
	return nil
}

// Signer signs private_key_jwt client assertions (RFC 7523 §3, OpenID
// Connect Core §9): iss and sub the client, aud Audience (the token
// endpoint's URL when empty), a random jti, iat now and exp Lifetime later;
// the header names the key as KeyID says, and its certificate by x5t#S256
// when Certificate is set, as Entra ID wants.
type Signer struct {
	ClientID    string
	Key         crypto.Signer
	Certificate *x509.Certificate
	// KeyID is the header's kid: "" for the key's RFC 7638 thumbprint (none
	// when Certificate is set: x5t#S256 names the key), NoKeyID for none,
	// or the kid the key is registered with at the provider.
	KeyID    string
	Audience string
	// Lifetime is the assertion's (default 60 s: one request's).
	Lifetime time.Duration
	Now      func() time.Time
}

// Assertion signs one assertion for tokenURL.
func (s *Signer) Assertion(tokenURL string) (string, error) {
	method, err := signingMethod(s.Key)
	if err != nil {
		return "", err
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	lifetime := s.Lifetime
	if lifetime == 0 {
		lifetime = time.Minute
	}
	aud := s.Audience
	if aud == "" {
		aud = tokenURL
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	tok := jwt.NewWithClaims(method, jwt.RegisteredClaims{
		Issuer: s.ClientID, Subject: s.ClientID, Audience: jwt.ClaimStrings{aud},
		ID: base64.RawURLEncoding.EncodeToString(jti), IssuedAt: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(lifetime)),
	})
	if s.Certificate != nil {
		sum := sha256.Sum256(s.Certificate.Raw)
		tok.Header["x5t#S256"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	switch {
	case s.KeyID == NoKeyID:
	case s.KeyID != "":
		tok.Header["kid"] = s.KeyID
	case s.Certificate == nil:
		kid, err := Thumbprint(s.Key.Public())
		if err != nil {
			return "", err
		}
		tok.Header["kid"] = kid
	}
	signed, err := tok.SignedString(s.Key)
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return signed, nil
}

// NoKeyID as Signer.KeyID leaves kid out of the header: for a provider
// that tries every key the client registered.
const NoKeyID = "none"

// Thumbprint is the RFC 7638 SHA-256 thumbprint of a public key, base64url:
// the kid a provider finds the key by in the client's JWKS.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	t, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("the key's thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(t), nil
}

func signingMethod(key crypto.Signer) (jwt.SigningMethod, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("the client key is RSA of %d bits: use 2048 or more", k.N.BitLen())
		}
		return jwt.SigningMethodRS256, nil
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return jwt.SigningMethodES256, nil
		case elliptic.P384():
			return jwt.SigningMethodES384, nil
		case elliptic.P521():
			return jwt.SigningMethodES512, nil
		}
	}
	return nil, errors.New("the client key is neither RSA nor ECDSA on P-256, P-384 or P-521")
}

// maxKeyFile bounds the key, certificate and assertion files read.
const maxKeyFile = 64 << 10

// LoadKey reads the client's private key from a PEM file readable by its
// owner alone (PKCS #8, PKCS #1 or SEC 1).
func LoadKey(path string) (crypto.Signer, error) {
	b, _, err := safefile.ReadRegular("client key file", path, maxKeyFile, safefile.ReadOptions{Rule: safefile.Secret})
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("client key file %s holds no PEM block: give a PEM private key (RSA or EC)", path)
	}
	var key any
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("client key file %s holds a %q PEM block, not a private key", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("client key file %s: %w", path, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("client key file %s: not a signing key", path)
	}
	if _, err := signingMethod(signer); err != nil {
		return nil, fmt.Errorf("client key file %s: %w", path, err)
	}
	return signer, nil
}

// LoadCertificate reads the client key's certificate (PEM).
func LoadCertificate(path string) (*x509.Certificate, error) {
	b, _, err := safefile.ReadRegular("client certificate file", path, maxKeyFile, safefile.ReadOptions{})
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("client certificate file %s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

// AssertionFile is an Assertion read from path at each request: a
// federated credential someone else issues and renews (a projected service
// account token, a CI job's OIDC token). The file must hold one JWT; what
// it holds is never printed.
func AssertionFile(path string) Assertion {
	return func(string) (string, error) {
		b, _, err := safefile.ReadRegular("client assertion file", path, maxKeyFile,
			safefile.ReadOptions{Rule: safefile.Issued})
		if err != nil {
			return "", err
		}
		s := strings.TrimSpace(string(b))
		if parts := strings.Split(s, "."); len(parts) != 3 || strings.ContainsAny(s, " \t\r\n") {
			return "", fmt.Errorf("client assertion file %s does not hold one JWT (header.payload.signature)", path)
		}
		return s, nil
	}
}
