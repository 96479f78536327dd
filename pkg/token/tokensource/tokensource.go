// Package tokensource is the get-token use case.
//
//   - A lock-free cache read.
//   - On a miss, a per-entry cross-process lock, a second read, a refresh
//     or a new grant, and a write back.
package tokensource

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// MinValidity is how long a cached token must still be valid to be handed
// out, and how much earlier than the real expiry the ExecCredential says it
// expires: client-go reuses a credential until exactly that timestamp, with
// no margin of its own, and a request signed a second before expiry can
// still arrive after it.
const MinValidity = 30 * time.Second

// Authenticator obtains tokens from the provider (login.Client).
type Authenticator interface {
	Grant(ctx context.Context) (*tokencache.Entry, error)
	Refresh(ctx context.Context, refreshToken string) (*tokencache.Entry, error)
}

// Source hands out a token for one identity.
type Source struct {
	Key            tokencache.Key
	Store          tokencache.Store
	LockDir        string
	LockTimeout    time.Duration
	UseAccessToken bool
	// NewAuthenticator is called only on a cache miss, so that nothing
	// about the provider is set up on the cached path.
	NewAuthenticator func() (Authenticator, error)
	// Notify shows a one-line notice to the user.
	Notify func(string)
	Log    *logging.Logger
	Now    func() time.Time
	// MinValidity overrides the package's MinValidity (CloudSigma's tokens
	// are renewed 5 minutes before they expire).
	MinValidity time.Duration
	// Cooldown is how long after an interactive login of this identity
	// failed or was abandoned no other is started (0: none): a GUI tool
	// that runs kubectl in a loop then gets one line per call instead of
	// a browser tab per call.
	Cooldown time.Duration
	// NoCooldown starts the login whatever the cooldown: a person asked
	// for it (kubectl impersonate login).
	NoCooldown bool
}

// ErrCooldown is returned while an identity's login is cooling down.
var ErrCooldown = errors.New("no new login yet")

// ErrRefreshKept is wrapped in the error of a refresh the provider could
// not answer for now: the refresh token is not refused, so it is kept.
var ErrRefreshKept = errors.New("the cached refresh token is kept: the next call tries again")

// PersonNeeder is an Authenticator whose Grant may need a person at a
// browser or terminal (and is allowed to ask one).
type PersonNeeder interface {
	NeedsPerson() bool
}

// InvalidGrant is an error of the provider refusing a grant outright
// (RFC 6749 §5.2 invalid_grant: a refresh token revoked, expired, or
// already rotated).
type InvalidGrant interface {
	InvalidGrant() bool
}

// How a token was obtained.
const (
	FromCache   = "cache"
	FromRefresh = "refresh"
	FromGrant   = "grant"
)

// Result is the token to hand to kubectl.
type Result struct {
	Token string `datapolicy:"token"`
	// Expiry is the time to report: MinValidity before the real expiry.
	Expiry time.Time
	Entry  *tokencache.Entry
	From   string
}

// Options of one Get.
type Options struct {
	// ForceLogin skips the cache and the refresh token.
	ForceLogin bool
	// ForceRefresh skips the cache but uses the refresh token.
	ForceRefresh bool
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Source) notify(msg string) {
	if s.Notify != nil {
		s.Notify(msg)
	}
}

// Select picks the token kubectl gets from e: the ID token unless the access
// token was asked for or no ID token was issued (client credentials).
func Select(e *tokencache.Entry, useAccessToken bool) (string, time.Time) {
	if useAccessToken || e.IDToken == "" {
		return e.AccessToken, e.AccessTokenExpiry
	}
	return e.IDToken, e.IDTokenExpiry
}

func (s *Source) minValidity() time.Duration {
	if s.MinValidity > 0 {
		return s.MinValidity
	}
	return MinValidity
}

// margin is how long before its expiry a token is renewed, and how much
// earlier than the real expiry kubectl is told it expires: the configured
// margin, but at most a third of the token's lifetime. A provider's short
// tokens (Keycloak's 300 s by default, shorter than CloudSigma's 5 minute
// margin) are then used for two thirds of their life instead of refused.
// Entries without ObtainedAt (older caches) get the configured margin.
func (s *Source) margin(e *tokencache.Entry, exp time.Time) time.Duration {
	m := s.minValidity()
	if !e.ObtainedAt.IsZero() && exp.After(e.ObtainedAt) {
		if third := exp.Sub(e.ObtainedAt) / 3; third < m {
			m = third
		}
	}
	return m
}

func (s *Source) usable(e *tokencache.Entry) (*Result, bool) {
	if e == nil {
		return nil, false
	}
	tok, exp := Select(e, s.UseAccessToken)
	m := s.margin(e, exp)
	if tok == "" || !s.now().Add(m).Before(exp) {
		return nil, false
	}
	return &Result{Token: tok, Expiry: exp.Add(-m), Entry: e}, true
}

// graceMin is the least validity a cached token must have left to be
// served while the provider cannot renew it: less is spent before a
// request reaches the API server.
const graceMin = 2 * time.Second

// stillValid is e's token while it is valid for graceMin more, to serve
// when renewing it failed for a passing reason: kubectl is told it
// expires halfway to its real expiry (at most MinValidity early), so it
// asks again before then and never holds an expired token.
func (s *Source) stillValid(e *tokencache.Entry) (*Result, bool) {
	if e == nil {
		return nil, false
	}
	tok, exp := Select(e, s.UseAccessToken)
	left := exp.Sub(s.now())
	if tok == "" || left <= graceMin {
		return nil, false
	}
	return &Result{Token: tok, Expiry: exp.Add(-min(left/2, MinValidity)), Entry: e, From: FromCache}, true
}

// transient tells a provider's passing trouble (no answer, 5xx, 429) from
// a refusal.
func transient(err error) bool {
	var passing interface{ Transient() bool }
	return errors.As(err, &passing) && passing.Transient()
}

// read returns the cached entry, nil on a miss. A corrupted entry is a miss
// with a notice; an unusable store is an error only when it was chosen
// explicitly (Auto falls back by itself).
func (s *Source) read(ctx context.Context, id string) (*tokencache.Entry, error) {
	b, err := s.Store.Get(ctx, id)
	switch {
	case err == nil:
	case errors.Is(err, tokencache.ErrNotFound):
		return nil, nil
	case errors.Is(err, tokencache.ErrCorrupt):
		s.notify(fmt.Sprintf("discarding the cached token: %v", err))
		return nil, nil
	case errors.Is(err, tokencache.ErrUnavailable):
		return nil, fmt.Errorf("%w: use --token-cache-storage=auto to fall back to disk, or unlock the keyring", err)
	default:
		s.notify(fmt.Sprintf("ignoring the token cache: %v", err))
		return nil, nil
	}
	e, err := tokencache.DecodeEntry(b)
	if err != nil {
		s.notify(fmt.Sprintf("discarding the cached token: %v", err))
		return nil, nil
	}
	return e, nil
}

// Cached returns the cached token when it is valid, without a lock and
// without contacting anyone: the fast path of every kubectl call. ok is
// false on a miss; err only for a store that cannot be used.
func (s *Source) Cached(ctx context.Context) (r *Result, ok bool, err error) {
	e, err := s.read(ctx, s.Key.ID())
	if err != nil {
		return nil, false, err
	}
	r, ok = s.usable(e)
	if ok {
		r.From = FromCache
	}
	return r, ok, nil
}

// Get returns a valid token, from the cache when it can.
func (s *Source) Get(ctx context.Context, opts Options) (*Result, error) {
	id := s.Key.ID()
	if !opts.ForceLogin && !opts.ForceRefresh {
		e, err := s.read(ctx, id)
		if err != nil {
			return nil, err
		}
		if r, ok := s.usable(e); ok {
			s.Log.Printf(1, "using the cached token (storage %s, expires %s)", s.Store.Name(),
				r.Expiry.Format(time.RFC3339))
			r.From = FromCache
			return r, nil
		}
	}

	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = tokencache.DefaultLockTimeout
	}
	lock, err := tokencache.AcquireLock(ctx, s.LockDir, id, timeout)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lock.Release() }()
	return s.getLocked(ctx, id, opts)
}

// getLocked re-reads the cache, then refreshes or logs in, and stores the
// result. It must be called while holding the entry's lock.
func (s *Source) getLocked(ctx context.Context, id string, opts Options) (*Result, error) {
	var att loginAttempt
	r, err := s.renew(ctx, id, opts, &att)
	att.end(s, id, err)
	return r, err
}

// loginAttempt is a login that asks a person, recorded next to the
// entry's lock from its start until a token it obtained is accepted.
type loginAttempt struct {
	started time.Time
}

// end records how the attempt ended: any failure once a person was asked
// (the provider's refusal, its passing trouble, an unusable token) starts
// the cooldown; an accepted token ends it.
func (a *loginAttempt) end(s *Source, id string, err error) {
	if a.started.IsZero() {
		return
	}
	if err != nil {
		_ = tokencache.WriteLoginAttempt(s.LockDir, id,
			tokencache.LoginAttempt{Started: a.started, Failed: s.now().UTC(),
				Reason: logging.OneLine(err.Error(), 200)})
		return
	}
	tokencache.ClearLoginAttempt(s.LockDir, id)
}

// renew is getLocked's work; att records a login that asks a person.
func (s *Source) renew(ctx context.Context, id string, opts Options, att *loginAttempt) (*Result, error) {
	e, err := s.read(ctx, id)
	if err != nil {
		return nil, err
	}
	if !opts.ForceLogin && !opts.ForceRefresh {
		if r, ok := s.usable(e); ok {
			s.Log.Printf(1, "another process refreshed the token while this one waited")
			r.From = FromCache
			return r, nil
		}
	}
	auth, err := s.NewAuthenticator()
	if err != nil {
		return nil, err
	}
	// outage serves the cached token, still valid though inside its
	// renewal window, when the provider cannot renew it for now.
	outage := func(err error) (*Result, bool) {
		if opts.ForceLogin || !transient(err) {
			return nil, false
		}
		r, ok := s.stillValid(e)
		if ok {
			s.notify(fmt.Sprintf("could not renew the token (%v); using the cached one, valid until %s", err,
				r.Expiry.Format(time.RFC3339)))
		}
		return r, ok
	}
	var fresh *tokencache.Entry
	from := FromGrant
	if e != nil && e.RefreshToken != "" && !opts.ForceLogin {
		var served *Result
		served, fresh, err = s.refresh(ctx, id, e, auth, opts, outage)
		switch {
		case served != nil:
			return served, nil
		case err != nil && transient(err):
			// The provider is in trouble, the refresh token is not refused:
			// keep it for the next call rather than asking for a login.
			return nil, fmt.Errorf("%w (%w)", err, ErrRefreshKept)
		case err != nil:
			s.Log.Printf(1, "refresh failed, logging in again: %v", err)
			s.notify(fmt.Sprintf("the refresh token was refused (%v); logging in again", err))
			fresh = nil
		default:
			from = FromRefresh
		}
	}
	if fresh == nil {
		fresh, err = s.grant(ctx, id, auth, att)
		if r, ok := outage(err); ok {
			return r, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return s.keep(ctx, id, fresh, from)
}

// refresh refreshes e's token; a provider that cannot answer for now has
// outage serve the cached token (served). An invalid_grant answer reads
// the cache again first: another process (one whose lock is elsewhere:
// another --token-cache-dir over the same keyring entry) may have rotated
// the refresh token, and its token (served) or its refresh token is used.
// A refresh token refused for good is forgotten, so that the processes
// waiting on this lock do not each present it again.
func (s *Source) refresh(ctx context.Context, id string, e *tokencache.Entry, auth Authenticator, opts Options,
	outage func(error) (*Result, bool)) (served *Result, fresh *tokencache.Entry, err error) {
	fresh, err = auth.Refresh(ctx, e.RefreshToken)
	if r, ok := outage(err); ok {
		return r, nil, nil
	}
	if err != nil && invalidGrant(err) {
		if again, rerr := s.read(ctx, id); rerr == nil && again != nil && again.RefreshToken != e.RefreshToken {
			if r, ok := s.usable(again); ok && !opts.ForceRefresh {
				s.Log.Printf(1, "the refresh token was rotated by another process; using its token")
				r.From = FromCache
				return r, nil, nil
			}
			if again.RefreshToken != "" {
				e = again
				fresh, err = auth.Refresh(ctx, e.RefreshToken)
			}
		}
	}
	if err != nil && invalidGrant(err) {
		dead := *e
		dead.RefreshToken = ""
		if b, eerr := dead.Encode(); eerr == nil && (dead.IDToken != "" || dead.AccessToken != "") {
			_ = s.Store.Put(ctx, id, b)
		} else {
			_ = s.Store.Delete(ctx, id)
		}
	}
	return nil, fresh, err
}

// keep checks a fresh entry's token, stores the entry and returns the
// token with its reported expiry.
func (s *Source) keep(ctx context.Context, id string, fresh *tokencache.Entry, from string) (*Result, error) {
	tok, exp := Select(fresh, s.UseAccessToken)
	if tok == "" {
		return nil, errors.New("the identity provider issued no usable token")
	}
	if now := s.now(); !now.Before(exp) {
		return nil, fmt.Errorf("the identity provider issued a token that had already expired (expiry %s, this "+
			"machine's time %s): check the clocks of this machine and the provider", exp.Format(time.RFC3339),
			now.UTC().Format(time.RFC3339))
	}
	// A fresh token is used however short its life: its margin is at most
	// a third of its lifetime (for an entry without ObtainedAt, taken from
	// now), and it is reported at least that early.
	if fresh.ObtainedAt.IsZero() {
		fresh.ObtainedAt = s.now().UTC()
	}
	r := &Result{Token: tok, Expiry: exp.Add(-s.margin(fresh, exp)), Entry: fresh, From: from}
	b, err := fresh.Encode()
	if err == nil {
		err = s.Store.Put(ctx, id, b)
	}
	if err != nil {
		s.notify(fmt.Sprintf("the token could not be cached, so the next command logs in again: %v", err))
	}
	return r, nil
}

func invalidGrant(err error) bool {
	var ig InvalidGrant
	return errors.As(err, &ig) && ig.InvalidGrant()
}

// grant runs auth's grant. One that needs a person is recorded next to the
// entry's lock from its start (att; getLocked records its end), so that for
// Cooldown after a failed or abandoned login the next calls for this
// identity fail fast instead of opening another browser.
func (s *Source) grant(
	ctx context.Context, id string, auth Authenticator, att *loginAttempt,
) (*tokencache.Entry, error) {
	pn, ok := auth.(PersonNeeder)
	if !ok || !pn.NeedsPerson() {
		return auth.Grant(ctx)
	}
	if err := s.cooldown(id); err != nil {
		return nil, err
	}
	att.started = s.now().UTC()
	_ = tokencache.WriteLoginAttempt(s.LockDir, id, tokencache.LoginAttempt{Started: att.started})
	return auth.Grant(ctx)
}

// cooldown refuses to start a login while the identity's last one failed
// less than Cooldown ago. A record of a login that never ended belongs to
// a process that died holding the lock (it is held now): abandoned now.
func (s *Source) cooldown(id string) error {
	if s.Cooldown <= 0 || s.NoCooldown {
		return nil
	}
	a := tokencache.ReadLoginAttempt(s.LockDir, id)
	if a == nil {
		return nil
	}
	now := s.now()
	if a.Failed.IsZero() {
		a.Failed, a.Reason = now.UTC(), "the process logging in ended before the login did"
		_ = tokencache.WriteLoginAttempt(s.LockDir, id, *a)
	}
	ago := now.Sub(a.Failed)
	if ago < 0 || ago >= s.Cooldown {
		return nil
	}
	return fmt.Errorf("%w: the last one for this identity failed %s ago (%s); another may start in %s",
		ErrCooldown, ago.Round(time.Second), a.Reason, (s.Cooldown - ago).Round(time.Second))
}

// State is what the cache holds for a source's identity, judged as Cached
// judges it: the one reading of a cached token that commands show (status,
// whoami, logout), so that they never disagree with get-token about it.
type State struct {
	// Entry is the cached entry, nil when none is cached.
	Entry *tokencache.Entry
	// Storage names where it was found (keyring, disk).
	Storage string
	// Token and Expiry are the token kubectl gets from the entry and its
	// real expiry.
	Token  string `datapolicy:"token"`
	Expiry time.Time
	// Valid: get-token hands Token out without renewing it.
	Valid bool
}

// State reads the source's entry without a lock and without contacting
// anyone. Unlike Cached, a store's failure or a corrupted entry is an
// error, to be shown: nothing is discarded.
func (s *Source) State(ctx context.Context) (*State, error) {
	b, err := s.Store.Get(ctx, s.Key.ID())
	if errors.Is(err, tokencache.ErrNotFound) {
		return &State{}, nil
	}
	if err != nil {
		return nil, err
	}
	st := &State{Storage: s.Store.Name()}
	if a, ok := s.Store.(*tokencache.Auto); ok && a.Where() != "" {
		st.Storage = a.Where()
	}
	if st.Entry, err = tokencache.DecodeEntry(b); err != nil {
		return nil, err
	}
	st.Token, st.Expiry = Select(st.Entry, s.UseAccessToken)
	_, st.Valid = s.usable(st.Entry)
	return st, nil
}
