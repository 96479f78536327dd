// Package login obtains tokens from an OpenID Connect provider, and
// verifies ID tokens on receipt.
//
//   - The authorization code grant with PKCE (RFC 7636) through a loopback
//     server (RFC 8252, github.com/int128/oauth2cli) or a pasted code.
//   - The device authorization grant (RFC 8628).
//   - The client credentials grant (RFC 6749 §4.4) and refresh (RFC 6749
//     §6).
package login

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"time"

	"golang.org/x/oauth2"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oidc"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// ErrInteractionRequired means the grant needs a person but none can be
// asked: kubectl runs the plugin non-interactively, or there is no terminal.
var ErrInteractionRequired = errors.New("logging in needs a person at a browser or terminal, but this run is not " +
	"interactive")

// Config says whom to ask for a token and how.
type Config struct {
	// OIDCOptions are the provider, client and grant settings, as the
	// flags and profiles give them (pkg/credential/settings): one form, not a copy.
	credspec.OIDC
	// OpenURL replaces the browser (tests); nil runs BrowserCommand or
	// the platform's opener.
	OpenURL func(url string) error
	// Getenv reads the environment (session.Process.Getenv; nil: none is
	// known, so neither SSH nor a display): whether a browser
	// can be shown (headless).
	Getenv func(string) string

	HTTPClient *http.Client
	// Assertion, when set, authenticates the client at the token and
	// revocation endpoints instead of its secret (private_key_jwt, or a
	// federated assertion; RFC 7523).
	Assertion oauth.Assertion
	// Interactive allows grants that need a person.
	Interactive bool
	Stdin       io.Reader
	Stderr      io.Writer
	// StderrIsTerminal lets the countdown redraw one line.
	StderrIsTerminal bool
	Log              *logging.Logger
	Now              func() time.Time
}

// Scopes are "openid" plus the extra scopes, in a stable order.
func (c Config) Scopes() []string { return credspec.Scopes(c.ExtraScopes) }

// EffectiveGrant resolves "auto".
func (c Config) EffectiveGrant() string { return credspec.EffectiveGrant(c.GrantType) }

// NeedsPerson tells whether the grant involves a user at a browser or
// terminal (the password grant does when no password is given).
func (c Config) NeedsPerson() bool {
	switch c.EffectiveGrant() {
	case credspec.GrantClientCredentials:
		return false
	case credspec.GrantPassword:
		return c.Password == ""
	}
	return true
}

// NeedsPerson tells whether Grant will ask a person (and may: the run is
// interactive).
func (c *Client) NeedsPerson() bool { return c.cfg.Interactive && c.cfg.NeedsPerson() }

// Client talks to one provider. Discovery happens on first use.
type Client struct {
	cfg      Config
	provider *oidc.Provider
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AuthTimeout <= 0 {
		cfg.AuthTimeout = credspec.DefaultAuthTimeout
	}
	if len(cfg.ListenAddresses) == 0 {
		cfg.ListenAddresses = credspec.DefaultListenAddresses
	}
	return &Client{cfg: cfg}
}

func (c *Client) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.cfg.HTTPClient)
}

func (c *Client) discover(ctx context.Context) (*oidc.Provider, error) {
	if c.provider != nil {
		return c.provider, nil
	}
	c.cfg.Log.Printf(1, "discovering the OIDC provider %s", c.cfg.IssuerURL)
	p, err := oidc.Discover(ctx, c.cfg.IssuerURL, c.cfg.ClientID, c.cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	c.provider = p
	return p, nil
}

func (c *Client) oauth2Config(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     c.cfg.ClientID,
		ClientSecret: c.cfg.ClientSecret,
		Endpoint:     c.endpoint(p),
		Scopes:       c.Scopes(),
	}
}

func (c *Client) endpoint(p *oidc.Provider) oauth2.Endpoint {
	e := p.Endpoint
	switch {
	case c.cfg.ClientSecret == "":
		// A public client authenticates with client_id in the body only.
		e.AuthStyle = oauth2.AuthStyleInParams
	case c.cfg.ClientAuthMethod == "post":
		e.AuthStyle = oauth2.AuthStyleInParams
	case c.cfg.ClientAuthMethod == "basic":
		e.AuthStyle = oauth2.AuthStyleInHeader
	}
	return e
}

// TokenURL is the provider's token endpoint, from discovery.
func (c *Client) TokenURL(ctx context.Context) (string, error) {
	p, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	return p.Endpoint.TokenURL, nil
}

// Scopes are the scopes requested (see Config.Scopes).
func (c *Client) Scopes() []string { return c.cfg.Scopes() }

// Grant runs the configured grant and returns a verified token set.
func (c *Client) Grant(ctx context.Context) (*tokencache.Entry, error) {
	grant := c.cfg.EffectiveGrant()
	if c.cfg.NeedsPerson() && !c.cfg.Interactive {
		return nil, ErrInteractionRequired
	}
	p, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	if c.cfg.GrantType == "" || c.cfg.GrantType == credspec.GrantAuto {
		// auto: the browser, unless none can be shown and the provider
		// offers the device flow (a person at an SSH session).
		if yes, why := c.headless(); yes && p.Endpoint.DeviceAuthURL != "" {
			grant = credspec.GrantDeviceCode
			logging.Notice(c.cfg.Stderr, why+": logging in with the device code flow (--grant-type=authcode for the "+
				"browser)")
		}
	}
	var tok *oauth2.Token
	var nonce string
	switch grant {
	case credspec.GrantAuthCode:
		tok, nonce, err = c.authCode(ctx, p)
	case credspec.GrantAuthCodeKeyboard:
		tok, nonce, err = c.authCodeKeyboard(ctx, p)
	case credspec.GrantDeviceCode:
		tok, err = c.deviceCode(ctx, p)
	case credspec.GrantClientCredentials:
		tok, err = c.clientCredentials(ctx, p)
	case credspec.GrantPassword:
		tok, err = c.passwordGrant(ctx, p)
	default:
		return nil, fmt.Errorf("unknown grant type %q", grant)
	}
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" && grant != credspec.GrantClientCredentials &&
		slices.Contains(c.Scopes(), "offline_access") {
		logging.Notice(c.cfg.Stderr, NoRefreshTokenWarning)
	}
	return c.toEntry(ctx, p, grant, tok, nonce, "")
}

// NoRefreshTokenWarning is said when a person's login asked for
// offline_access and got no refresh token: OpenID Connect Core §11 lets a
// provider require consent for it (oidc-provider does; Google wants
// access_type=offline and prompt=consent instead).
const NoRefreshTokenWarning = "warning: the provider issued no refresh token although " +
	"offline_access was requested, so you will log in again when this token expires; " +
	"a provider that asks consent for offline access issues one with --oidc-auth-request-extra-params=prompt=consent " +
	"(docs/troubleshooting.md)"

// headless is headless() for this login's environment and browser.
func (c *Client) headless() (bool, string) {
	getenv := c.cfg.Getenv
	if getenv == nil { // no environment known: no SSH, no display
		getenv = func(string) string { return "" }
	}
	return headless(getenv, runtime.GOOS, c.cfg.OpenURL != nil || c.cfg.BrowserCommand != "")
}

// Refresh redeems refreshToken (RFC 6749 §6), asking for the original scopes
// again so that claims such as groups survive. A new ID token is verified;
// a missing new refresh token keeps the old one.
func (c *Client) Refresh(ctx context.Context, refreshToken string) (*tokencache.Entry, error) {
	p, err := c.discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("refreshing the token: %w", err)
	}
	c.cfg.Log.Printf(1, "refreshing the token at %s", p.Endpoint.TokenURL)
	tok, err := c.tokenRequest(ctx, p, url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {refreshToken},
	})
	if err != nil {
		return nil, fmt.Errorf("refreshing the token: %w", err)
	}
	return c.toEntry(ctx, p, c.cfg.EffectiveGrant(), tok, "", refreshToken)
}

// toEntry checks the token response and turns it into a cache entry.
func (c *Client) toEntry(ctx context.Context, p *oidc.Provider, grant string, tok *oauth2.Token, nonce,
	oldRefreshToken string) (*tokencache.Entry, error) {
	now := c.cfg.Now()
	e := &tokencache.Entry{
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		TokenType:    tok.TokenType,
		Issuer:       c.cfg.IssuerURL,
		ClientID:     c.cfg.ClientID,
		GrantType:    grant,
		Scopes:       c.Scopes(),
		ObtainedAt:   now.UTC(),
	}
	if e.RefreshToken == "" {
		e.RefreshToken = oldRefreshToken
	}
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		idt, err := p.VerifyIDToken(ctx, raw, nonce)
		if err != nil {
			return nil, err
		}
		e.IDToken = raw
		e.IDTokenExpiry = idt.Expiry.UTC()
	} else if !c.cfg.UseAccessToken && grant != credspec.GrantClientCredentials {
		return nil, errors.New("the provider answered without an ID token: request the openid scope from a provider " +
			"that issues ID tokens, or use --oidc-use-access-token")
	}
	if e.AccessToken != "" {
		e.AccessTokenExpiry = oauth.Expiry(tok.AccessToken, oauth.ExpiresIn(tok), now, oauth.DefaultLifetime)
	}
	return e, nil
}

// ErrNoRevocation means the provider advertises no revocation endpoint
// (Dex does not): a token it issued stays valid until it expires.
var ErrNoRevocation = errors.New("the identity provider advertises no revocation endpoint (RFC 7009), so its tokens " +
	"stay valid there until they expire")

// Revoke asks the provider to revoke token (RFC 7009), hint being
// "refresh_token" or "access_token", authenticated as the client is at the
// token endpoint. The endpoint must be https (or http on loopback), as the
// token endpoint's secrets are sent there.
func (c *Client) Revoke(ctx context.Context, token, hint string) error {
	p, err := c.discover(ctx)
	if err != nil {
		return err
	}
	if p.RevocationURL == "" {
		return ErrNoRevocation
	}
	if !printableWebURL(p.RevocationURL) {
		return fmt.Errorf("the provider's revocation endpoint %q is not an https URL: refusing to send a token there",
			p.RevocationURL)
	}
	c.cfg.Log.Printf(1, "revoking the %s at %s", hint, p.RevocationURL)
	tc := &oauth.Client{HTTPClient: c.cfg.HTTPClient, TokenURL: p.Endpoint.TokenURL, ClientID: c.cfg.ClientID,
		ClientSecret: c.cfg.ClientSecret,
		AuthMethod:   c.authMethod(p), Assertion: c.cfg.Assertion}
	return tc.Revoke(ctx, p.RevocationURL, token, hint)
}
