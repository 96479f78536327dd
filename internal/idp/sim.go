// Package idp simulates the two peers of the impersonation exchange that
// cannot run on the test machines: Keycloak's token endpoint and CloudSigma's
// service-provider API. It follows their published request and response
// shapes, checks what the real servers check, can inject faults, and counts
// calls.
//
// Keycloak (26.x), per its documentation:
//   - OpenID Connect endpoints of a realm: /realms/{realm}/.well-known/openid-configuration,
//     /realms/{realm}/protocol/openid-connect/token and .../certs ("Securing applications
//     and services with OpenID Connect").
//   - client_credentials (RFC 6749 §4.4): service account tokens, no refresh token.
//   - UMA grant, urn:ietf:params:oauth:grant-type:uma-ticket with audience and a Bearer
//     access token ("Authorization Services Guide: Obtaining permissions"): the RPT in a
//     normal token response; denied: 403 {"error":"access_denied","error_description":"request_denied"}.
//   - Token exchange (RFC 8693; "Configuring and using token exchange"): standard V2
//     (subject_token_type access_token only, audience repeatable, rejects requested_subject with
//     400 invalid_request "Parameter 'requested_subject' is not supported for standard token
//     exchange") and legacy V1 (requested_subject impersonation when the client holds the
//     impersonation permission, else 403 access_denied "Client not allowed to exchange").
//     Response: access_token, issued_token_type, token_type ("N_A" when not an access token),
//     expires_in.
//
// CloudSigma, per the public cluster-api-provider-cloudsigma impersonation client and its
// design notes:
//   - POST https://direct.{region}.cloudsigma.com/service_provider/api/v1/user/impersonate,
//     Authorization: Bearer <RPT for audience service_provider_api>, JSON
//     {"user_email", "subject_token": <the client_credentials token>} → JSON with the token in
//     "access_token" (code) or "impersonated_token" (design notes), "expires_in" (may be 0 or absent).
//   - GET https://direct.{region}.cloudsigma.com/api/2.0/profile/ → the account, with "email".
//   - Errors: a JSON list of {"error_type", "error_message", "error_point"}; 401 bad
//     credentials, 403 permission.
//
// Here a region "zrh" lives under /zrh/ of the simulator, so the API URL template is
// "{base}/{region}".
package idp

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
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

// Token types of RFC 8693.
const (
	TokenTypeAccess  = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeRefresh = "urn:ietf:params:oauth:token-type:refresh_token"
	TokenTypeID      = "urn:ietf:params:oauth:token-type:id_token"
	GrantUMA         = "urn:ietf:params:oauth:grant-type:uma-ticket"
	GrantExchange    = "urn:ietf:params:oauth:grant-type:token-exchange"
	// ServiceProviderAudience is the resource server of CloudSigma's UMA step.
	ServiceProviderAudience = "service_provider_api"
)

// Client is a Keycloak client.
type Client struct {
	Secret string
	// UMA lets its service account obtain an RPT for service_provider_api.
	UMA bool
	// Exchange allows token exchange; Impersonation allows V1 requested_subject.
	Exchange, Impersonation bool
}

// Fault is an injected answer.
type Fault struct {
	Status      int
	ContentType string
	Body        string
	RetryAfter  string
	Delay       time.Duration
}

// Sim is a running simulator.
type Sim struct {
	*httptest.Server
	Realm   string
	Clients map[string]*Client
	// Users by email, per CloudSigma region; Keycloak users by username.
	RegionUsers map[string][]string
	Users       map[string]string // username -> email
	// V1 selects legacy token exchange (requested_subject) instead of V2.
	V1 bool
	// Assertions authenticate clients registered without a secret: their
	// keys and federated credentials.
	Assertions oidctest.Assertions
	// Lifetimes of issued tokens: Keycloak's realm default (300 s) for
	// access tokens and RPTs (an RPT inherits the access token lifespan);
	// ImpersonatedExpiresIn < 0 omits expires_in (the JWT still has exp).
	AccessTokenLifetime   time.Duration
	RPTLifetime           time.Duration
	ImpersonatedExpiresIn int
	// ImpersonatedLifetime is the impersonated JWT's real lifetime (its
	// exp); 0: expires_in, or 15 minutes when that is 0 or absent.
	ImpersonatedLifetime time.Duration
	// ImpersonatedField names the token field of the impersonate answer.
	ImpersonatedField string

	key      *rsa.PrivateKey
	mu       sync.Mutex
	requests int
	calls    map[string]int
	faults   map[string][]Fault
	tokens   map[string]tokenInfo
	now      func() time.Time
	// outageFrom, outageTo: every request fails with 503 in between.
	outageFrom, outageTo time.Time
	lastClientAuth       string
}

// KeycloakAccessTokenLifespan is Keycloak's default "Access Token
// Lifespan" of a realm (Realm settings > Sessions/Tokens): 5 minutes.
const KeycloakAccessTokenLifespan = 300 * time.Second

type tokenInfo struct {
	kind    string // "service", "rpt", "impersonated", "exchanged"
	client  string
	subject string // email or service account
	region  string
	expiry  time.Time
}

// New starts a simulator on 127.0.0.1 (plain HTTP) that stops with the test.
func New(t testing.TB) *Sim {
	t.Helper()
	s, err := NewSim()
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// NewSim returns an unstarted simulator with one confidential client
// ("robot", secret "robot-secret") allowed UMA and exchange, users alice
// and bob, and region "zrh" holding alice.
func NewSim() (*Sim, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &Sim{
		Realm:                 "cloudsigma",
		Clients:               map[string]*Client{"robot": {Secret: "robot-secret", UMA: true, Exchange: true, Impersonation: true}},
		RegionUsers:           map[string][]string{"zrh": {"alice@example.com"}, "sjc": {"alice@example.com", "bob@example.com"}},
		Users:                 map[string]string{"alice": "alice@example.com", "bob": "bob@example.com"},
		AccessTokenLifetime:   KeycloakAccessTokenLifespan,
		RPTLifetime:           KeycloakAccessTokenLifespan,
		ImpersonatedExpiresIn: 3600,
		ImpersonatedField:     "access_token",
		key:                   key,
		calls:                 map[string]int{},
		faults:                map[string][]Fault{},
		tokens:                map[string]tokenInfo{},
		now:                   time.Now,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/realms/", s.realm)
	mux.HandleFunc("/", s.cloudsigma)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	return s, nil
}

// Configure changes the simulator's settings while it serves.
func (s *Sim) Configure(f func(*Sim)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// settings is a copy of the configuration, taken under the lock by every
// handler, so tests may Configure while requests are served.
type settings struct {
	v1                    bool
	clients               map[string]Client
	regionUsers           map[string][]string
	users                 map[string]string
	accessTokenLifetime   time.Duration
	rptLifetime           time.Duration
	impersonatedExpiresIn int
	impersonatedLifetime  time.Duration
	impersonatedField     string
}

func (s *Sim) settings() settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := settings{v1: s.V1, clients: map[string]Client{}, regionUsers: s.RegionUsers, users: s.Users,
		accessTokenLifetime: s.AccessTokenLifetime, rptLifetime: s.RPTLifetime,
		impersonatedExpiresIn: s.ImpersonatedExpiresIn, impersonatedLifetime: s.ImpersonatedLifetime, impersonatedField: s.ImpersonatedField}
	for id, cl := range s.Clients {
		c.clients[id] = *cl
	}
	return c
}

// Issuer is the realm's issuer URL.
func (s *Sim) Issuer() string { return s.URL + "/realms/" + s.Realm }

// TokenURL is the realm's token endpoint.
func (s *Sim) TokenURL() string { return s.Issuer() + "/protocol/openid-connect/token" }

// APIURLTemplate is the CloudSigma API URL template for this simulator.
func (s *Sim) APIURLTemplate() string { return s.URL + "/{region}" }

// Requests counts every HTTP request the simulator served.
func (s *Sim) Requests() int { s.mu.Lock(); defer s.mu.Unlock(); return s.requests }

// Calls counts requests by kind: client_credentials, uma, token-exchange,
// impersonate:{region}, profile:{region}.
func (s *Sim) Calls(kind string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[kind] }

// FailNext queues faults for the next requests of kind.
// Outage answers every request 503 while the simulator's clock is in
// [from, to).
func (s *Sim) Outage(from, to time.Time) {
	s.mu.Lock()
	s.outageFrom, s.outageTo = from, to
	s.mu.Unlock()
}

func (s *Sim) FailNext(kind string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[kind] = append(s.faults[kind], faults...)
}

// SetNow replaces the clock that decides token expiry.
func (s *Sim) SetNow(now func() time.Time) { s.mu.Lock(); s.now = now; s.mu.Unlock() }

func (s *Sim) clock() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.now() }

// count records a call and returns the fault to answer with, if any.
func (s *Sim) count(kind string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[kind]++
	if now := s.now(); !now.Before(s.outageFrom) && now.Before(s.outageTo) {
		return &Fault{Status: http.StatusServiceUnavailable, ContentType: "text/html", Body: "<html>503 Service Unavailable</html>"}
	}
	if q := s.faults[kind]; len(q) > 0 {
		s.faults[kind] = q[1:]
		return &q[0]
	}
	return nil
}

func (f *Fault) write(w http.ResponseWriter) {
	time.Sleep(f.Delay)
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.ContentType != "" {
		w.Header().Set("Content-Type", f.ContentType)
	}
	if f.Status == 0 {
		f.Status = http.StatusOK
	}
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(f.Body))
}

// The provider answers are written as oidctest writes them.
var (
	writeJSON  = oidctest.WriteJSON
	oauthError = oidctest.OAuthError
)

func (s *Sim) realm(w http.ResponseWriter, r *http.Request) {
	prefix := "/realms/" + s.Realm
	switch r.URL.Path {
	case prefix + "/.well-known/openid-configuration":
		writeJSON(w, 200, map[string]any{
			"issuer": s.Issuer(), "token_endpoint": s.TokenURL(),
			"authorization_endpoint":                s.Issuer() + "/protocol/openid-connect/auth",
			"jwks_uri":                              s.Issuer() + "/protocol/openid-connect/certs",
			"grant_types_supported":                 []string{"client_credentials", "refresh_token", GrantUMA, GrantExchange},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
		})
	case prefix + "/protocol/openid-connect/certs":
		oidctest.WriteJWKS(w, "sim", &s.key.PublicKey)
	case prefix + "/protocol/openid-connect/token":
		s.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

// LastClientAuth is how the last confidential client authenticated:
// "basic" (client_secret_basic) or "post" (client_secret_post), both of
// which Keycloak accepts, or "assertion" (a signed or federated JWT, see
// Assertions).
func (s *Sim) LastClientAuth() string { s.mu.Lock(); defer s.mu.Unlock(); return s.lastClientAuth }

func (s *Sim) clientAuth(cfg settings, r *http.Request) (string, *Client, bool) {
	if r.PostForm.Get("client_assertion_type") != "" {
		// Keycloak's "Signed JWT" and "Signed JWT - Federated" client
		// authenticators (server_admin guide, "Confidential client
		// credentials"; federated client authentication, Keycloak 26.5).
		s.mu.Lock()
		s.lastClientAuth = "assertion"
		s.mu.Unlock()
		id, err := s.Assertions.Verify(r.PostForm, s.Issuer(), s.TokenURL())
		c, found := cfg.clients[id]
		if err != nil || !found {
			return id, nil, false
		}
		return id, &c, true
	}
	id, secret, ok := r.BasicAuth()
	method := "basic"
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		method = "post"
	}
	s.mu.Lock()
	s.lastClientAuth = method
	s.mu.Unlock()
	c, found := cfg.clients[id]
	if !found || c.Secret != secret || secret == "" {
		return id, nil, false
	}
	return id, &c, true
}

// sign issues a JWT and remembers what it stands for.
func (s *Sim) sign(info tokenInfo, aud []string, extra map[string]any) (string, error) {
	now := s.clock()
	claims := jwt.MapClaims{
		"iss": s.Issuer(), "sub": info.subject, "azp": info.client, "typ": "Bearer",
		"iat": now.Unix(), "exp": info.expiry.Unix(), "jti": randomID(),
	}
	if len(aud) > 0 {
		claims["aud"] = aud
	}
	for k, v := range extra {
		claims[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = "sim"
	signed, err := tok.SignedString(s.key)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.tokens[signed] = info
	s.mu.Unlock()
	return signed, nil
}

func randomID() string { return oidctest.Random(12) }

// lookup returns what a presented token stands for, if it is ours and valid.
func (s *Sim) lookup(token string) (tokenInfo, bool) {
	s.mu.Lock()
	info, ok := s.tokens[token]
	now := s.now()
	s.mu.Unlock()
	if !ok || !now.Before(info.expiry) {
		return tokenInfo{}, false
	}
	return info, true
}

func bearer(r *http.Request) string {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return v
}

func (s *Sim) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		oauthError(w, 405, "invalid_request", "HTTP method not allowed")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		oauthError(w, 400, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request", "bad form")
		return
	}
	cfg := s.settings()
	switch grant := r.PostForm.Get("grant_type"); grant {
	case "client_credentials":
		if f := s.count("client_credentials"); f != nil {
			f.write(w)
			return
		}
		id, c, ok := s.clientAuth(cfg, r)
		if !ok {
			oauthError(w, 401, "unauthorized_client", "Invalid client or Invalid client credentials")
			return
		}
		s.issue(w, tokenInfo{kind: "service", client: id, subject: "service-account-" + id, expiry: s.clock().Add(cfg.accessTokenLifetime)}, nil, false, c)
	case "password":
		// Direct access grant (legacy credentials): users' passwords are
		// "<username>-password".
		if f := s.count("password"); f != nil {
			f.write(w)
			return
		}
		id, c, ok := s.clientAuth(cfg, r)
		if !ok {
			oauthError(w, 401, "unauthorized_client", "Invalid client or Invalid client credentials")
			return
		}
		user := r.PostForm.Get("username")
		if _, known := cfg.users[user]; !known || r.PostForm.Get("password") != user+"-password" {
			oauthError(w, 401, "invalid_grant", "Invalid user credentials")
			return
		}
		s.issue(w, tokenInfo{kind: "service", client: id, subject: user, expiry: s.clock().Add(cfg.accessTokenLifetime)}, nil, false, c)
	case GrantUMA:
		if f := s.count("uma"); f != nil {
			f.write(w)
			return
		}
		info, ok := s.lookup(bearer(r))
		if !ok || info.kind != "service" {
			oauthError(w, 401, "invalid_grant", "Invalid bearer token")
			return
		}
		if r.PostForm.Get("audience") != ServiceProviderAudience {
			oauthError(w, 400, "invalid_request", "You must provide the audience")
			return
		}
		if c, ok := cfg.clients[info.client]; !ok || !c.UMA {
			oauthError(w, 403, "access_denied", "request_denied")
			return
		}
		rpt := tokenInfo{kind: "rpt", client: info.client, subject: info.subject, expiry: s.clock().Add(cfg.rptLifetime)}
		s.issue(w, rpt, []string{ServiceProviderAudience}, true, nil)
	case GrantExchange:
		if f := s.count("token-exchange"); f != nil {
			f.write(w)
			return
		}
		s.exchange(cfg, w, r)
	default:
		oauthError(w, 400, "unsupported_grant_type", "Unsupported grant_type")
	}
}

func (s *Sim) issue(w http.ResponseWriter, info tokenInfo, aud []string, withRefresh bool, _ *Client) {
	extra := map[string]any{"preferred_username": info.subject}
	if info.kind == "rpt" {
		extra["authorization"] = map[string]any{"permissions": []map[string]any{{"rsname": "impersonate", "scopes": []string{"impersonate"}}}}
	}
	tok, err := s.sign(info, aud, extra)
	if err != nil {
		oauthError(w, 500, "server_error", err.Error())
		return
	}
	resp := map[string]any{
		"access_token": tok, "token_type": "Bearer", "not-before-policy": 0, "scope": "profile email",
		"expires_in": int(info.expiry.Sub(s.clock()).Round(time.Second).Seconds()), "refresh_expires_in": 0,
	}
	if withRefresh {
		resp["refresh_token"] = "rt-" + randomID()
		resp["refresh_expires_in"] = 1800
		resp["upgraded"] = false
	}
	writeJSON(w, 200, resp)
}

func (s *Sim) exchange(cfg settings, w http.ResponseWriter, r *http.Request) {
	id, c, ok := s.clientAuth(cfg, r)
	if !ok {
		oauthError(w, 401, "unauthorized_client", "Invalid client or Invalid client credentials")
		return
	}
	f := r.PostForm
	subject, ok := s.lookup(f.Get("subject_token"))
	if f.Get("subject_token") == "" {
		oauthError(w, 400, "invalid_request", "Parameter 'subject_token' is required")
		return
	}
	if !ok {
		oauthError(w, 400, "invalid_token", "Invalid token")
		return
	}
	stt := f.Get("subject_token_type")
	if stt == "" {
		stt = TokenTypeAccess
	}
	if !cfg.v1 && stt != TokenTypeAccess {
		oauthError(w, 400, "invalid_request", "Parameter 'subject_token_type' should be access_token for standard token exchange")
		return
	}
	if !c.Exchange {
		oauthError(w, 403, "access_denied", "Client not allowed to exchange")
		return
	}
	rtt := f.Get("requested_token_type")
	if rtt == "" {
		rtt = TokenTypeAccess
	}
	if rtt != TokenTypeAccess && rtt != TokenTypeRefresh && rtt != TokenTypeID {
		oauthError(w, 400, "invalid_request", "requested_token_type unsupported")
		return
	}
	target := subject.subject
	if rs := f.Get("requested_subject"); rs != "" {
		if !cfg.v1 {
			oauthError(w, 400, "invalid_request", "Parameter 'requested_subject' is not supported for standard token exchange")
			return
		}
		if !c.Impersonation {
			oauthError(w, 403, "access_denied", "Client not allowed to exchange")
			return
		}
		email, known := cfg.users[rs]
		if !known {
			oauthError(w, 400, "invalid_request", "Requested subject not found")
			return
		}
		target = email
	}
	audiences := f["audience"]
	for _, a := range audiences {
		if _, known := cfg.clients[a]; !known {
			oauthError(w, 400, "invalid_client", "Audience not found")
			return
		}
	}
	if len(audiences) == 0 {
		audiences = []string{id}
	}
	info := tokenInfo{kind: "exchanged", client: id, subject: target, expiry: s.clock().Add(cfg.accessTokenLifetime)}
	tok, err := s.sign(info, audiences, map[string]any{"email": target, "email_verified": true, "preferred_username": target, "scope": f.Get("scope")})
	if err != nil {
		oauthError(w, 500, "server_error", err.Error())
		return
	}
	tokenType := "Bearer"
	if rtt != TokenTypeAccess {
		tokenType = "N_A"
	}
	writeJSON(w, 200, map[string]any{
		"access_token": tok, "issued_token_type": rtt, "token_type": tokenType,
		"expires_in": int(cfg.accessTokenLifetime.Seconds()),
	})
}

func cloudsigmaError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, []map[string]any{{"error_type": typ, "error_message": msg, "error_point": nil}})
}

// cloudsigma serves /{region}/service_provider/api/v1/user/impersonate and
// /{region}/api/2.0/profile/.
func (s *Sim) cloudsigma(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	region, rest := parts[0], "/"+parts[1]
	cfg := s.settings()
	users, known := cfg.regionUsers[region]
	if !known {
		http.NotFound(w, r)
		return
	}
	switch rest {
	case "/service_provider/api/v1/user/impersonate":
		if f := s.count("impersonate:" + region); f != nil {
			f.write(w)
			return
		}
		if r.Method != http.MethodPost {
			cloudsigmaError(w, 405, "request", "Method not allowed")
			return
		}
		rpt, ok := s.lookup(bearer(r))
		if !ok || rpt.kind != "rpt" {
			cloudsigmaError(w, 401, "auth", "Authentication credentials were not provided or are invalid")
			return
		}
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			cloudsigmaError(w, 400, "validation", "Content-Type must be application/json")
			return
		}
		var body struct {
			UserEmail    string `json:"user_email"`
			SubjectToken string `json:"subject_token"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.UserEmail == "" || body.SubjectToken == "" {
			cloudsigmaError(w, 400, "validation", "user_email and subject_token are required")
			return
		}
		svc, ok := s.lookup(body.SubjectToken)
		if !ok || svc.kind != "service" || svc.client != rpt.client {
			cloudsigmaError(w, 403, "permission", "subject_token is not a service token of this client")
			return
		}
		found := false
		for _, u := range users {
			found = found || u == body.UserEmail
		}
		if !found {
			cloudsigmaError(w, 404, "notexist", fmt.Sprintf("User %s does not exist in this location", body.UserEmail))
			return
		}
		lifetime := time.Duration(cfg.impersonatedExpiresIn) * time.Second
		if cfg.impersonatedExpiresIn <= 0 {
			lifetime = 15 * time.Minute
		}
		if cfg.impersonatedLifetime > 0 {
			lifetime = cfg.impersonatedLifetime
		}
		info := tokenInfo{kind: "impersonated", client: rpt.client, subject: body.UserEmail, region: region, expiry: s.clock().Add(lifetime)}
		tok, err := s.sign(info, []string{"cloudsigma-" + region}, map[string]any{"email": body.UserEmail})
		if err != nil {
			cloudsigmaError(w, 500, "backend", err.Error())
			return
		}
		resp := map[string]any{cfg.impersonatedField: tok}
		if cfg.impersonatedExpiresIn >= 0 {
			resp["expires_in"] = cfg.impersonatedExpiresIn
		}
		writeJSON(w, 200, resp)
	case "/api/2.0/profile/":
		if f := s.count("profile:" + region); f != nil {
			f.write(w)
			return
		}
		info, ok := s.lookup(bearer(r))
		if !ok || info.kind != "impersonated" || info.region != region {
			cloudsigmaError(w, 401, "auth", "Authentication credentials were not provided or are invalid")
			return
		}
		writeJSON(w, 200, map[string]any{"email": info.subject, "uuid": "uuid-" + info.subject, "state": "REGULAR"})
	default:
		http.NotFound(w, r)
	}
}
