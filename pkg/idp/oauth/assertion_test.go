package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThumbprintRFC7638: the kid is RFC 7638's thumbprint (§3.1's example
// key and its thumbprint).
func TestThumbprintRFC7638(t *testing.T) {
	const example = `{"kty":"RSA","e":"AQAB","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"}`
	var k jose.JSONWebKey
	require.NoError(t, json.Unmarshal([]byte(example), &k))
	got, err := Thumbprint(k.Key)
	require.NoError(t, err)
	assert.Equal(t, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", got)
}

func TestSignerAssertion(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	cert := selfSigned(t, ecKey)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ecThumb, err := Thumbprint(ecKey.Public())
	require.NoError(t, err)
	rsaThumb, err := Thumbprint(rsaKey.Public())
	require.NoError(t, err)
	const entra = "https://login.example.com/t/oauth2/v2.0/token"
	for _, tt := range []struct {
		name     string
		signer   *Signer
		wantAlg  string
		wantAud  string
		wantX5t  bool
		wantKid  any // nil: no kid in the header
		tokenURL string
	}{
		{"RSA, the issuer as audience", &Signer{ClientID: "robot", Key: rsaKey, Audience: "https://idp.example.com"}, "RS256", "https://idp.example.com", false, rsaThumb, "https://idp.example.com/token"},
		{"EC, the token endpoint as audience", &Signer{ClientID: "robot", Key: ecKey}, "ES256", "https://idp.example.com/token", false, ecThumb, "https://idp.example.com/token"},
		{"a certificate: x5t#S256, no kid", &Signer{ClientID: "robot", Key: ecKey, Certificate: cert}, "ES256", entra, true, nil, entra},
		{"the kid the key is registered with", &Signer{ClientID: "robot", Key: ecKey, KeyID: "robot-1"}, "ES256", "https://idp.example.com/token", false, "robot-1", "https://idp.example.com/token"},
		{"no kid", &Signer{ClientID: "robot", Key: rsaKey, KeyID: NoKeyID}, "RS256", "https://idp.example.com/token", false, nil, "https://idp.example.com/token"},
		{"a certificate and a registered kid", &Signer{ClientID: "robot", Key: ecKey, Certificate: cert, KeyID: "robot-1"}, "ES256", entra, true, "robot-1", entra},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.signer.Now = func() time.Time { return now }
			first, err := tt.signer.Assertion(tt.tokenURL)
			require.NoError(t, err)
			second, err := tt.signer.Assertion(tt.tokenURL)
			require.NoError(t, err)
			var claims jwt.RegisteredClaims
			tok, err := jwt.ParseWithClaims(first, &claims, func(*jwt.Token) (any, error) { return tt.signer.Key.Public(), nil },
				jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithValidMethods([]string{tt.wantAlg}))
			require.NoError(t, err, "verifies with the public key")
			assert.Equal(t, "robot", claims.Issuer)
			assert.Equal(t, "robot", claims.Subject)
			assert.Equal(t, jwt.ClaimStrings{tt.wantAud}, claims.Audience)
			assert.Equal(t, time.Minute, claims.ExpiresAt.Sub(claims.IssuedAt.Time), "short-lived")
			assert.NotEmpty(t, claims.ID)
			var again jwt.RegisteredClaims
			_, _, err = jwt.NewParser().ParseUnverified(second, &again)
			require.NoError(t, err)
			assert.NotEqual(t, claims.ID, again.ID, "a fresh jti each time")
			if tt.wantX5t {
				sum := sha256.Sum256(cert.Raw)
				assert.Equal(t, base64.RawURLEncoding.EncodeToString(sum[:]), tok.Header["x5t#S256"])
			} else {
				assert.NotContains(t, tok.Header, "x5t#S256")
			}
			if tt.wantKid == nil {
				assert.NotContains(t, tok.Header, "kid")
			} else {
				assert.Equal(t, tt.wantKid, tok.Header["kid"])
			}
		})
	}
}

func selfSigned(t *testing.T, key *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "robot"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(ecKey)
	require.NoError(t, err)
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	require.NoError(t, err)
	write := func(name, typ string, der []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	for _, tt := range []struct {
		name, path, wantErr string
	}{
		{"PKCS #8", write("p8.pem", "PRIVATE KEY", pkcs8, 0o600), ""},
		{"PKCS #1", write("p1.pem", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), 0o600), ""},
		{"SEC 1", write("sec1.pem", "EC PRIVATE KEY", sec1, 0o600), ""},
		{"readable by others", write("open.pem", "PRIVATE KEY", pkcs8, 0o644), "readable"},
		{"RSA of 1024 bits", write("weak.pem", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(weak), 0o600), "use 2048 or more"},
		{"a certificate, not a key", write("cert.pem", "CERTIFICATE", []byte("x"), 0o600), `holds a "CERTIFICATE" PEM block, not a private key`},
		{"not PEM", func() string {
			p := filepath.Join(dir, "raw")
			require.NoError(t, os.WriteFile(p, []byte("secret"), 0o600))
			return p
		}(), "holds no PEM block"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k, err := LoadKey(tt.path)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.NotNil(t, k)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\n")
			assert.NotContains(t, err.Error(), "secret", "never what the file holds")
		})
	}
}

// TestAssertionFileReadEachTime: a federated assertion is read at each
// request (a projected token rotates); a file that holds no JWT is refused
// without its content in the error.
func TestAssertionFileReadEachTime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	a := AssertionFile(p)
	require.NoError(t, os.WriteFile(p, []byte("h.p1.s\n"), 0o600))
	got, err := a("https://idp/token")
	require.NoError(t, err)
	assert.Equal(t, "h.p1.s", got)
	require.NoError(t, os.WriteFile(p, []byte("h.p2.s"), 0o600))
	got, err = a("https://idp/token")
	require.NoError(t, err)
	assert.Equal(t, "h.p2.s", got, "read again")
	require.NoError(t, os.WriteFile(p, []byte("super-secret-not-a-jwt"), 0o600))
	_, err = a("https://idp/token")
	require.ErrorContains(t, err, "does not hold one JWT")
	assert.NotContains(t, err.Error(), "super-secret")
}

// TestTokenWithAssertion: a client with an assertion sends it in the form
// body (client_assertion_type, client_assertion, client_id), no secret and
// no Authorization header, and a new one on each attempt (a retry of the
// same jti would be a replay).
func TestTokenWithAssertion(t *testing.T) {
	var mu sync.Mutex
	var forms []url.Values
	var auth []string
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		mu.Lock()
		forms = append(forms, r.PostForm)
		auth = append(auth, r.Header.Get("Authorization"))
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"temporarily_unavailable"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"at","token_type":"Bearer","expires_in":60}`))
	}))
	defer srv.Close()
	n := 0
	c := &Client{TokenURL: srv.URL + "/token", ClientID: "robot", ClientSecret: "never-sent", Retry: RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }},
		Assertion: func(tokenURL string) (string, error) { n++; return "h.assertion" + string(rune('0'+n)) + ".s", nil }}
	tok, err := c.Token(context.Background(), url.Values{"grant_type": {"client_credentials"}}, "")
	require.NoError(t, err)
	assert.Equal(t, "at", tok.AccessToken)
	require.Len(t, forms, 2, "one retry")
	for i, f := range forms {
		assert.Equal(t, AssertionType, f.Get("client_assertion_type"))
		assert.Equal(t, "robot", f.Get("client_id"))
		assert.Empty(t, f.Get("client_secret"))
		assert.Empty(t, auth[i], "no Basic authentication")
	}
	assert.NotEqual(t, forms[0].Get("client_assertion"), forms[1].Get("client_assertion"), "a new assertion each attempt")

	// Revocation carries one too.
	forms = nil
	require.NoError(t, c.Revoke(context.Background(), srv.URL+"/revoke", "rt", "refresh_token"))
	require.Len(t, forms, 1)
	assert.Equal(t, AssertionType, forms[0].Get("client_assertion_type"))
	assert.True(t, strings.HasPrefix(forms[0].Get("client_assertion"), "h.assertion"))
	assert.Empty(t, forms[0].Get("client_secret"))
}

// A revocation endpoint on another origin than the token endpoint's gets
// neither the assertion (its aud names the token endpoint, where it is
// good for its lifetime) nor the secret: nothing reaches it.
func TestRevokeKeepsCredentialsOnTheTokenEndpointsOrigin(t *testing.T) {
	elsewhere := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++ }))
	defer other.Close()
	assertion := func(string) (string, error) { return "h.p.s", nil }
	tests := []struct {
		name      string
		client    Client
		tokenURL  string
		revokeURL string
		wantErr   string
	}{
		{name: "assertion, other origin", client: Client{ClientID: "robot", Assertion: assertion}, tokenURL: "https://idp.example/token", revokeURL: other.URL + "/revoke",
			wantErr: "is not on the token endpoint's origin https://idp.example: refusing to send the client's credentials there"},
		{name: "secret, other origin", client: Client{ClientID: "robot", ClientSecret: "s3cret"}, tokenURL: "https://idp.example/token", revokeURL: other.URL + "/revoke",
			wantErr: "refusing to send the client's credentials there"},
		{name: "assertion, other port", client: Client{ClientID: "robot", Assertion: assertion}, tokenURL: "http://127.0.0.1:1/token", revokeURL: other.URL + "/revoke",
			wantErr: "refusing to send the client's credentials there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client
			c.TokenURL = tt.tokenURL
			err := c.Revoke(context.Background(), tt.revokeURL, "rt", "refresh_token")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.Zero(t, elsewhere, "nothing reached the other origin")
		})
	}
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://idp.example/token", "https://idp.example/revoke", true},
		{"https://IDP.example/token", "https://idp.example:443/revoke", true},
		{"http://127.0.0.1:8080/token", "http://127.0.0.1:8080/revoke", true},
		{"https://idp.example/token", "http://idp.example/revoke", false},
		{"https://idp.example/token", "https://idp.example:8443/revoke", false},
		{"https://idp.example/token", "https://revoke.idp.example/revoke", false},
		{"https://idp.example/token", "://bad", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, sameOrigin(tt.a, tt.b), "%s vs %s", tt.a, tt.b)
	}
}

// TestAssertionFileSomeoneElseCouldSwap: an assertion file another user
// owns, or that others may write, is refused before it is read: whoever
// swaps it chooses whose client the plugin logs in as.
func TestAssertionFileSomeoneElseCouldSwap(t *testing.T) {
	tests := []struct {
		name    string
		mode    os.FileMode
		owner   int // -1: this user
		wantErr string
	}{
		{name: "own, 0600", mode: 0o600, owner: -1},
		{name: "own, 0644 (the kubelet's default mode)", mode: 0o644, owner: -1},
		{name: "group-writable", mode: 0o660, owner: -1, wantErr: "is writable by others: chmod go-w"},
		{name: "world-writable", mode: 0o606, owner: -1, wantErr: "is writable by others"},
		{name: "another user's", mode: 0o644, owner: 65534, wantErr: "belongs to another user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(p, []byte("h.swapped.s"), 0o600))
			require.NoError(t, os.Chmod(p, tt.mode))
			if tt.owner >= 0 {
				if os.Geteuid() != 0 {
					t.Skip("chown to another user needs root; CI runs as root")
				}
				require.NoError(t, os.Chown(p, tt.owner, tt.owner))
			}
			got, err := AssertionFile(p)("https://idp/token")
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, "h.swapped.s", got)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			assert.Empty(t, got)
			assert.NotContains(t, err.Error(), "swapped", "never what the file holds")
		})
	}
}
