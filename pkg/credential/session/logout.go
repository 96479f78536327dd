package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// Revocation outcomes of a logout, from the worst.
const (
	RevocationFailed       = "failed"
	RevocationNotSupported = "not supported"
	RevocationSkipped      = "skipped"
	Revoked                = "revoked"
	NothingCached          = "nothing cached"
)

// Revoker asks a's provider to revoke token (Revoke, or a test's fake).
type Revoker func(ctx context.Context, a *settings.AuthOptions, token, hint string) error

// LogoutLockTimeout bounds logout's wait for a get-token of the same
// identity (a refresh in flight would cache a fresh token after the
// delete); a login waiting in a browser is not waited for.
const LogoutLockTimeout = 10 * time.Second

// Logout ends the session of a's identity: for each of its cache entries
// (the exchanged token's and, with an RFC 8693 exchange, the login's,
// which holds the refresh token), under the entry's lock, it revokes the
// tokens at the provider (revoke nil: skipped), deletes the entry from
// store and forgets the cooldown of a failed login. The local copies go
// whatever the revocation's outcome. It returns whom the tokens named and
// the worst outcome ("failed: why" for a failure).
func Logout(ctx context.Context, a *settings.AuthOptions, store tokencache.Store, revoke Revoker,
	warn func(string)) (identity, outcome string, err error) {
	ids := []string{a.Key().ID()}
	if a.Exchange == credspec.ExchangeTokenExchange {
		ids = append(ids, a.BaseKey().ID())
	}
	outcomes := map[string]bool{}
	for _, k := range ids {
		who, got, err := logoutEntry(ctx, a, store, k, revoke, warn)
		if err != nil {
			return "", "", err
		}
		identity = cmp.Or(identity, who)
		outcomes[got] = true
	}
	for _, worst := range []string{RevocationFailed, RevocationNotSupported, RevocationSkipped, Revoked} {
		for got := range outcomes {
			if strings.HasPrefix(got, worst) {
				return identity, got, nil
			}
		}
	}
	return identity, NothingCached, nil
}

// logoutEntry revokes and deletes the cache entry k under its lock.
func logoutEntry(ctx context.Context, a *settings.AuthOptions, store tokencache.Store, k string, revoke Revoker,
	warn func(string)) (identity, outcome string, err error) {
	if lock, err := tokencache.AcquireLock(ctx, a.TokenCacheDir, k, LogoutLockTimeout); err == nil {
		defer func() { _ = lock.Release() }()
	} else {
		warn("logging out without the entry's lock: " + logging.OneLine(err.Error(), 300))
	}
	b, err := store.Get(ctx, k)
	var e *tokencache.Entry
	switch {
	case err == nil:
		e, _ = tokencache.DecodeEntry(b)
	case errors.Is(err, tokencache.ErrNotFound), errors.Is(err, tokencache.ErrCorrupt):
	default:
		return "", "", fmt.Errorf("reading the cached token: %w", err)
	}
	outcome = NothingCached
	if e != nil {
		tok, _ := tokenOf(e, a)
		identity = cmp.Or(Subject(tok), Subject(e.IDToken))
		switch {
		case revoke == nil:
			outcome = RevocationSkipped
		case a.Exchange == credspec.ExchangeCloudSigma:
			// A service identity's client credentials: nothing a person holds.
			outcome = RevocationNotSupported
		default:
			outcome = revokeEntry(ctx, a, e, revoke)
		}
	}
	if err := store.Delete(ctx, k); err != nil {
		return "", "", fmt.Errorf("deleting the cached token: %w", err)
	}
	// A cooldown of the last failed login ends with the session.
	tokencache.ClearLoginAttempt(a.TokenCacheDir, k)
	return identity, outcome, nil
}

// revokeEntry revokes e's refresh token, then its access token (RFC 7009
// §2.1: revoking the refresh token may or may not end the access token).
func revokeEntry(ctx context.Context, a *settings.AuthOptions, e *tokencache.Entry, revoke Revoker) string {
	tokens := []struct{ token, hint string }{{e.RefreshToken, "refresh_token"}, {e.AccessToken, "access_token"}}
	for _, t := range tokens {
		if t.token == "" {
			continue
		}
		err := revoke(ctx, a, t.token, t.hint)
		if errors.Is(err, login.ErrNoRevocation) {
			return RevocationNotSupported
		}
		if err != nil {
			return RevocationFailed + ": " + logging.OneLine(err.Error(), 300)
		}
	}
	return Revoked
}
