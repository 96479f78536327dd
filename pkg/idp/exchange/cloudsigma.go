package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// CloudSigma defaults.
const (
	umaGrant = "urn:ietf:params:oauth:grant-type:uma-ticket"
	// defaultImpersonatedLifetime applies when the answer's expires_in is 0
	// or absent and the token is not a JWT with exp.
	defaultImpersonatedLifetime = 15 * time.Minute
	// defaultKeycloakLifetime is Keycloak's default access token lifespan,
	// for a service token or RPT with neither expires_in nor exp.
	defaultKeycloakLifetime = 5 * time.Minute
)

// CloudSigma obtains a token that acts as UserEmail in Region:
//  1. client_credentials at {OAuthURL}/realms/cloudsigma → service token;
//  2. UMA ticket grant (audience service_provider_api, Bearer service token) → RPT;
//  3. POST {API}/service_provider/api/v1/user/impersonate, Bearer RPT,
//     {"user_email", "subject_token": service token} → impersonated token.
//
// The service token and the RPT are cached and shared by every user and
// region; impersonated tokens per user email and region. Each is renewed
// CloudSigmaRenewBefore before it expires.
type CloudSigma struct {
	// CloudSigma says who acts as whom where, and gives the cache keys.
	// Its LegacyUsername, with LegacyPassword, replaces step 1 by the
	// password grant; only when legacy credentials were enabled explicitly.
	credspec.CloudSigma
	ClientSecret   string `datapolicy:"secret"`
	LegacyPassword string `datapolicy:"password"`
	// Assertion, when set, authenticates the service client instead of
	// its secret (RFC 7523).
	Assertion oauth.Assertion
	// ClientAuthMethod is oauth.AuthPost (default: the client secret in
	// the form body, as CloudSigma's documents show) or oauth.AuthBasic.
	ClientAuthMethod string

	HTTPClient *http.Client
	Retry      oauth.RetryPolicy
	Audit      *Auditor
	Store      tokencache.Store
	LockDir    string
	Notify     func(string)
	Log        *logging.Logger
	Now        func() time.Time
}

func (c *CloudSigma) tokenURL() string { return c.Issuer() + "/protocol/openid-connect/token" }

type grantFunc func(ctx context.Context) (*tokencache.Entry, error)

func (g grantFunc) Grant(ctx context.Context) (*tokencache.Entry, error) { return g(ctx) }

// Refresh is never called: these entries hold no refresh token, and a new
// grant is as cheap as a refresh.
func (g grantFunc) Refresh(context.Context, string) (*tokencache.Entry, error) {
	return nil, errors.New("no refresh for exchanged tokens")
}

func (c *CloudSigma) source(key tokencache.Key, g tokensource.Authenticator) *tokensource.Source {
	return c.StepSource(key,
		credspec.SourceEnv{Store: c.Store, LockDir: c.LockDir, Notify: c.Notify, Log: c.Log, Now: c.Now}, g)
}

func (c *CloudSigma) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *CloudSigma) hc() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

// Source is the impersonated user's credential source under CloudSigma's
// own key (the service identity's with legacy credentials). The commands
// build theirs from credspec.Spec.Source, which binds the key to the
// allowed servers too, with Authenticator.
func (c *CloudSigma) Source() *tokensource.Source {
	key := c.Key()
	if c.LegacyUsername != "" {
		key = c.ServiceKey()
	}
	return c.source(key, c.Authenticator())
}

// Authenticator obtains the token kubectl gets: the impersonated user's
// (steps 1-3, the service token and the RPT cached under their own keys),
// or with legacy credentials the service identity's own.
func (c *CloudSigma) Authenticator() tokensource.Authenticator {
	service := c.source(c.ServiceKey(), grantFunc(c.serviceToken))
	if c.LegacyUsername != "" {
		return grantFunc(c.serviceToken)
	}
	rpt := c.source(c.RPTKey(), grantFunc(func(ctx context.Context) (*tokencache.Entry, error) {
		svc, err := service.Get(ctx, tokensource.Options{})
		if err != nil {
			return nil, err
		}
		return c.requestingPartyToken(ctx, svc.Token)
	}))
	return grantFunc(func(ctx context.Context) (*tokencache.Entry, error) {
		svc, err := service.Get(ctx, tokensource.Options{})
		if err != nil {
			return nil, err
		}
		r, err := rpt.Get(ctx, tokensource.Options{})
		if err != nil {
			return nil, err
		}
		return c.impersonate(ctx, r.Token, svc.Token)
	})
}

// stepError names the step that failed, with the provider's error.
func (c *CloudSigma) stepError(step string, err error) error {
	return fmt.Errorf("cloudsigma impersonation of %s in %s failed at step %s: %w", c.UserEmail, c.Region, step, err)
}

func (c *CloudSigma) record(step string, err error) {
	o, msg := outcome(err)
	c.Audit.Record(AuditRecord{Exchange: "cloudsigma", UserEmail: c.UserEmail, Region: c.Region, Step: step, Outcome: o,
		Error: msg})
}

// retry is the retry policy of step: every attempt that is retried (a
// 429, a 5xx, no answer) is recorded in the audit log too.
func (c *CloudSigma) retry(step string) oauth.RetryPolicy {
	p := c.Retry
	p.Observe = func(attempt int, err error) {
		c.record(fmt.Sprintf("%s (attempt %d, retried)", step, attempt), err)
	}
	return p
}

const (
	stepService     = "1/3 client_credentials"
	stepRPT         = "2/3 uma-ticket"
	stepImpersonate = "3/3 impersonate"
)

// entry caches a token; its expiry follows the one rule (expires_in, else
// the JWT's exp, else def).
func (c *CloudSigma) entry(token, tokenType string, lifetime, def time.Duration) *tokencache.Entry {
	now := c.now()
	return &tokencache.Entry{
		AccessToken: token, TokenType: tokenType, AccessTokenExpiry: oauth.Expiry(token, lifetime, now, def),
		Issuer: c.Issuer(), ClientID: c.ClientID, ObtainedAt: now.UTC(),
	}
}

// tokenClient is the realm's token endpoint, with step's retry policy.
func (c *CloudSigma) tokenClient(step string) *oauth.Client {
	method := c.ClientAuthMethod
	if method == "" {
		method = oauth.AuthPost
	}
	return &oauth.Client{HTTPClient: c.hc(), TokenURL: c.tokenURL(), ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		AuthMethod: method, Retry: c.retry(step), Peer: "CloudSigma's Keycloak", Assertion: c.Assertion}
}

func (c *CloudSigma) serviceToken(ctx context.Context) (*tokencache.Entry, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	step := stepService
	if c.LegacyUsername != "" {
		form = url.Values{"grant_type": {"password"}, "username": {c.LegacyUsername}, "password": {c.LegacyPassword}}
		step = "password (legacy credentials: acting directly as " + c.LegacyUsername + ", no impersonation)"
		if c.Notify != nil {
			c.Notify("LEGACY CloudSigma credentials: acting directly as the account " + c.LegacyUsername +
				", not impersonating anyone")
		}
	}
	c.Log.Printf(1, "cloudsigma: %s at %s", step, c.tokenURL())
	t, err := c.tokenClient(step).Token(ctx, form, "")
	c.record(step, err)
	if err != nil {
		return nil, c.stepError(step, err)
	}
	e := c.entry(t.AccessToken, t.TokenType, oauth.ExpiresIn(t), defaultKeycloakLifetime)
	e.GrantType = "client-credentials"
	if c.LegacyUsername != "" {
		e.GrantType = "password"
	}
	return e, nil
}

func (c *CloudSigma) requestingPartyToken(ctx context.Context, serviceToken string) (*tokencache.Entry, error) {
	c.Log.Printf(1, "cloudsigma: %s at %s", stepRPT, c.tokenURL())
	form := url.Values{"grant_type": {umaGrant}, "audience": {credspec.ServiceProviderAudience}}
	t, err := c.tokenClient(stepRPT).Token(ctx, form, serviceToken)
	var oe *oauth.Error
	if errors.As(err, &oe) && oe.Status == http.StatusForbidden {
		err = fmt.Errorf("%w: grant the client's service account the permission on %s in Keycloak's Authorization "+
			"settings", err, credspec.ServiceProviderAudience)
	}
	c.record(stepRPT, err)
	if err != nil {
		return nil, c.stepError(stepRPT, err)
	}
	e := c.entry(t.AccessToken, t.TokenType, oauth.ExpiresIn(t), defaultKeycloakLifetime)
	e.GrantType = "uma-ticket"
	return e, nil
}

func (c *CloudSigma) impersonate(ctx context.Context, rpt, serviceToken string) (*tokencache.Entry, error) {
	u := c.APIURL() + "/service_provider/api/v1/user/impersonate"
	c.Log.Printf(1, "cloudsigma: %s of %s at %s", stepImpersonate, c.UserEmail, u)
	var answer json.RawMessage
	err := oauth.PostJSON(ctx, c.hc(), c.retry(stepImpersonate), peerAPI, u, rpt,
		map[string]string{"user_email": c.UserEmail, "subject_token": serviceToken}, &answer)
	var token string
	var lifetime time.Duration
	if err == nil {
		token, lifetime, err = parseImpersonation(answer)
	}
	c.record(stepImpersonate, err)
	if err != nil {
		return nil, c.stepError(stepImpersonate, err)
	}
	e := c.entry(token, "Bearer", lifetime, defaultImpersonatedLifetime)
	e.GrantType = "cloudsigma-impersonate"
	return e, nil
}

// parseImpersonation reads the impersonate endpoint's answer: the token
// (access_token, or impersonated_token) and its lifetime from expires_in (a
// number or a string; 0 or absent: the token's own exp decides, else the
// default).
func parseImpersonation(b []byte) (token string, lifetime time.Duration, err error) {
	var answer struct {
		AccessToken       string `json:"access_token" datapolicy:"token"`
		ImpersonatedToken string `json:"impersonated_token" datapolicy:"token"`
		ExpiresIn         any    `json:"expires_in"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return "", 0, fmt.Errorf("the answer is not the expected JSON object: %s", logging.OneLine(err.Error(), 200))
	}
	token = answer.AccessToken
	if token == "" {
		token = answer.ImpersonatedToken
	}
	if token == "" {
		return "", 0, errors.New("the answer holds neither access_token nor impersonated_token")
	}
	return token, oauth.Lifetime(answer.ExpiresIn), nil
}

// peerAPI names CloudSigma's API in errors.
const peerAPI = "CloudSigma's API"

// Profile is the account the impersonated token acts on.
type Profile struct {
	Email string `json:"email"`
	UUID  string `json:"uuid,omitempty"`
}

// GetProfile calls GET /api/2.0/profile/ with token: the natural proof
// that the token acts as the user.
func (c *CloudSigma) GetProfile(ctx context.Context, token string) (*Profile, error) {
	u := c.APIURL() + "/api/2.0/profile/"
	r, err := oauth.Do(ctx, c.hc(), c.Retry, peerAPI, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		return req, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the CloudSigma profile: %w", err)
	}
	var p Profile
	if err := json.Unmarshal(r.Body, &p); err != nil || p.Email == "" {
		return nil, fmt.Errorf("reading the CloudSigma profile: the answer holds no email")
	}
	return &p, nil
}
