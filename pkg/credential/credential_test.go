package credential

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
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

func TestGetTokenTooShortLived(t *testing.T) {
	auth := &fakeAuth{lifetime: 10 * time.Second}
	s, _ := newSource(t, tokencache.None{}, auth, time.Now)
	_, err := s.Get(context.Background(), Options{})
	require.ErrorContains(t, err, "check the clocks")
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
