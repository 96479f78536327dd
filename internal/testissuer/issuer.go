// Package testissuer is an OIDC issuer for tests whose tokens the test
// mints with any claims: a discovery document and a JWKS
// (https://openid.net/specs/openid-connect-discovery-1_0.html) over TLS on
// 127.0.0.1, RS256 signatures, and tampered variants that each break
// exactly one property of a valid token.
package testissuer

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Tamper names one way a token is made invalid.
type Tamper string

const (
	Valid Tamper = ""
	// AlgNone is unsigned with "alg": "none".
	AlgNone Tamper = "alg-none"
	// HS256PublicKey is the algorithm-confusion attack: HS256 with the
	// issuer's PEM-encoded public key as the HMAC secret, and the real kid.
	HS256PublicKey Tamper = "hs256-public-key"
	// UnknownKid is signed with the issuer's real key under a kid the JWKS
	// does not list.
	UnknownKid Tamper = "unknown-kid"
	// BadSignature carries the real kid but is signed with another key.
	BadSignature Tamper = "bad-signature"
)

// Issuer serves discovery and keys; Mint signs tokens.
type Issuer struct {
	URL string
	srv *httptest.Server
	mu  sync.Mutex
	key *rsa.PrivateKey
	kid string
	// retired is the key before the last Rotate, still published so that
	// the tokens it signed stay valid until they expire.
	retired    *rsa.PrivateKey
	retiredKid string
	other      *rsa.PrivateKey
	// JWKSFetches counts key set requests.
	JWKSFetches atomic.Int64
	// Down, while set, answers every request 503: the provider's outage.
	Down atomic.Bool
}

const kid = "test-key-1"

// Start runs an issuer on 127.0.0.1; Close stops it.
func Start() (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	is := &Issuer{key: key, kid: kid, other: other}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"authorization_endpoint": is.URL + "/auth", "token_endpoint": is.URL + "/token",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		is.JWKSFetches.Add(1)
		writeJSON(w, is.JWKS())
	})
	is.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if is.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	is.URL = is.srv.URL
	return is, nil
}

// Close stops the server.
func (is *Issuer) Close() { is.srv.Close() }

// UnprefixedMappings are the claim mappings of the proxy's tests: username
// and groups without prefixes (the most exposed mapping: a claim could name
// system: identities), uid from sub, an extra from a tenant claim.
const UnprefixedMappings = `    username: {claim: email, prefix: ""}
    groups: {claim: groups, prefix: ""}
    uid: {claim: sub}
    extra:
    - {key: example.com/tenant, valueExpression: 'has(claims.tenant) ? claims.tenant : ""'}
`

// AuthenticationConfig is an AuthenticationConfiguration
// (apiserver.config.k8s.io/v1) that trusts the issuer for the audience
// "kube", with mappings (YAML under claimMappings, indented by four).
func (is *Issuer) AuthenticationConfig(mappings string) string {
	ca, _ := json.Marshal(string(is.CAPEM()))
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: %q, audiences: [kube], certificateAuthority: %s}
  claimMappings:
%s`, is.URL, ca, mappings)
}

// CAPEM is the issuer's serving certificate, to trust it as a CA.
func (is *Issuer) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw})
}

// PublicKeyPEM is the signing key's public half (PKIX).
func (is *Issuer) PublicKeyPEM() []byte {
	is.mu.Lock()
	defer is.mu.Unlock()
	return publicKeyPEM(&is.key.PublicKey)
}

// Rotate makes a new signing key, under a new kid, the one Mint signs
// with; the previous one stays in the key set (its tokens stay valid until
// they expire), the one before it is dropped, as an issuer rotates keys.
func (is *Issuer) Rotate() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.retired, is.retiredKid = is.key, is.kid
	is.key, is.kid = key, fmt.Sprintf("%s-%d", kid, time.Now().UnixNano())
	return nil
}

func publicKeyPEM(pub *rsa.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// JWKS is the key set document.
func (is *Issuer) JWKS() map[string]any {
	is.mu.Lock()
	defer is.mu.Unlock()
	b64 := base64.RawURLEncoding.EncodeToString
	jwk := func(k *rsa.PrivateKey, id string) map[string]any {
		return map[string]any{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": id, "n": b64(k.N.Bytes()), "e": b64(big(k.E))}
	}
	keys := []map[string]any{jwk(is.key, is.kid)}
	if is.retired != nil {
		keys = append(keys, jwk(is.retired, is.retiredKid))
	}
	return map[string]any{"keys": keys}
}

func big(e int) []byte {
	var b []byte
	for ; e > 0; e >>= 8 {
		b = append([]byte{byte(e)}, b...)
	}
	return b
}

// Claims are a valid token's claims for sub and aud, with iat now and exp
// now+lifetime; extra claims are merged over them.
func (is *Issuer) Claims(sub, aud string, lifetime time.Duration, extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": is.URL, "sub": sub, "aud": aud, "iat": now.Unix(), "exp": now.Add(lifetime).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

// Mint signs claims, tampered as asked.
func (is *Issuer) Mint(claims map[string]any, t Tamper) (string, error) {
	is.mu.Lock()
	key, id := is.key, is.kid
	is.mu.Unlock()
	return Sign(claims, t, id, key, is.other)
}

// Sign signs claims with key (RS256) under kid, tampered as t asks:
// other is the key of BadSignature. Each tamper breaks one property of
// the signature; claim defects are the caller's.
func Sign(claims map[string]any, t Tamper, kid string, key, other *rsa.PrivateKey) (string, error) {
	mc := jwt.MapClaims(claims)
	switch t {
	case Valid:
		return sign(jwt.SigningMethodRS256, kid, mc, key)
	case UnknownKid:
		return sign(jwt.SigningMethodRS256, kid+"-not-in-the-jwks", mc, key)
	case BadSignature:
		return sign(jwt.SigningMethodRS256, kid, mc, other)
	case AlgNone:
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, mc)
		tok.Header["kid"] = kid
		return tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	case HS256PublicKey:
		// Built by hand: golang-jwt would sign it too, but this keeps the
		// exact bytes of the attack visible (HMAC over header.payload with
		// the public key's PEM as the secret).
		enc := base64.RawURLEncoding
		h, _ := json.Marshal(map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid})
		p, err := json.Marshal(claims)
		if err != nil {
			return "", err
		}
		signing := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
		mac := hmac.New(sha256.New, publicKeyPEM(&key.PublicKey))
		mac.Write([]byte(signing))
		return signing + "." + enc.EncodeToString(mac.Sum(nil)), nil
	}
	return "", fmt.Errorf("unknown tamper %q", t)
}

func sign(m jwt.SigningMethod, k string, c jwt.MapClaims, key *rsa.PrivateKey) (string, error) {
	tok := jwt.NewWithClaims(m, c)
	tok.Header["kid"] = k
	return tok.SignedString(key)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
