// Package oidctest is an in-process OpenID Connect provider for tests. It
// serves discovery, JWKS, an authorization endpoint that approves at once,
// a token endpoint (authorization_code with PKCE S256, refresh_token,
// client_credentials, device_code), a device authorization endpoint and a
// revocation endpoint, following OpenID Connect Core 1.0, RFC 6749, RFC
// 7636, RFC 8628 and RFC 7009. It
// counts requests and can be told to misbehave, so tests can check what a
// client does with a bad provider.
package oidctest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// Tamper selects a defect in the ID tokens the server issues: the
// signature's are testissuer's, the claims' are added here.
type Tamper = testissuer.Tamper

// Defects a verifier must reject.
const (
	TamperNone               = testissuer.Valid
	TamperAlgNone            = testissuer.AlgNone
	TamperHS256PubKey        = testissuer.HS256PublicKey
	TamperBadSig             = testissuer.BadSignature
	TamperUnknownKid         = testissuer.UnknownKid
	TamperWrongIss    Tamper = "wrong-iss"
	TamperWrongAud    Tamper = "wrong-aud"
	TamperWrongNonce  Tamper = "wrong-nonce"
	TamperExpired     Tamper = "expired"
	TamperNotYetValid Tamper = "nbf-future"
)

// Server is a running test provider.
type Server struct {
	*httptest.Server
	ClientID     string
	ClientSecret string
	Subject      string
	Email        string
	Groups       []string
	// TokenLifetime is the lifetime of issued ID and access tokens.
	TokenLifetime time.Duration
	// AuthorizationEndpoint replaces the discovery document's
	// authorization_endpoint (a hostile provider's).
	AuthorizationEndpoint string
	// DeviceVerificationURI replaces the device authorization answer's
	// verification_uri and verification_uri_complete (a hostile provider).
	DeviceVerificationURI string
	mu                    sync.Mutex
	key                   *rsa.PrivateKey
	otherKey              *rsa.PrivateKey
	tamper                Tamper
	codes                 map[string]authRequest
	issuedCodes           []string
	refreshTokens         map[string]string // token -> scope
	devices               map[string]*deviceRequest
	tokenCalls            map[string]int
	failNext              []failure
	lastScopeByRT         string
	omitIDToken           bool
	rotateRefresh         bool
	offlineNeedsConsent   bool
	authRequests          int
	lastAuthParams        url.Values
	lastDeviceSecret      string
	lastTokenHeader       http.Header
	revocations           []Revocation
	// noRevocation leaves revocation_endpoint out of discovery, as Dex
	// does; revocationStatus, when set, is the revocation endpoint's
	// answer (a provider in trouble: 503).
	noRevocation     bool
	revocationStatus int
	// pkceMethods are discovery's code_challenge_methods_supported; set
	// means advertised (nil: the field is left out).
	pkceMethods []string
	pkceSet     bool
	// assertions authenticate the client without a secret.
	assertions Assertions
}

// SetClientKey registers a public key of the client for private_key_jwt
// (RFC 7523), found by its RFC 7638 thumbprint (the kid the plugin sends).
func (s *Server) SetClientKey(pub crypto.PublicKey) error {
	return s.assertions.SetClientKey(s.ClientID, pub)
}

// TrustFederation registers a federated credential of the client.
func (s *Server) TrustFederation(f Federation) {
	f.ClientID = s.ClientID
	s.assertions.TrustFederation(f)
}

// AssertionRefusals says why each refused client assertion was.
func (s *Server) AssertionRefusals() []string { return s.assertions.Refusals() }

// AssertionsReceived are the client assertions presented, in order.
func (s *Server) AssertionsReceived() []string { return s.assertions.Received() }

// Password is the password grant's password of every user.
const Password = "correct horse battery staple"

// SetPKCEMethods sets discovery's code_challenge_methods_supported (nil
// leaves the field out). Without "S256" in it, the provider does not do
// PKCE: it accepts a code without a challenge, as such providers do.
func (s *Server) SetPKCEMethods(methods []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pkceMethods, s.pkceSet = methods, true
}

// LastTokenHeader is the header of the last token endpoint request.
func (s *Server) LastTokenHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastTokenHeader.Clone()
}

// LastDeviceClientSecret is the client_secret of the last device
// authorization request ("" when the client sent none).
func (s *Server) LastDeviceClientSecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastDeviceSecret
}

type authRequest struct {
	clientID, redirectURI, challenge, nonce, scope string
	// refresh: a refresh token comes with the code's tokens.
	refresh bool
}

type deviceRequest struct {
	scope    string
	approved bool
}

type failure struct {
	status      int
	contentType string
	body        string
	retryAfter  string
	delay       time.Duration // before answering; with status 0, then normally
}

// New starts a provider on 127.0.0.1. It stops with the test.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a provider on 127.0.0.1; the caller closes it.
func NewServer() (*Server, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &Server{
		ClientID: "kube", ClientSecret: "s3cret-client", Subject: "alice-sub", Email: "alice@example.com",
		Groups: []string{"developers"}, TokenLifetime: time.Hour,
		key: key, otherKey: other,
		codes: map[string]authRequest{}, refreshTokens: map[string]string{}, devices: map[string]*deviceRequest{},
		tokenCalls: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", s.discovery)
	mux.HandleFunc("/keys", s.jwks)
	mux.HandleFunc("/auth", s.authorize)
	mux.HandleFunc("/token", s.token)
	mux.HandleFunc("/device/code", s.deviceAuthorize)
	mux.HandleFunc("/revoke", s.revoke)
	// Assign before serving: the handlers read s.URL.
	s.Server = httptest.NewUnstartedServer(mux)
	s.Start()
	return s, nil
}

// Issuer is the issuer URL.
func (s *Server) Issuer() string { return s.URL }

// SetTamper makes the next ID tokens defective.
func (s *Server) SetTamper(t Tamper) { s.mu.Lock(); s.tamper = t; s.mu.Unlock() }

// OmitIDToken makes the token endpoint answer without an ID token.
func (s *Server) OmitIDToken(v bool) { s.mu.Lock(); s.omitIDToken = v; s.mu.Unlock() }

// OfflineNeedsConsent makes the code flow issue a refresh token only for
// the scope offline_access with prompt=consent, as OpenID Connect Core
// §11 has it and oidc-provider does; otherwise it always issues one.
func (s *Server) OfflineNeedsConsent(v bool) { s.mu.Lock(); s.offlineNeedsConsent = v; s.mu.Unlock() }

// RotateRefreshTokens makes each refresh issue a new refresh token.
func (s *Server) RotateRefreshTokens(v bool) { s.mu.Lock(); s.rotateRefresh = v; s.mu.Unlock() }

// FailNext makes the next token endpoint request fail with this answer.
func (s *Server) FailNext(status int, contentType, body, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, failure{status: status, contentType: contentType, body: body, retryAfter: retryAfter})
}

// IssuedCodes lists every authorization code handed out (secret-hygiene
// tests look for them in outputs).
func (s *Server) IssuedCodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issuedCodes...)
}

// SlowNext makes the next token request wait d before its normal answer
// (or until the client gives up).
func (s *Server) SlowNext(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, failure{delay: d})
}

// TokenCalls counts token endpoint requests by grant_type.
func (s *Server) TokenCalls(grant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenCalls[grant]
}

// AuthRequests counts authorization endpoint requests.
func (s *Server) AuthRequests() int { s.mu.Lock(); defer s.mu.Unlock(); return s.authRequests }

// LastAuthParams are the query parameters of the last authorization request.
func (s *Server) LastAuthParams() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAuthParams
}

// LastRefreshScope is the scope parameter of the last refresh request.
func (s *Server) LastRefreshScope() string { s.mu.Lock(); defer s.mu.Unlock(); return s.lastScopeByRT }

// ApproveDevice approves the pending device request whose verification URI
// the client showed (the user_code query parameter of the complete URI).
func (s *Server) ApproveDevice(userCode string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for code, d := range s.devices {
		if code == "dc-"+userCode {
			d.approved = true
			return true
		}
	}
	return false
}

// WriteJSON answers v as JSON with status, not cacheable, as token
// endpoints do (RFC 6749 §5.1). The other simulators (internal/idp) use it too.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// OAuthError answers an OAuth 2.0 error (RFC 6749 §5.2).
func OAuthError(w http.ResponseWriter, status int, code, desc string) {
	WriteJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (s *Server) discovery(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	pkce, pkceSet := s.pkceMethods, s.pkceSet
	s.mu.Unlock()
	doc := map[string]any{
		"issuer":                                s.URL,
		"authorization_endpoint":                s.URL + "/auth",
		"token_endpoint":                        s.URL + "/token",
		"jwks_uri":                              s.URL + "/keys",
		"device_authorization_endpoint":         s.URL + "/device/code",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials", "password", "urn:ietf:params:oauth:grant-type:device_code"},
	}
	if s.AuthorizationEndpoint != "" {
		doc["authorization_endpoint"] = s.AuthorizationEndpoint
	}
	s.mu.Lock()
	noRevocation := s.noRevocation
	s.mu.Unlock()
	if !noRevocation {
		doc["revocation_endpoint"] = s.URL + "/revoke"
	}
	if pkceSet {
		delete(doc, "code_challenge_methods_supported")
		if pkce != nil {
			doc["code_challenge_methods_supported"] = pkce
		}
	}
	WriteJSON(w, 200, doc)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// WriteJWKS answers a JWK set (RFC 7517) holding pub as RS256 key kid.
func WriteJWKS(w http.ResponseWriter, kid string, pub *rsa.PublicKey) {
	WriteJSON(w, 200, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) { WriteJWKS(w, "k1", &s.key.PublicKey) }

// Random is n random bytes, base64url: codes, tokens, IDs.
func Random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b64(b)
}

func random() string { return Random(16) }

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.authRequests++
	s.lastAuthParams = q
	s.mu.Unlock()
	if q.Get("client_id") != s.ClientID {
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	noPKCE := s.pkceSet && !slices.Contains(s.pkceMethods, "S256")
	s.mu.Unlock()
	if !noPKCE && (q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "") {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("redirect_uri") == "" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	code := random()
	s.mu.Lock()
	s.issuedCodes = append(s.issuedCodes, code)
	s.codes[code] = authRequest{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"),
		challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), scope: q.Get("scope"),
		refresh: !s.offlineNeedsConsent || (slices.Contains(strings.Fields(q.Get("scope")), "offline_access") && slices.Contains(strings.Fields(q.Get("prompt")), "consent"))}
	s.mu.Unlock()
	if redirect.String() == "urn:ietf:wg:oauth:2.0:oob" {
		_, _ = fmt.Fprintf(w, "code=%s", code)
		return
	}
	rq := redirect.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// CodeFromOOBPage extracts the code from the page the OOB redirect shows.
func CodeFromOOBPage(body string) string { return strings.TrimPrefix(strings.TrimSpace(body), "code=") }

func (s *Server) clientAuth(r *http.Request) (string, bool) {
	if r.PostForm.Get("client_assertion_type") != "" {
		if _, err := s.assertions.Verify(r.PostForm, s.URL, s.URL+"/token"); err != nil {
			return "", false
		}
		return "(assertion)", true // a confidential client, without a secret
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.ClientID {
		return "", false
	}
	// A public client (no secret presented) is accepted for the code, device
	// and refresh grants, as providers do for PKCE clients.
	return secret, secret == "" || secret == s.ClientSecret
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		OAuthError(w, 400, "invalid_request", "bad form")
		return
	}
	grant := r.PostForm.Get("grant_type")
	s.mu.Lock()
	s.tokenCalls[grant]++
	s.lastTokenHeader = r.Header.Clone()
	var fail *failure
	if len(s.failNext) > 0 {
		fail = &s.failNext[0]
		s.failNext = s.failNext[1:]
	}
	s.mu.Unlock()
	if fail != nil && fail.delay > 0 {
		select {
		case <-time.After(fail.delay):
		case <-r.Context().Done():
			return
		}
		if fail.status == 0 {
			fail = nil
		}
	}
	if fail != nil {
		if fail.retryAfter != "" {
			w.Header().Set("Retry-After", fail.retryAfter)
		}
		w.Header().Set("Content-Type", fail.contentType)
		w.WriteHeader(fail.status)
		_, _ = w.Write([]byte(fail.body))
		return
	}
	secret, ok := s.clientAuth(r)
	if !ok {
		OAuthError(w, 401, "invalid_client", "client authentication failed")
		return
	}
	switch grant {
	case "authorization_code":
		s.mu.Lock()
		req, found := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		s.mu.Unlock()
		if !found {
			OAuthError(w, 400, "invalid_grant", "unknown or used code")
			return
		}
		s.mu.Lock()
		noPKCE := s.pkceSet && !slices.Contains(s.pkceMethods, "S256")
		s.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if b64(sum[:]) != req.challenge && !(noPKCE && req.challenge == "") {
			OAuthError(w, 400, "invalid_grant", "PKCE verification failed")
			return
		}
		if r.PostForm.Get("redirect_uri") != req.redirectURI {
			OAuthError(w, 400, "invalid_grant", "redirect_uri mismatch")
			return
		}
		s.issue(w, req.scope, req.nonce, req.refresh)
	case "password":
		if r.PostForm.Get("username") == "" || r.PostForm.Get("password") != Password {
			OAuthError(w, 401, "invalid_grant", "invalid username or password")
			return
		}
		s.issue(w, r.PostForm.Get("scope"), "", true)
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		s.mu.Lock()
		scope, found := s.refreshTokens[rt]
		s.lastScopeByRT = r.PostForm.Get("scope")
		rotate := s.rotateRefresh
		if found && rotate {
			delete(s.refreshTokens, rt)
		}
		s.mu.Unlock()
		if !found {
			OAuthError(w, 400, "invalid_grant", "refresh token is invalid or expired")
			return
		}
		if asked := r.PostForm.Get("scope"); asked != "" {
			scope = asked
		}
		s.issue(w, scope, "", rotate)
	case "client_credentials":
		if secret == "" {
			OAuthError(w, 401, "invalid_client", "client credentials need a secret")
			return
		}
		s.issue(w, r.PostForm.Get("scope"), "", false)
	case "urn:ietf:params:oauth:grant-type:device_code":
		s.mu.Lock()
		d, found := s.devices[r.PostForm.Get("device_code")]
		s.mu.Unlock()
		switch {
		case !found:
			OAuthError(w, 400, "expired_token", "unknown device code")
		case !d.approved:
			OAuthError(w, 400, "authorization_pending", "")
		default:
			s.issue(w, d.scope, "", true)
		}
	default:
		OAuthError(w, 400, "unsupported_grant_type", grant)
	}
}

func (s *Server) deviceAuthorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("client_id") != s.ClientID {
		OAuthError(w, 400, "invalid_client", "unknown client")
		return
	}
	if secret := r.PostForm.Get("client_secret"); secret != "" && secret != s.ClientSecret {
		OAuthError(w, 401, "invalid_client", "client authentication failed")
		return
	}
	s.mu.Lock()
	s.lastDeviceSecret = r.PostForm.Get("client_secret")
	s.mu.Unlock()
	userCode := strings.ToUpper(random()[:8])
	s.mu.Lock()
	s.devices["dc-"+userCode] = &deviceRequest{scope: r.PostForm.Get("scope")}
	s.mu.Unlock()
	verify, complete := s.URL+"/device", s.URL+"/device?user_code="+userCode
	if s.DeviceVerificationURI != "" {
		verify, complete = s.DeviceVerificationURI, s.DeviceVerificationURI
	}
	WriteJSON(w, 200, map[string]any{
		"device_code": "dc-" + userCode, "user_code": userCode,
		"verification_uri":          verify,
		"verification_uri_complete": complete,
		"expires_in":                300, "interval": 1,
	})
}

// issue answers with an access token, an ID token and, when asked, a
// refresh token.
func (s *Server) issue(w http.ResponseWriter, scope, nonce string, withRefresh bool) {
	now := time.Now()
	s.mu.Lock()
	tamper, omitID := s.tamper, s.omitIDToken
	s.mu.Unlock()
	idToken, err := s.SignIDToken(tamper, nonce, now)
	if err != nil {
		OAuthError(w, 500, "server_error", err.Error())
		return
	}
	resp := map[string]any{
		"access_token": "at-" + random(), "token_type": "Bearer",
		"expires_in": int(s.TokenLifetime.Seconds()), "scope": scope,
	}
	if !omitID {
		resp["id_token"] = idToken
	}
	if withRefresh {
		rt := "rt-" + random()
		s.mu.Lock()
		s.refreshTokens[rt] = scope
		s.mu.Unlock()
		resp["refresh_token"] = rt
	}
	WriteJSON(w, 200, resp)
}

// SignIDToken makes an ID token for the configured user, with a defect.
func (s *Server) SignIDToken(tamper Tamper, nonce string, now time.Time) (string, error) {
	claims := map[string]any{
		"iss": s.URL, "sub": s.Subject, "aud": s.ClientID,
		"iat": now.Unix(), "exp": now.Add(s.TokenLifetime).Unix(),
		"email": s.Email, "email_verified": true, "groups": s.Groups,
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	signature := TamperNone
	switch tamper {
	case TamperWrongIss:
		claims["iss"] = s.URL + "/other"
	case TamperWrongAud:
		claims["aud"] = "someone-else"
	case TamperWrongNonce:
		claims["nonce"] = "not-the-nonce"
	case TamperExpired:
		claims["iat"] = now.Add(-2 * time.Hour).Unix()
		claims["exp"] = now.Add(-time.Hour).Unix()
	case TamperNotYetValid:
		claims["nbf"] = now.Add(time.Hour).Unix()
	default:
		signature = tamper // a defect of the signature
	}
	return testissuer.Sign(claims, signature, "k1", s.key, s.otherKey)
}

// Revocation is one request to the revocation endpoint.
type Revocation struct {
	// Hint is token_type_hint; Kind what the token was ("refresh_token",
	// "access_token", "unknown").
	Hint, Kind string
	// Authenticated says the client authenticated (its secret, or a
	// public client's client_id).
	Authenticated bool
}

// SetRevocation says whether discovery advertises the revocation
// endpoint (Dex does not) and, when status is set, what it answers.
func (s *Server) SetRevocation(advertised bool, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRevocation, s.revocationStatus = !advertised, status
}

// Revocations are the revocation requests so far.
func (s *Server) Revocations() []Revocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.revocations)
}

// revoke is RFC 7009 §2: a POST form with token and an optional
// token_type_hint, from an authenticated client; 200 whether or not the
// token was known (§2.2); a revoked refresh token is refused afterwards.
// Access tokens here are opaque and not recorded, so they are "unknown"
// unless they have the issued form.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		OAuthError(w, 405, "invalid_request", "POST only")
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
		OAuthError(w, 400, "invalid_request", "token is required")
		return
	}
	_, ok := s.clientAuth(r)
	rev := Revocation{Hint: r.PostForm.Get("token_type_hint"), Kind: "unknown", Authenticated: ok}
	if !ok {
		s.mu.Lock()
		s.revocations = append(s.revocations, rev)
		s.mu.Unlock()
		OAuthError(w, 401, "invalid_client", "client authentication failed")
		return
	}
	s.mu.Lock()
	status := s.revocationStatus
	s.mu.Unlock()
	if status != 0 {
		OAuthError(w, status, "temporarily_unavailable", "revocation is down")
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	if _, found := s.refreshTokens[tok]; found {
		delete(s.refreshTokens, tok)
		rev.Kind = "refresh_token"
	} else if strings.HasPrefix(tok, "at-") {
		rev.Kind = "access_token"
	}
	s.revocations = append(s.revocations, rev)
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
