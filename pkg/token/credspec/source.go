package credspec

import (
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// NewStore opens the configured cache.
func (o *Spec) NewStore(notify func(string)) (tokencache.Store, error) {
	return tokencache.New(tokencache.Options{Storage: o.TokenCacheStorage, Dir: o.TokenCacheDir, Notify: notify})
}

// MinValidity is how long before its expiry the selected token is renewed
// (0: the default of pkg/token/tokensource).
func (o *Spec) MinValidity() time.Duration {
	if o.Exchange == ExchangeCloudSigma {
		return CloudSigmaRenewBefore
	}
	return 0
}

// Source is the one recipe of the credential source kubectl's token comes
// from: its cache key (exchange and server bindings included), which token
// of the entry is handed out, the renewal margin and the lock directory.
// The fast binary reads the cache with it (auth nil: never called on a
// hit), the full binary's get-token obtains with it, and an exchange only
// supplies auth, so that both binaries always find the same entry.
func (o *Spec) Source(store tokencache.Store, notify func(string),
	auth func() (tokensource.Authenticator, error)) *tokensource.Source {
	return newSource(o.Key(), o.UsesAccessToken(), o.MinValidity(), o.LoginCooldown,
		SourceEnv{Store: store, LockDir: o.TokenCacheDir, Notify: notify}, auth)
}

// BaseSource is the login's own source, before any exchange: an exchange
// obtains its subject token from it, the access token unless the RFC 8693
// subject token type is the ID token.
func (o *Spec) BaseSource(store tokencache.Store, notify func(string),
	auth func() (tokensource.Authenticator, error)) *tokensource.Source {
	useAccessToken := o.UseAccessToken
	if o.Exchange == ExchangeTokenExchange {
		useAccessToken = TokenType(o.ExchangeSubject) != TokenType("id_token")
	}
	return newSource(o.BaseKey(), useAccessToken, 0, o.LoginCooldown,
		SourceEnv{Store: store, LockDir: o.TokenCacheDir, Notify: notify}, auth)
}

// StepSource is the source of one step of CloudSigma's flow (the service
// token, the RPT, the impersonated token): an access token under key,
// renewed CloudSigmaRenewBefore its expiry.
func (c CloudSigma) StepSource(key tokencache.Key, env SourceEnv, auth tokensource.Authenticator) *tokensource.Source {
	return newSource(key, true, CloudSigmaRenewBefore, 0, env,
		func() (tokensource.Authenticator, error) { return auth, nil })
}

// SourceEnv is where a credential source keeps its token and says what
// happens: the cache, the lock directory, notices and logs, the clock
// (nil: time.Now).
type SourceEnv struct {
	Store   tokencache.Store
	LockDir string
	Notify  func(string)
	Log     *logging.Logger
	Now     func() time.Time
}

// newSource is the one place a tokensource.Source is made (test/repo's
// TestOneSourceRecipe keeps it so): its key, which token of the entry it
// hands out, its renewal margin (0: pkg/token/tokensource's) and cooldown.
func newSource(key tokencache.Key, useAccessToken bool, minValidity, cooldown time.Duration, env SourceEnv,
	auth func() (tokensource.Authenticator, error)) *tokensource.Source {
	return &tokensource.Source{Key: key, Store: env.Store, LockDir: env.LockDir, UseAccessToken: useAccessToken,
		MinValidity: minValidity,
		Cooldown:    cooldown, NewAuthenticator: auth, Notify: env.Notify, Log: env.Log, Now: env.Now}
}

// UsesAccessToken tells whether the token handed out is the access token
// of the cached entry (exchanges always hand out access tokens).
func (o *Spec) UsesAccessToken() bool {
	return o.UseAccessToken || o.Exchange != ExchangeNone
}
