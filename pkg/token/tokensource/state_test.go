package tokensource

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// TestStateAgreesWithCached: what State calls valid is exactly what the
// cached path hands out, at every point of a token's life (status once
// called a token valid that get-token renewed: it compared with the real
// expiry, get-token with the renewal margin).
func TestStateAgreesWithCached(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		entry     *tokencache.Entry
		at        time.Duration
		wantValid bool
		wantToken string
	}{
		{"nothing cached", nil, 0, false, ""},
		{"fresh", &tokencache.Entry{IDToken: "id", IDTokenExpiry: t0.Add(time.Hour), ObtainedAt: t0}, time.Minute, true, "id"},
		{"inside the renewal margin", &tokencache.Entry{IDToken: "id", IDTokenExpiry: t0.Add(time.Hour), ObtainedAt: t0}, time.Hour - 10*time.Second, false, "id"},
		{"expired", &tokencache.Entry{IDToken: "id", IDTokenExpiry: t0.Add(time.Hour), ObtainedAt: t0}, 2 * time.Hour, false, "id"},
		{"no ID token: the access token", &tokencache.Entry{AccessToken: "at", AccessTokenExpiry: t0.Add(time.Hour), ObtainedAt: t0}, time.Minute, true, "at"},
		{"a third of a short life", &tokencache.Entry{IDToken: "id", IDTokenExpiry: t0.Add(30 * time.Second), ObtainedAt: t0}, 19 * time.Second, true, "id"},
		{"past two thirds of a short life", &tokencache.Entry{IDToken: "id", IDTokenExpiry: t0.Add(30 * time.Second), ObtainedAt: t0}, 21 * time.Second, false, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := t0.Add(tc.at)
			s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), &fakeAuth{}, func() time.Time { return clock })
			if tc.entry != nil {
				put(t, s, tc.entry)
			}
			st, err := s.State(context.Background())
			require.NoError(t, err)
			_, cached, err := s.Cached(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tc.wantValid, st.Valid)
			assert.Equal(t, cached, st.Valid, "State and Cached agree")
			assert.Equal(t, tc.wantToken, st.Token)
			assert.Equal(t, tc.entry != nil, st.Entry != nil)
			if tc.entry != nil {
				assert.Equal(t, tokencache.StorageDisk, st.Storage)
			}
		})
	}
}

// TestStateShowsCorruption: a corrupted entry is an error to show, not a
// miss, and State leaves it where it is.
func TestStateShowsCorruption(t *testing.T) {
	s, _ := newSource(t, tokencache.NewDisk(t.TempDir()), &fakeAuth{}, time.Now)
	require.NoError(t, s.Store.Put(context.Background(), s.Key.ID(), []byte("{not json")))
	_, err := s.State(context.Background())
	require.ErrorIs(t, err, tokencache.ErrCorrupt)
	b, err := s.Store.Get(context.Background(), s.Key.ID())
	require.NoError(t, err)
	assert.Equal(t, "{not json", string(b))
}
