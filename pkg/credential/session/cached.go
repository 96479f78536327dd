package session

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/jwtclaims"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// Cached is what the token cache holds for a session's settings, judged
// as get-token judges it (tokensource.State): the one reader of a
// session's token for whoami, claims, groups, status and logout.
type Cached struct {
	tokensource.State
	// Base is the login's entry, read when an RFC 8693 exchange's token is
	// not cached (the exchange is made again from it); nil otherwise.
	Base *tokensource.State
}

// Read reads the cache of a's identity in store, without a lock and
// without contacting anyone.
func Read(ctx context.Context, a *settings.AuthOptions, store tokencache.Store) (*Cached, error) {
	st, err := a.Source(store, nil, nil).State(ctx)
	if err != nil {
		return nil, err
	}
	c := &Cached{State: *st}
	if st.Entry == nil && a.Exchange == credspec.ExchangeTokenExchange {
		if base, err := a.BaseSource(store, nil, nil).State(ctx); err == nil && base.Entry != nil {
			c.Base = base
		}
	}
	return c, nil
}

// LoggedIn says a token of the identity is cached (the login's, at least).
func (c *Cached) LoggedIn() bool { return c.Entry != nil || c.Base != nil }

// Subject names whom the cached token is: from the token kubectl gets,
// else the entry's ID token ("" when neither is a JWT naming someone).
func (c *Cached) Subject() string {
	st := &c.State
	if st.Entry == nil {
		st = c.Base
	}
	if st == nil || st.Entry == nil {
		return ""
	}
	return cmp.Or(Subject(st.Token), Subject(st.Entry.IDToken))
}

// RefreshToken says a refresh token is cached for the identity.
func (c *Cached) RefreshToken() bool {
	if c.Entry != nil {
		return c.Entry.RefreshToken != ""
	}
	return c.Base != nil && c.Base.Entry.RefreshToken != ""
}

// Subject names the user of a JWT for display, from its claims (email,
// preferred_username, sub), "" for an opaque token. The token was verified
// when it was received; this reads it only to show whose it is.
func Subject(token string) string {
	t, err := jwtclaims.Decode(token)
	if err != nil {
		return ""
	}
	for _, c := range []string{"email", "preferred_username", "sub"} {
		if v := t.String(c); v != "" {
			return v
		}
	}
	return ""
}

// TokenSource describes where a session's token comes from. It never
// holds the token.
type TokenSource struct {
	Issuer    string    `json:"issuer,omitempty"`
	ClientID  string    `json:"clientID,omitempty"`
	GrantType string    `json:"grantType,omitempty"`
	Exchange  string    `json:"exchange,omitempty"`
	Storage   string    `json:"cacheStorage"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Cached    bool      `json:"cached"`
}

// ErrNoValidToken says the cache holds no token get-token would hand out.
var ErrNoValidToken = errors.New("no valid cached token for the current kubeconfig user: run any kubectl command " +
	"first, or kubectl impersonate login with the same flags")

// cachedToken is the token get-token would hand out now for a, from
// store, without renewing it, and where it comes from; ErrNoValidToken
// (with the description) when there is none. Gate alone calls it.
func cachedToken(ctx context.Context, a *settings.AuthOptions, store tokencache.Store) (string, *TokenSource, error) {
	ts := &TokenSource{Issuer: a.IssuerURL, ClientID: a.ClientID, GrantType: credspec.EffectiveGrant(a.GrantType),
		Exchange: a.Exchange, Storage: store.Name()}
	if a.Exchange == credspec.ExchangeCloudSigma {
		ts.Issuer, ts.GrantType = a.CloudSigma().Issuer(), "client-credentials + cloudsigma impersonation"
	}
	c, err := Read(ctx, a, store)
	if err != nil {
		return "", ts, err
	}
	if !c.Valid {
		return "", ts, ErrNoValidToken
	}
	ts.Cached, ts.Expiry, ts.Storage = true, c.Expiry, c.Storage
	return c.Token, ts, nil
}

// Quiet is a notice sink for the readers of the cache, which show what
// they found instead.
func Quiet(string) {}

// tokenOf is the token of e kubectl gets with the settings a, and its
// real expiry.
func tokenOf(e *tokencache.Entry, a *settings.AuthOptions) (string, time.Time) {
	return tokensource.Select(e, a.UsesAccessToken())
}
