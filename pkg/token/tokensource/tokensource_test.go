package tokensource

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// fakeAuth records calls; it is the provider as the use case sees it.
type fakeAuth struct {
	grants, refreshes atomic.Int32
	grantErr          error
	refreshErr        error
	lifetime          time.Duration
	now               func() time.Time
	delay             time.Duration
}

func (f *fakeAuth) entry(prefix string) *tokencache.Entry {
	exp := f.now().Add(f.lifetime)
	return &tokencache.Entry{IDToken: prefix + "-id", AccessToken: prefix + "-at", RefreshToken: prefix + "-rt", IDTokenExpiry: exp, AccessTokenExpiry: exp}
}

func (f *fakeAuth) Grant(context.Context) (*tokencache.Entry, error) {
	f.grants.Add(1)
	time.Sleep(f.delay)
	if f.grantErr != nil {
		return nil, f.grantErr
	}
	return f.entry("grant"), nil
}

func (f *fakeAuth) Refresh(_ context.Context, rt string) (*tokencache.Entry, error) {
	f.refreshes.Add(1)
	time.Sleep(f.delay)
	if f.refreshErr != nil {
		return nil, f.refreshErr
	}
	return f.entry("refresh"), nil
}

func newSource(t *testing.T, store tokencache.Store, auth *fakeAuth, now func() time.Time) (*Source, *[]string) {
	var notices []string
	var mu sync.Mutex
	auth.now = now
	if auth.lifetime == 0 {
		auth.lifetime = time.Hour
	}
	return &Source{
		Key:              tokencache.Key{Issuer: "https://idp", ClientID: "c", GrantType: "authcode"},
		Store:            store,
		LockDir:          t.TempDir(),
		LockTimeout:      5 * time.Second,
		NewAuthenticator: func() (Authenticator, error) { return auth, nil },
		Notify:           func(s string) { mu.Lock(); notices = append(notices, s); mu.Unlock() },
		Now:              now,
	}, &notices
}

func put(t *testing.T, s *Source, e *tokencache.Entry) {
	b, err := e.Encode()
	require.NoError(t, err)
	require.NoError(t, s.Store.Put(context.Background(), s.Key.ID(), b))
}

func TestGet(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tests := []struct {
		name          string
		cached        *tokencache.Entry
		corrupt       bool
		refreshErr    error
		grantErr      error
		useAccess     bool
		wantToken     string
		wantFrom      string
		wantGrants    int32
		wantRefreshes int32
		wantErrSubstr string
		wantNotice    string
	}{
		{name: "empty cache: grant", wantToken: "grant-id", wantFrom: FromGrant, wantGrants: 1},
		{name: "valid cache: no call", cached: &tokencache.Entry{IDToken: "cached-id", IDTokenExpiry: now.Add(time.Hour)}, wantToken: "cached-id", wantFrom: FromCache},
		{name: "expiring within MinValidity: refresh", cached: &tokencache.Entry{IDToken: "old", RefreshToken: "rt", IDTokenExpiry: now.Add(MinValidity - time.Second)},
			wantToken: "refresh-id", wantFrom: FromRefresh, wantRefreshes: 1},
		{name: "refresh refused: grant", cached: &tokencache.Entry{IDToken: "old", RefreshToken: "rt", IDTokenExpiry: now.Add(-time.Hour)}, refreshErr: errors.New("invalid_grant"),
			wantToken: "grant-id", wantFrom: FromGrant, wantRefreshes: 1, wantGrants: 1, wantNotice: "refresh token was refused"},
		{name: "expired, no refresh token: grant", cached: &tokencache.Entry{IDToken: "old", IDTokenExpiry: now.Add(-time.Hour)}, wantToken: "grant-id", wantFrom: FromGrant, wantGrants: 1},
		{name: "corrupted entry: notice and grant", corrupt: true, wantToken: "grant-id", wantFrom: FromGrant, wantGrants: 1, wantNotice: "discarding the cached token"},
		{name: "grant fails", grantErr: errors.New("boom"), wantErrSubstr: "boom", wantGrants: 1},
		{name: "access token chosen", useAccess: true, cached: &tokencache.Entry{IDToken: "id", AccessToken: "at", IDTokenExpiry: now.Add(time.Hour), AccessTokenExpiry: now.Add(time.Hour)},
			wantToken: "at", wantFrom: FromCache},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := &fakeAuth{refreshErr: tt.refreshErr, grantErr: tt.grantErr}
			s, notices := newSource(t, tokencache.NewDisk(t.TempDir()), auth, clock)
			s.UseAccessToken = tt.useAccess
			if tt.cached != nil {
				put(t, s, tt.cached)
			}
			if tt.corrupt {
				require.NoError(t, s.Store.Put(context.Background(), s.Key.ID(), []byte(`{"version":1,"id_tok`)))
			}
			r, err := s.Get(context.Background(), Options{})
			assert.Equal(t, tt.wantGrants, auth.grants.Load(), "grants")
			assert.Equal(t, tt.wantRefreshes, auth.refreshes.Load(), "refreshes")
			if tt.wantNotice != "" {
				require.NotEmpty(t, *notices)
				assert.Contains(t, (*notices)[0], tt.wantNotice)
			}
			if tt.wantErrSubstr != "" {
				require.ErrorContains(t, err, tt.wantErrSubstr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantToken, r.Token)
			assert.Equal(t, tt.wantFrom, r.From)
			_, exp := Select(r.Entry, tt.useAccess)
			assert.Equal(t, exp.Add(-MinValidity), r.Expiry, "reported expiry is MinValidity early")

			// What was obtained is cached: the next call makes no request.
			before := auth.grants.Load() + auth.refreshes.Load()
			r2, err := s.Get(context.Background(), Options{})
			require.NoError(t, err)
			assert.Equal(t, r.Token, r2.Token)
			assert.Equal(t, before, auth.grants.Load()+auth.refreshes.Load())
		})
	}
}

func TestGetConcurrentRefreshesOnce(t *testing.T) {
	now := time.Now()
	auth := &fakeAuth{delay: 50 * time.Millisecond}
	store := tokencache.NewDisk(t.TempDir())
	s, _ := newSource(t, store, auth, time.Now)
	put(t, s, &tokencache.Entry{IDToken: "old", RefreshToken: "rt", IDTokenExpiry: now.Add(-time.Minute)})

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine is its own Source, as each kubectl process would be.
			mine := *s
			r, err := mine.Get(context.Background(), Options{})
			if err == nil && r.Token != "refresh-id" {
				err = errors.New("got " + r.Token)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), auth.refreshes.Load())
	assert.Equal(t, int32(0), auth.grants.Load())
}

func TestGetKeyringUnavailableIsAnError(t *testing.T) {
	s, _ := newSource(t, &unavailableStore{}, &fakeAuth{}, time.Now)
	_, err := s.Get(context.Background(), Options{})
	require.ErrorIs(t, err, tokencache.ErrUnavailable)
	assert.ErrorContains(t, err, "--token-cache-storage=auto")
}

type unavailableStore struct{ tokencache.None }

func (unavailableStore) Name() string { return "keyring" }
func (unavailableStore) Get(context.Context, string) ([]byte, error) {
	return nil, tokencache.ErrUnavailable
}

// Lifetimes of real providers: a fresh token is used however short its
// life, renewed when a third of it is left (or the configured margin,
// whichever is less), and reported to kubectl that early.
func TestLifetimes(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		lifetime, minValidity, wantMargin time.Duration
	}{
		{20 * time.Second, 0, 20 * time.Second / 3},
		{60 * time.Second, 0, 20 * time.Second},
		{300 * time.Second, 0, 30 * time.Second},
		{3600 * time.Second, 0, 30 * time.Second},
		// CloudSigma's 5 minute margin with Keycloak's 300 s default.
		{20 * time.Second, 5 * time.Minute, 20 * time.Second / 3},
		{300 * time.Second, 5 * time.Minute, 100 * time.Second},
		{900 * time.Second, 5 * time.Minute, 5 * time.Minute},
		{3600 * time.Second, 5 * time.Minute, 5 * time.Minute},
	} {
		t.Run(fmt.Sprintf("%s token, %s margin", tc.lifetime, tc.minValidity), func(t *testing.T) {
			clock := t0
			auth := &fakeAuth{lifetime: tc.lifetime}
			s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), auth, func() time.Time { return clock })
			s.MinValidity = tc.minValidity
			r, err := s.Get(context.Background(), Options{})
			require.NoError(t, err, "a fresh token is never refused for being short-lived")
			assert.Equal(t, t0.Add(tc.lifetime-tc.wantMargin), r.Expiry, "reported to kubectl the margin early")
			clock = t0.Add(tc.lifetime - tc.wantMargin - time.Second)
			r, err = s.Get(context.Background(), Options{})
			require.NoError(t, err)
			assert.Equal(t, FromCache, r.From, "used until its margin")
			clock = t0.Add(tc.lifetime - tc.wantMargin + time.Second)
			r, err = s.Get(context.Background(), Options{})
			require.NoError(t, err)
			assert.Equal(t, FromRefresh, r.From, "renewed inside its margin")
			assert.Equal(t, int32(1), auth.refreshes.Load())
			assert.True(t, r.Expiry.After(clock), "never reported as already expired")
		})
	}
}

func TestGetTokenAlreadyExpired(t *testing.T) {
	auth := &fakeAuth{lifetime: -10 * time.Second}
	s, _ := newSource(t, tokencache.None{}, auth, time.Now)
	_, err := s.Get(context.Background(), Options{})
	require.ErrorContains(t, err, "had already expired")
	assert.ErrorContains(t, err, "check the clocks")
}

type passingErr struct{}

func (passingErr) Error() string   { return "HTTP 503" }
func (passingErr) Transient() bool { return true }

// During a provider outage inside the renewal window, the still-valid
// cached token is served with a notice; never past its expiry; a refusal
// is not an outage.
func TestOutageInsideRenewalWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		at         time.Duration // after t0; the cached token expires at t0+300s
		refreshErr error
		wantToken  string
		wantErr    string
	}{
		{name: "outage, token valid for 20 s more", at: 280 * time.Second, refreshErr: passingErr{}, wantToken: "cached-at"},
		{name: "outage, token valid for 1 s more", at: 299 * time.Second, refreshErr: passingErr{}, wantErr: "HTTP 503"},
		{name: "outage, token expired", at: 301 * time.Second, refreshErr: passingErr{}, wantErr: "HTTP 503"},
		{name: "refused refresh: a new grant", at: 280 * time.Second, refreshErr: errors.New("invalid_grant"), wantToken: "grant-at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := t0.Add(tc.at)
			auth := &fakeAuth{refreshErr: tc.refreshErr}
			s, notices := newSource(t, tokencache.NewDisk(t.TempDir()), auth, func() time.Time { return clock })
			s.UseAccessToken = true
			put(t, s, &tokencache.Entry{AccessToken: "cached-at", RefreshToken: "rt", AccessTokenExpiry: t0.Add(300 * time.Second), ObtainedAt: t0})
			r, err := s.Get(context.Background(), Options{})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantToken, r.Token)
			assert.True(t, r.Expiry.After(clock), "reported valid from now on")
			if tc.wantToken == "cached-at" {
				assert.False(t, r.Expiry.After(t0.Add(300*time.Second)), "never past the real expiry")
				require.NotEmpty(t, *notices)
				assert.Contains(t, (*notices)[len(*notices)-1], "using the cached one")
			}
		})
	}
}

func TestForceLogin(t *testing.T) {
	auth := &fakeAuth{}
	s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), auth, time.Now)
	put(t, s, &tokencache.Entry{IDToken: "cached", RefreshToken: "rt", IDTokenExpiry: time.Now().Add(time.Hour)})
	r, err := s.Get(context.Background(), Options{ForceLogin: true})
	require.NoError(t, err)
	assert.Equal(t, "grant-id", r.Token)
	assert.Equal(t, int32(0), auth.refreshes.Load())
}

// TestForceRefresh: a valid cached token is refreshed (not logged in
// again) with --force-refresh.
func TestForceRefresh(t *testing.T) {
	auth := &fakeAuth{}
	s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), auth, time.Now)
	put(t, s, &tokencache.Entry{IDToken: "cached", RefreshToken: "rt", IDTokenExpiry: time.Now().Add(time.Hour)})
	r, err := s.Get(context.Background(), Options{ForceRefresh: true})
	require.NoError(t, err)
	assert.NotEqual(t, "cached", r.Token)
	assert.Equal(t, int32(1), auth.refreshes.Load())
	assert.Equal(t, FromRefresh, r.From)
}
