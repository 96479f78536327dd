package tokensource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// personAuth is fakeAuth whose grant needs a person (a browser login).
type personAuth struct {
	*fakeAuth
	person bool
}

func (p personAuth) NeedsPerson() bool { return p.person }

// invalidGrantErr is the provider's invalid_grant, as pkg/idp/oauth reports it.
type invalidGrantErr struct{}

func (invalidGrantErr) Error() string      { return "the identity provider answered 400 invalid_grant" }
func (invalidGrantErr) InvalidGrant() bool { return true }

func TestCooldown(t *testing.T) {
	start := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	abandoned := errors.New("authentication timed out after 3m0s")
	tests := []struct {
		name string
		// record is the login record found; at is when the second Get runs.
		record       *tokencache.LoginAttempt
		damaged      bool
		expiredToken bool
		firstErr     error
		person       bool
		noCooldown   bool
		cooldown     time.Duration
		at           time.Duration
		wantGrants   int32
		wantErr      string
	}{
		{name: "failed login: the next call within the cooldown fails fast", firstErr: abandoned, person: true, cooldown: time.Minute, at: 10 * time.Second,
			wantGrants: 1, wantErr: "no new login yet: the last one for this identity failed 10s ago (authentication timed out after 3m0s); another may start in 50s"},
		{name: "after the cooldown a login starts again", firstErr: abandoned, person: true, cooldown: time.Minute, at: 61 * time.Second, wantGrants: 2},
		{name: "login (a person asked) ignores it", firstErr: abandoned, person: true, noCooldown: true, cooldown: time.Minute, at: time.Second, wantGrants: 2},
		{name: "no cooldown configured", firstErr: abandoned, person: true, at: time.Second, wantGrants: 2},
		{name: "robot grants (client credentials) have none", firstErr: abandoned, cooldown: time.Minute, at: time.Second, wantGrants: 2},
		{name: "a provider in trouble after the browser was opened starts it too", firstErr: transientErr{}, person: true, cooldown: time.Minute, at: time.Second,
			wantGrants: 1, wantErr: "(the identity provider answered 503); another may start in 59s"},
		{name: "a login whose process died holding the lock: abandoned now", record: &tokencache.LoginAttempt{Started: start.Add(-10 * time.Minute)},
			person: true, cooldown: time.Minute, wantErr: "the process logging in ended before the login did"},
		{name: "a record without a start is no cooldown", record: &tokencache.LoginAttempt{}, person: true, cooldown: time.Minute, wantGrants: 1},
		{name: "a damaged record is no cooldown", damaged: true, person: true, cooldown: time.Minute, wantGrants: 1},
		{name: "an unusable token once a person was asked starts it", expiredToken: true, person: true, cooldown: time.Minute, at: time.Second,
			wantGrants: 1, wantErr: "issued a token that had already expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := start
			clock := func() time.Time { return now }
			fake := &fakeAuth{}
			s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), fake, clock)
			s.NewAuthenticator = func() (Authenticator, error) { return personAuth{fake, tt.person}, nil }
			s.Cooldown, s.NoCooldown = tt.cooldown, tt.noCooldown
			switch {
			case tt.record != nil:
				require.NoError(t, tokencache.WriteLoginAttempt(s.LockDir, s.Key.ID(), *tt.record))
			case tt.damaged:
				require.NoError(t, os.WriteFile(filepath.Join(s.LockDir, s.Key.ID()+".login"), []byte(`{"started":`), 0o600))
			case tt.expiredToken:
				fake.lifetime = -time.Minute
				_, err := s.Get(context.Background(), Options{})
				require.Error(t, err)
				fake.lifetime = time.Hour
				now = start.Add(tt.at)
			default:
				fake.grantErr = tt.firstErr
				_, err := s.Get(context.Background(), Options{})
				require.Error(t, err)
				fake.grantErr = nil
				now = start.Add(tt.at)
			}
			r, err := s.Get(context.Background(), Options{})
			assert.Equal(t, tt.wantGrants, fake.grants.Load(), "grants")
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrCooldown)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "grant-id", r.Token)
			assert.Nil(t, tokencache.ReadLoginAttempt(s.LockDir, s.Key.ID()), "a successful login clears the record")
		})
	}
}

// transientErr is a provider's passing trouble (a 503).
type transientErr struct{}

func (transientErr) Error() string   { return "the identity provider answered 503" }
func (transientErr) Transient() bool { return true }

// rotatingAuth refuses the refresh token it is given with invalid_grant
// after another process (simulated) rotated it in the shared store.
type rotatingAuth struct {
	*fakeAuth
	s       *Source
	rotated *tokencache.Entry
	used    []string
}

func (r *rotatingAuth) Refresh(ctx context.Context, rt string) (*tokencache.Entry, error) {
	r.used = append(r.used, rt)
	if rt == "old-rt" {
		if r.rotated != nil {
			b, _ := r.rotated.Encode()
			_ = r.s.Store.Put(ctx, r.s.Key.ID(), b)
		}
		return nil, invalidGrantErr{}
	}
	return r.fakeAuth.Refresh(ctx, rt)
}

func TestInvalidGrantReadsTheCacheAgain(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	expired := &tokencache.Entry{IDToken: "old", RefreshToken: "old-rt", IDTokenExpiry: now.Add(-time.Minute)}
	tests := []struct {
		name          string
		rotated       *tokencache.Entry
		wantToken     string
		wantUsed      []string
		wantGrants    int32
		wantCachedRT  string
		wantNoticeRef bool
	}{
		{name: "rotated and refreshed by another process: its token", rotated: &tokencache.Entry{IDToken: "theirs", RefreshToken: "new-rt", IDTokenExpiry: now.Add(time.Hour)},
			wantToken: "theirs", wantUsed: []string{"old-rt"}, wantCachedRT: "new-rt"},
		{name: "rotated, token expired: the new refresh token is used", rotated: &tokencache.Entry{IDToken: "theirs", RefreshToken: "new-rt", IDTokenExpiry: now.Add(-time.Second)},
			wantToken: "refresh-id", wantUsed: []string{"old-rt", "new-rt"}, wantCachedRT: "refresh-rt"},
		{name: "dead for good: forgotten, then a login", wantToken: "grant-id", wantUsed: []string{"old-rt"}, wantGrants: 1, wantCachedRT: "grant-rt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeAuth{}
			s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), fake, clock)
			ra := &rotatingAuth{fakeAuth: fake, s: s, rotated: tt.rotated}
			s.NewAuthenticator = func() (Authenticator, error) { return ra, nil }
			put(t, s, expired)
			r, err := s.Get(context.Background(), Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.wantToken, r.Token)
			assert.Equal(t, tt.wantUsed, ra.used)
			assert.Equal(t, tt.wantGrants, fake.grants.Load())
			b, err := s.Store.Get(context.Background(), s.Key.ID())
			require.NoError(t, err)
			e, err := tokencache.DecodeEntry(b)
			require.NoError(t, err)
			assert.Equal(t, tt.wantCachedRT, e.RefreshToken)
		})
	}
}

// TestDeadRefreshTokenForgotten: after invalid_grant and a login that
// fails, the cache no longer holds the dead refresh token, so the next
// process does not present it again.
func TestDeadRefreshTokenForgotten(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	fake := &fakeAuth{refreshErr: invalidGrantErr{}, grantErr: errors.New("closed the browser")}
	s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), fake, func() time.Time { return now })
	put(t, s, &tokencache.Entry{IDToken: "old", AccessToken: "old-at", RefreshToken: "dead", IDTokenExpiry: now.Add(-time.Minute)})
	_, err := s.Get(context.Background(), Options{})
	require.Error(t, err)
	_, err = s.Get(context.Background(), Options{})
	require.Error(t, err)
	assert.Equal(t, int32(1), fake.refreshes.Load(), "the dead refresh token is presented once")
	assert.Equal(t, int32(2), fake.grants.Load())
}
