package idp

// Google Cloud Identity Platform (Firebase Auth), as documented in
//   - Identity Toolkit REST API v1, accounts.signInWithIdp:
//     POST https://identitytoolkit.googleapis.com/v1/accounts:signInWithIdp?key=API_KEY,
//     JSON {postBody, requestUri, returnSecureToken, returnIdpCredential, tenantId} →
//     {idToken, refreshToken, expiresIn (a string of seconds), localId, email, providerId, ...};
//   - Secure Token API v1, token: POST https://securetoken.googleapis.com/v1/token?key=API_KEY,
//     form grant_type=refresh_token&refresh_token=... → {id_token, refresh_token,
//     expires_in (a string), token_type, user_id, project_id};
//   - "Verify ID tokens": issuer https://securetoken.google.com/PROJECT_ID, audience
//     PROJECT_ID, RS256 with the keys published for the issuer; custom claims (here
//     gcp.iam.roles) at the top level;
//   - errors: {"error": {"code", "message", "status", "details"/"errors"}}, the message
//     starting with the reason (INVALID_IDP_RESPONSE, USER_DISABLED, INVALID_REFRESH_TOKEN,
//     TOKEN_EXPIRED); a bad key: 400 "API key not valid. Please pass a valid API key." with
//     reason API_KEY_INVALID.
//
// The securetoken issuer of project P is served at {URL}/P. What a real
// Identity Toolkit checks of the Google ID token in postBody (Google's
// signature) is reduced here to its issuer, audience and expiry.

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
)

// GoogleSim is a running Identity Platform simulator.
type GoogleSim struct {
	*httptest.Server
	Project      string
	APIKey       string
	GoogleIssuer string
	GoogleClient string
	// Roles are the gcp.iam.roles custom claims by email.
	Roles    map[string][]string
	Disabled map[string]bool

	key, otherKey *rsa.PrivateKey
	mu            sync.Mutex
	refresh       map[string]string // refresh token -> email
	calls         map[string]int
	tamper        bool
}

// NewGoogle starts a simulator for project "demo-project" that trusts Google
// ID tokens of googleIssuer for googleClient; it stops with the test.
func NewGoogle(t testing.TB, googleIssuer, googleClient string) *GoogleSim {
	t.Helper()
	s := NewGoogleSim(googleIssuer, googleClient)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// NewGoogleSim returns an unstarted simulator (Start or StartTLS it).
func NewGoogleSim(googleIssuer, googleClient string) *GoogleSim {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	s := &GoogleSim{Project: "demo-project", APIKey: "AIza-test-key", GoogleIssuer: googleIssuer, GoogleClient: googleClient,
		Roles: map[string][]string{}, Disabled: map[string]bool{}, key: key, otherKey: other,
		refresh: map[string]string{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/accounts:signInWithIdp", s.signInWithIdp)
	mux.HandleFunc("/v1/token", s.token)
	mux.HandleFunc("/", s.issuer)
	s.Server = httptest.NewUnstartedServer(mux)
	return s
}

// Issuer is the securetoken issuer of the project.
func (s *GoogleSim) Issuer() string { return s.URL + "/" + s.Project }

// Calls counts signInWithIdp and token requests.
func (s *GoogleSim) Calls(kind string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[kind] }

// Configure changes settings while serving.
func (s *GoogleSim) Configure(f func(*GoogleSim)) { s.mu.Lock(); defer s.mu.Unlock(); f(s) }

// SignWithOtherKey makes the next tokens carry a signature no published key verifies.
func (s *GoogleSim) SignWithOtherKey(v bool) { s.mu.Lock(); s.tamper = v; s.mu.Unlock() }

func googleError(w http.ResponseWriter, code int, message, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": message, "status": "INVALID_ARGUMENT",
		"errors": []map[string]any{{"message": message, "domain": "global", "reason": reason}},
	}})
}

func (s *GoogleSim) issuer(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/" + s.Project + "/.well-known/openid-configuration":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": s.Issuer(), "jwks_uri": s.URL + "/" + s.Project + "/jwks",
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	case "/" + s.Project + "/jwks":
		oidctest.WriteJWKS(w, "st1", &s.key.PublicKey)
	default:
		http.NotFound(w, r)
	}
}

func (s *GoogleSim) keyOK(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Query().Get("key") != s.APIKey {
		googleError(w, 400, "API key not valid. Please pass a valid API key.", "API_KEY_INVALID")
		return false
	}
	return true
}

// idToken signs a securetoken ID token for email.
func (s *GoogleSim) idToken(email, tenant string) (string, error) {
	now := time.Now()
	s.mu.Lock()
	roles, key := s.Roles[email], s.key
	if s.tamper {
		key = s.otherKey
	}
	s.mu.Unlock()
	firebase := map[string]any{"sign_in_provider": "google.com", "identities": map[string]any{"email": []string{email}}}
	if tenant != "" {
		firebase["tenant"] = tenant
	}
	claims := jwt.MapClaims{"iss": s.Issuer(), "aud": s.Project, "sub": "uid-" + email, "user_id": "uid-" + email,
		"email": email, "email_verified": true, "auth_time": now.Unix(), "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"firebase": firebase}
	if roles != nil {
		claims["gcp.iam.roles"] = roles
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = "st1"
	return t.SignedString(key)
}

func (s *GoogleSim) newRefresh(email string) string {
	rt := "AMf-" + oidctest.Random(16)
	s.mu.Lock()
	s.refresh[rt] = email
	s.mu.Unlock()
	return rt
}

func (s *GoogleSim) signInWithIdp(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["signInWithIdp"]++
	s.mu.Unlock()
	if r.Method != http.MethodPost || !s.keyOK(w, r) {
		return
	}
	var body struct {
		PostBody            string `json:"postBody"`
		RequestURI          string `json:"requestUri"`
		ReturnSecureToken   bool   `json:"returnSecureToken"`
		ReturnIdpCredential bool   `json:"returnIdpCredential"`
		TenantID            string `json:"tenantId"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.RequestURI == "" {
		googleError(w, 400, "MISSING_REQUEST_URI", "invalid")
		return
	}
	post, err := url.ParseQuery(body.PostBody)
	if err != nil || post.Get("providerId") != "google.com" || post.Get("id_token") == "" {
		googleError(w, 400, "INVALID_IDP_RESPONSE : the postBody holds no Google id_token", "invalid")
		return
	}
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(post.Get("id_token"), claims); err != nil {
		googleError(w, 400, "INVALID_IDP_RESPONSE : the id_token is not a JWT", "invalid")
		return
	}
	exp, _ := claims.GetExpirationTime()
	aud, _ := claims.GetAudience()
	if claims["iss"] != s.GoogleIssuer || len(aud) == 0 || aud[0] != s.GoogleClient || exp == nil || exp.Before(time.Now()) {
		googleError(w, 400, "INVALID_IDP_RESPONSE : (id_token) audience, issuer or expiry does not match the google.com provider", "invalid")
		return
	}
	email, _ := claims["email"].(string)
	s.mu.Lock()
	disabled := s.Disabled[email]
	s.mu.Unlock()
	if disabled {
		googleError(w, 400, "USER_DISABLED", "invalid")
		return
	}
	tok, err := s.idToken(email, body.TenantID)
	if err != nil {
		googleError(w, 500, err.Error(), "backendError")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"federatedId": "https://accounts.google.com/" + email, "providerId": "google.com", "email": email, "emailVerified": true,
		"localId": "uid-" + email, "idToken": tok, "refreshToken": s.newRefresh(email), "expiresIn": "3600",
		"oauthIdToken": post.Get("id_token"), "kind": "identitytoolkit#VerifyAssertionResponse",
	})
}

func (s *GoogleSim) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["token"]++
	s.mu.Unlock()
	if r.Method != http.MethodPost || !s.keyOK(w, r) {
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "refresh_token" {
		googleError(w, 400, "INVALID_GRANT_TYPE", "invalid")
		return
	}
	s.mu.Lock()
	email, ok := s.refresh[r.PostForm.Get("refresh_token")]
	disabled := s.Disabled[email]
	s.mu.Unlock()
	switch {
	case !ok:
		googleError(w, 400, "INVALID_REFRESH_TOKEN", "invalid")
		return
	case disabled:
		googleError(w, 400, "USER_DISABLED", "invalid")
		return
	}
	tok, err := s.idToken(email, "")
	if err != nil {
		googleError(w, 500, err.Error(), "backendError")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "id_token": tok, "expires_in": "3600", "token_type": "Bearer",
		"refresh_token": r.PostForm.Get("refresh_token"), "user_id": "uid-" + email, "project_id": strings.TrimPrefix(s.Project, ""),
	})
}
