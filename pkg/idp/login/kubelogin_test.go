package login

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
)

// The flags kubelogin users rely on, against the in-process provider.

func TestAuthRequestExtraParams(t *testing.T) {
	srv := oidctest.New(t)
	c, _ := newClient(t, srv, func(c *Config) {
		c.AuthRequestExtraParams = map[string]string{"audience": "https://api.example.com", "prompt": "consent"}
	})
	_, err := c.Grant(context.Background())
	require.NoError(t, err)
	p := srv.LastAuthParams()
	assert.Equal(t, "https://api.example.com", p.Get("audience"))
	assert.Equal(t, "consent", p.Get("prompt"))
	assert.Equal(t, "S256", p.Get("code_challenge_method"), "the login's own parameters stay")
}

func TestPKCEMethod(t *testing.T) {
	for _, tt := range []struct {
		name       string
		advertised []string // nil: left out of discovery
		leaveOut   bool
		method     string
		wantPKCE   bool
	}{
		{name: "auto, S256 advertised", advertised: []string{"S256"}, method: credspec.PKCEAuto, wantPKCE: true},
		{name: "auto, nothing advertised", leaveOut: true, method: credspec.PKCEAuto, wantPKCE: true},
		{name: "auto, plain only", advertised: []string{"plain"}, method: credspec.PKCEAuto, wantPKCE: false},
		{name: "no", advertised: []string{"plain"}, method: credspec.PKCENo, wantPKCE: false},
		{name: "S256 forced", advertised: []string{"S256"}, method: credspec.PKCES256, wantPKCE: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := oidctest.New(t)
			if tt.leaveOut {
				srv.SetPKCEMethods(nil)
			} else {
				srv.SetPKCEMethods(tt.advertised)
			}
			c, _ := newClient(t, srv, func(c *Config) { c.PKCEMethod = tt.method })
			_, err := c.Grant(context.Background())
			if !tt.wantPKCE || tt.advertised == nil || contains(tt.advertised, "S256") {
				require.NoError(t, err)
			}
			p := srv.LastAuthParams()
			assert.Equal(t, tt.wantPKCE, p.Get("code_challenge") != "", "code_challenge sent")
		})
	}
}

func contains(l []string, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func TestRequestHeaders(t *testing.T) {
	srv := oidctest.New(t)
	hc, err := NewHTTPClient(HTTPOptions{Headers: map[string]string{"X-Gateway-Key": "k1"}, HeaderHost: strings.TrimPrefix(srv.Issuer(), "http://")})
	require.NoError(t, err)
	c, _ := newClient(t, srv, func(c *Config) {
		c.GrantType, c.ClientSecret, c.HTTPClient = credspec.GrantClientCredentials, srv.ClientSecret, hc
	})
	_, err = c.Grant(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "k1", srv.LastTokenHeader().Get("X-Gateway-Key"))
}

func TestPasswordGrant(t *testing.T) {
	srv := oidctest.New(t)
	c, _ := newClient(t, srv, func(c *Config) {
		c.GrantType, c.Username, c.Password, c.Interactive = credspec.GrantPassword, "alice@example.com", oidctest.Password, false
	})
	e, err := c.Grant(context.Background())
	require.NoError(t, err, "a given password needs no person")
	assert.NotEmpty(t, e.IDToken)
	assert.Equal(t, 1, srv.TokenCalls("password"))

	bad, _ := newClient(t, srv, func(c *Config) {
		c.GrantType, c.Username, c.Password = credspec.GrantPassword, "alice@example.com", "wrong"
	})
	_, err = bad.Grant(context.Background())
	require.ErrorContains(t, err, "answered 401 invalid_grant")

	none, _ := newClient(t, srv, func(c *Config) {
		c.GrantType, c.Username, c.Interactive = credspec.GrantPassword, "alice@example.com", false
	})
	_, err = none.Grant(context.Background())
	require.ErrorIs(t, err, ErrInteractionRequired, "no password and no person")
}

// TestHTTPSLoopbackFixedRedirect: the provider registered
// https://localhost:PORT/callback exactly; the loopback server serves it
// with the given certificate, and after the login the browser goes to
// --open-url-after-authentication.
func TestHTTPSLoopbackFixedRedirect(t *testing.T) {
	srv := oidctest.New(t)
	certFile, keyFile, pool := loopbackCert(t)
	port := testkit.MustFreePort(t)
	var after atomic.Int32
	landing := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { after.Add(1) }))
	defer landing.Close()
	redirect := "https://localhost:" + strconv.Itoa(port) + "/callback"
	browserClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c, _ := newClient(t, srv, func(c *Config) {
		c.RedirectURL, c.LocalServerCert, c.LocalServerKey, c.OpenURLAfterAuthentication = redirect, certFile, keyFile, landing.URL
		c.OpenURL = browserWith(t, browserClient)
	})
	_, err := c.Grant(context.Background())
	require.NoError(t, err)
	assert.Equal(t, redirect, srv.LastAuthParams().Get("redirect_uri"))
	require.Eventually(t, func() bool { return after.Load() == 1 }, 5*time.Second, 20*time.Millisecond, "the browser lands on the given URL")
}

// loopbackCert writes a self-signed certificate for localhost and
// 127.0.0.1, and returns a pool that trusts it.
func loopbackCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestNoRedirectCarriesSecrets: a token endpoint that redirects (307
// replays the body) to another host gets its 3xx reported; the other host
// receives nothing: no client secret, refresh token, bearer or provider
// header. Headers go to the provider's host only.
func TestNoRedirectCarriesSecrets(t *testing.T) {
	var evilHits atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { evilHits.Add(1) }))
	defer evil.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.URL+"/token", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	host := strings.TrimPrefix(redirecting.URL, "http://")
	hc, err := NewHTTPClient(HTTPOptions{Headers: map[string]string{"X-Api-Key": "hdrsecret"}, HeaderHost: host})
	require.NoError(t, err)
	for _, tt := range []struct {
		name   string
		method string
		bearer string
	}{{"secret in the form", oauth.AuthPost, ""}, {"basic", oauth.AuthBasic, ""}, {"bearer (UMA)", "", "svc-token"}} {
		t.Run(tt.name, func(t *testing.T) {
			c := &oauth.Client{HTTPClient: hc, TokenURL: redirecting.URL + "/token", ClientID: "robot", ClientSecret: "SECRET", AuthMethod: tt.method,
				Retry: oauth.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }}}
			_, err := c.Token(context.Background(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"RT"}}, tt.bearer)
			require.ErrorContains(t, err, "answered 307")
			assert.Zero(t, evilHits.Load(), "nothing reached the other host")
		})
	}
	// A GET to another host (not a redirect) does not carry the provider's header.
	var got atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got.Store(r.Header.Get("X-Api-Key") + "|") }))
	defer other.Close()
	resp, err := hc.Get(other.URL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "|", got.Load(), "the provider's header stays with the provider's host")
}
