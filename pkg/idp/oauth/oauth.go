// Package oauth is the one client of token endpoints and of the JSON APIs
// around them.
//
//   - Every grant (refresh, client credentials, password, Keycloak's UMA
//     ticket, RFC 8693 token exchange) goes through golang.org/x/oauth2's
//     token request (its EndpointParams carry the grant's parameters).
//   - Every answer that is not a success becomes one *Error that tells the
//     provider's passing trouble (no answer, 5xx, 429: Transient, retried by
//     one RetryPolicy) from a refusal.
//   - One lifetime rule (Expiry) dates every token.
package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// Client authentication methods at a token endpoint (RFC 6749 §2.3.1).
const (
	// AuthPost sends client_id and client_secret in the form body
	// (client_secret_post).
	AuthPost = "post"
	// AuthBasic sends them with HTTP Basic (client_secret_basic).
	AuthBasic = "basic"
)

// PeerIdP names the identity provider in errors.
const PeerIdP = "the identity provider"

// Error is a request that failed: no answer (Status 0), or an answer that
// is not a success, in one line.
type Error struct {
	// Peer names who answered ("the identity provider", "CloudSigma's API").
	Peer   string
	Host   string
	Status int
	// Code and Description are the OAuth error (or CloudSigma's
	// error_type and error_message); empty when the answer is not an error
	// document.
	Code, Description string
	// ContentType of an answer that is not an error document.
	ContentType string
	Err         error
}

func (e *Error) Error() string {
	switch {
	case e.Status == 0:
		var ne net.Error
		if errors.As(e.Err, &ne) && ne.Timeout() {
			return fmt.Sprintf("%s (%s) did not answer in time: %s", e.Peer, e.Host,
				logging.OneLine(e.Err.Error(), 300))
		}
		return fmt.Sprintf("no answer from %s (%s): %s", e.Peer, e.Host, logging.OneLine(e.Err.Error(), 300))
	case e.Status/100 == 2:
		return fmt.Sprintf("%s answered %d with an invalid token response: %s", e.Peer, e.Status,
			logging.OneLine(e.Err.Error(), 300))
	case e.Code != "":
		msg := fmt.Sprintf("%s answered %d %s", e.Peer, e.Status, logging.OneLine(e.Code, 200))
		if e.Description != "" {
			msg += ": " + logging.OneLine(e.Description, 200)
		}
		return msg
	}
	ct := e.ContentType
	if ct == "" {
		ct = "no content type"
	}
	return fmt.Sprintf("%s answered %d with %s, not an error document", e.Peer, e.Status, logging.OneLine(ct, 100))
}

func (e *Error) Unwrap() error { return e.Err }

// InvalidGrant is true when the provider refused the grant itself (RFC
// 6749 §5.2 invalid_grant): a refresh token revoked, expired or rotated.
func (e *Error) InvalidGrant() bool { return e.Code == "invalid_grant" }

// Transient is true for the provider's passing trouble (no answer, 5xx,
// 429, a success whose body is not a token response): retried, and a
// cached token still valid (or a refresh token) is kept meanwhile. The
// rest (4xx) is a refusal.
func (e *Error) Transient() bool {
	return e.Status == 0 || e.Status/100 == 2 || e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// newError reads an answer's error document: OAuth's error and
// error_description, or CloudSigma's error_type and error_message (an
// object or a list of them, with error_point).
func newError(peer, host string, status int, contentType string, body []byte) *Error {
	e := &Error{Peer: peer, Host: host, Status: status}
	var oauthErr struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &oauthErr) == nil && oauthErr.Error != "" {
		e.Code, e.Description = oauthErr.Error, oauthErr.Description
		return e
	}
	type csError struct {
		Type    string `json:"error_type"`
		Message string `json:"error_message"`
		Point   any    `json:"error_point"`
	}
	var list []csError
	var one csError
	if json.Unmarshal(body, &list) == nil && len(list) > 0 && list[0].Type != "" {
		one = list[0]
	} else {
		_ = json.Unmarshal(body, &one)
	}
	if one.Type != "" || one.Message != "" {
		e.Code, e.Description = one.Type, one.Message
		if one.Point != nil {
			e.Description += " (at " + fmt.Sprint(one.Point) + ")"
		}
		return e
	}
	e.ContentType, _, _ = mime.ParseMediaType(contentType)
	return e
}

// Client asks one token endpoint for tokens.
type Client struct {
	HTTPClient   *http.Client
	TokenURL     string
	ClientID     string
	ClientSecret string `datapolicy:"secret"`
	// AuthMethod is AuthBasic, AuthPost, or "" (x/oauth2 tries Basic,
	// then the form body).
	AuthMethod string
	// Assertion, when set, authenticates the client instead of a secret
	// (RFC 7523): a new assertion in the form body of each attempt.
	Assertion Assertion
	Retry     RetryPolicy
	// Peer names the endpoint in errors (default PeerIdP).
	Peer string
}

// Token runs one grant: params holds grant_type and the grant's
// parameters (scope included), sent with the client's authentication, or
// with bearer instead when it is set (Keycloak's UMA grant authenticates
// with the service account's token). Transient failures are retried by
// the policy.
func (c *Client) Token(ctx context.Context, params url.Values, bearer string) (*oauth2.Token, error) {
	cc := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.TokenURL,
		EndpointParams: params}
	switch {
	case bearer != "":
		// No client credentials: x/oauth2 sends none in the form.
		cc.ClientID, cc.ClientSecret, cc.AuthStyle = "", "", oauth2.AuthStyleInParams
	case c.Assertion != nil:
		cc.ClientSecret, cc.AuthStyle = "", oauth2.AuthStyleInParams
	case c.ClientSecret == "" || c.AuthMethod == AuthPost:
		cc.AuthStyle = oauth2.AuthStyleInParams
	case c.AuthMethod == AuthBasic:
		cc.AuthStyle = oauth2.AuthStyleInHeader
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if bearer != "" {
		inner := hc
		host := ""
		if u, err := url.Parse(c.TokenURL); err == nil {
			host = u.Host
		}
		hc = &http.Client{Timeout: inner.Timeout, CheckRedirect: inner.CheckRedirect, Jar: inner.Jar,
			Transport: bearerTransport{token: bearer, host: host, next: transportOf(inner)}}
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	var tok *oauth2.Token
	err := c.Retry.run(ctx, func() (time.Duration, error) {
		if c.Assertion != nil && bearer == "" {
			// Each attempt its own assertion: a retry of the same jti
			// would be refused as a replay.
			p := url.Values{}
			for k, v := range params {
				p[k] = v
			}
			if err := c.Assertion.params(c.TokenURL, p); err != nil {
				return 0, fmt.Errorf("the client assertion: %w", err)
			}
			cc.EndpointParams = p
		}
		var err error
		tok, err = cc.Token(ctx)
		if err == nil {
			return 0, nil
		}
		return c.classify(err)
	})
	return tok, err
}

// Classify describes an error of x/oauth2's token requests to tokenURL
// (the authorization code exchange, the device flow) as *Error.
func Classify(peer, tokenURL string, err error) error {
	var re *oauth2.RetrieveError
	var ue *url.Error
	if !errors.As(err, &re) && !errors.As(err, &ue) {
		return err // not a request's failure (a configuration error, say)
	}
	_, e := classify(peer, tokenURL, err)
	return e
}

func (c *Client) classify(err error) (time.Duration, error) {
	peer := c.Peer
	if peer == "" {
		peer = PeerIdP
	}
	return classify(peer, c.TokenURL, err)
}

// classify turns x/oauth2's errors into *Error, with the answer's
// Retry-After.
func classify(peer, tokenURL string, err error) (time.Duration, error) {
	host := tokenURL
	if u, perr := url.Parse(tokenURL); perr == nil {
		host = u.Host
	}
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return 0, &Error{Peer: peer, Host: host, Err: err}
		}
		// x/oauth2 read a 2xx answer that is not a token response.
		return 0, &Error{Peer: peer, Host: host, Status: http.StatusOK, Err: err}
	}
	e := newError(peer, host, re.Response.StatusCode, re.Response.Header.Get("Content-Type"), re.Body)
	e.Err = err
	if re.ErrorCode != "" {
		e.Code, e.Description, e.ContentType = re.ErrorCode, re.ErrorDescription, ""
	}
	return parseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now()), e
}

// bearerTransport authenticates with the token at the token endpoint's
// host only.
type bearerTransport struct {
	token, host string
	next        http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != b.host {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func transportOf(hc *http.Client) http.RoundTripper {
	if hc.Transport != nil {
		return hc.Transport
	}
	return http.DefaultTransport
}

// maxLifetime caps a lifetime a provider states (a year): larger numbers
// would overflow time.Duration.
const maxLifetime = 365 * 24 * time.Hour

// ExpiresIn is the token response's expires_in (a number, or a string as
// some providers send it), capped at a year; 0 when absent or not positive.
func ExpiresIn(tok *oauth2.Token) time.Duration {
	return Lifetime(tok.Extra("expires_in"))
}

// Lifetime reads an expires_in value as JSON decoding gives it (a number,
// or a string), capped at a year; 0 when absent or not positive.
func Lifetime(v any) time.Duration {
	var n float64
	switch v := v.(type) {
	case float64:
		n = v
	case json.Number:
		n, _ = v.Float64()
	case string:
		n, _ = strconv.ParseFloat(v, 64)
	default:
		return 0
	}
	if n <= 0 {
		return 0
	}
	if n >= maxLifetime.Seconds() {
		return maxLifetime
	}
	return time.Duration(n) * time.Second
}

// Expiry is the one lifetime rule of every token: the earlier of now +
// lifetime (the answer's expires_in) and the exp of a JWT token (not
// verified: it only decides when to renew), whichever are known, else now
// + def. The earlier, so that an answer promising more than the token
// carries never caches a token past its exp.
func Expiry(token string, lifetime time.Duration, now time.Time, def time.Duration) time.Time {
	var exp time.Time
	claims := jwt.RegisteredClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err == nil && claims.ExpiresAt != nil {
		exp = claims.ExpiresAt.UTC()
	}
	switch {
	case lifetime > 0 && (exp.IsZero() || now.Add(lifetime).Before(exp)):
		return now.Add(lifetime).UTC()
	case !exp.IsZero():
		return exp
	}
	return now.Add(def).UTC()
}

// DefaultLifetime is assumed for an access token whose answer says nothing
// of its lifetime and that is not a JWT: expires_in is optional in RFC 6749
// and RFC 8693 alike.
const DefaultLifetime = 5 * time.Minute

// Revoke asks the revocation endpoint revocationURL to revoke token (RFC
// 7009 §2.1), with hint as token_type_hint ("refresh_token",
// "access_token" or ""), authenticated as for Token. The endpoint answers
// 200 for a token it revoked and for one it does not know (§2.2): both are
// success. Anything else is an *Error; it is not retried (logout reports
// it and goes on).
func (c *Client) Revoke(ctx context.Context, revocationURL, token, hint string) error {
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	if (c.ClientSecret != "" || c.Assertion != nil) && c.TokenURL != "" && !sameOrigin(c.TokenURL, revocationURL) {
		// The client's credentials are the token endpoint's: an assertion
		// names it in its aud and is good there for its lifetime, so an
		// endpoint elsewhere could spend it (a federated one has no jti).
		return fmt.Errorf("the revocation endpoint %s is not on the token endpoint's origin %s: refusing to send the "+
			"client's credentials there (revoke the token at the provider)", originOf(revocationURL),
			originOf(c.TokenURL))
	}
	basic := c.ClientSecret != "" && c.AuthMethod != AuthPost && c.Assertion == nil
	if !basic {
		form.Set("client_id", c.ClientID)
		if c.ClientSecret != "" && c.Assertion == nil {
			form.Set("client_secret", c.ClientSecret)
		}
	}
	if c.Assertion != nil {
		// RFC 7523's assertion is for the token endpoint: its aud names it
		// (or the issuer), which a revocation endpoint accepts too.
		if err := c.Assertion.params(cmp.Or(c.TokenURL, revocationURL), form); err != nil {
			return fmt.Errorf("the client assertion: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, revocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("revoking at %s: %w", revocationURL, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		// RFC 6749 §2.3.1: each part form-urlencoded first.
		req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	peer := cmp.Or(c.Peer, PeerIdP)
	host := req.URL.Host
	resp, err := hc.Do(req)
	if err != nil {
		return &Error{Peer: peer, Host: host, Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 { // 200 per the RFC; some answer 204
		return nil
	}
	e := newError(peer, host, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	e.Err = fmt.Errorf("revocation endpoint answered %d", resp.StatusCode)
	return e
}

// sameOrigin says whether URLs a and b have one scheme, host and port
// (the scheme's default when absent).
func sameOrigin(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil || !strings.EqualFold(ua.Scheme, ub.Scheme) || !strings.EqualFold(ua.Hostname(), ub.Hostname()) {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "http") {
			return "80"
		}
		return "443"
	}
	return port(ua) == port(ub)
}

// originOf is u's scheme://host, for messages.
func originOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "(an unparsable URL)"
	}
	return p.Scheme + "://" + p.Host
}
