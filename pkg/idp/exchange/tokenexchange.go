package exchange

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// RFC 8693 names.
const (
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// TokenExchange exchanges the token of Base's login at the provider's token
// endpoint (RFC 8693 §2.1), as Keycloak implements it: standard token
// exchange V2 (audience, scope) and the legacy V1 impersonation
// (requested_subject).
type TokenExchange struct {
	// TokenExchange holds the exchange's parameters and cache key.
	credspec.TokenExchange
	Base *tokensource.Source
	// TokenURL returns the token endpoint (from discovery).
	TokenURL     func(ctx context.Context) (string, error)
	ClientID     string
	ClientSecret string `datapolicy:"secret"`
	// ClientAuthMethod is oauth.AuthBasic (default) or oauth.AuthPost.
	ClientAuthMethod string
	// Assertion, when set, authenticates the client instead of its secret.
	Assertion oauth.Assertion

	HTTPClient *http.Client
	Retry      oauth.RetryPolicy
	Audit      *Auditor
	Log        *logging.Logger
	Now        func() time.Time
}

// Refresh is never called: exchanged entries hold no refresh token; the
// base login refreshes itself and a new exchange follows.
func (x *TokenExchange) Refresh(context.Context, string) (*tokencache.Entry, error) {
	return nil, errors.New("no refresh for exchanged tokens")
}

// Grant obtains the subject token from the base login, then exchanges it.
func (x *TokenExchange) Grant(ctx context.Context) (*tokencache.Entry, error) {
	subject, err := x.Base.Get(ctx, tokensource.Options{})
	if err != nil {
		return nil, err
	}
	tokenURL, err := x.TokenURL(ctx)
	if err != nil {
		return nil, err
	}
	stt := credspec.TokenType(x.SubjectTokenType)
	if stt == "" {
		stt = credspec.TokenType("access_token")
	}
	form := url.Values{"grant_type": {GrantTokenExchange}, "subject_token": {subject.Token},
		"subject_token_type": {stt}}
	if x.RequestedTokenType != "" {
		form.Set("requested_token_type", credspec.TokenType(x.RequestedTokenType))
	}
	for _, a := range x.Audiences {
		form.Add("audience", a)
	}
	if len(x.Scopes) > 0 {
		form.Set("scope", strings.Join(x.Scopes, " "))
	}
	if x.RequestedSubject != "" {
		form.Set("requested_subject", x.RequestedSubject)
	}
	x.Log.Printf(1, "token exchange at %s (audience %v, requested subject %q)", tokenURL, x.Audiences,
		x.RequestedSubject)
	hc := x.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	method := x.ClientAuthMethod
	if method == "" {
		method = oauth.AuthBasic
	}
	tc := &oauth.Client{HTTPClient: hc, TokenURL: tokenURL, ClientID: x.ClientID, ClientSecret: x.ClientSecret,
		AuthMethod: method, Retry: x.Retry, Assertion: x.Assertion}
	t, err := tc.Token(ctx, form, "")
	err = keycloakHint(x.ClientID, err)
	o, msg := outcome(err)
	x.Audit.Record(AuditRecord{Exchange: "token-exchange", Subject: x.RequestedSubject, Step: "token-exchange",
		Outcome: o, Error: msg})
	if err != nil {
		return nil, fmt.Errorf("token exchange: %w", err)
	}
	now := time.Now()
	if x.Now != nil {
		now = x.Now()
	}
	return &tokencache.Entry{
		AccessToken: t.AccessToken, TokenType: t.TokenType,
		AccessTokenExpiry: oauth.Expiry(t.AccessToken, oauth.ExpiresIn(t), now, oauth.DefaultLifetime),
		ClientID:          x.ClientID, GrantType: "token-exchange", ObtainedAt: now.UTC(),
	}, nil
}

// keycloakHint adds which Keycloak setting to check to Keycloak's token
// exchange errors.
func keycloakHint(clientID string, err error) error {
	var oe *oauth.Error
	if !errors.As(err, &oe) {
		return err
	}
	d := oe.Code + ": " + oe.Description
	switch {
	case strings.Contains(d, "requested_subject") && strings.Contains(d, "not supported"):
		return fmt.Errorf("%w: this Keycloak runs standard token exchange (V2), which cannot impersonate; enable the "+
			"legacy token-exchange and admin-fine-grained-authz features (V1) and the impersonation permission, or "+
			"drop --impersonate-user", err)
	case strings.Contains(d, "Client not allowed to exchange"):
		return fmt.Errorf("%w: in Keycloak, let client %q exchange tokens: enable 'Standard Token Exchange' in its "+
			"Capability config (V2), or grant it the token-exchange permission on the target client, plus "+
			"'impersonation' on users for --impersonate-user (V1)", err, clientID)
	case strings.HasPrefix(d, "invalid_client") && strings.Contains(strings.ToLower(d), "audience"):
		return fmt.Errorf("%w: every --exchange-audience must be a client of this realm (and, for V2, within the "+
			"subject token's audience)", err)
	case oe.Status == http.StatusUnauthorized:
		return fmt.Errorf("%w: check the client ID and secret", err)
	}
	return err
}
