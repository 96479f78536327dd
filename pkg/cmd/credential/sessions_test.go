package credential

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/tokencache"
)

// TestRevokeEntry: the refresh token first, then the access token; a
// provider without an endpoint is "not supported", a failure says why and
// stops there.
func TestRevokeEntry(t *testing.T) {
	for _, tt := range []struct {
		name      string
		entry     tokencache.Entry
		errs      map[string]error
		want      string
		wantHints []string
	}{
		{name: "both revoked", entry: tokencache.Entry{RefreshToken: "rt", AccessToken: "at"}, want: "revoked", wantHints: []string{"refresh_token", "access_token"}},
		{name: "access token only", entry: tokencache.Entry{AccessToken: "at"}, want: "revoked", wantHints: []string{"access_token"}},
		{name: "no endpoint", entry: tokencache.Entry{RefreshToken: "rt", AccessToken: "at"}, errs: map[string]error{"refresh_token": login.ErrNoRevocation},
			want: "not supported", wantHints: []string{"refresh_token"}},
		{name: "refresh revocation fails", entry: tokencache.Entry{RefreshToken: "rt", AccessToken: "at"}, errs: map[string]error{"refresh_token": errors.New("answered 503\nbusy")},
			want: "failed: answered 503 busy", wantHints: []string{"refresh_token"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var hints []string
			o := &LogoutOptions{revoker: func(_ context.Context, _ *settings.AuthOptions, token, hint string) error {
				hints = append(hints, hint)
				return tt.errs[hint]
			}}
			assert.Equal(t, tt.want, o.revokeEntry(context.Background(), settings.NewAuthOptions(), &tt.entry))
			assert.Equal(t, tt.wantHints, hints)
		})
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		42 * time.Second: "42s", 17*time.Minute + 5*time.Second: "17m", 3*time.Hour + 5*time.Minute: "3h5m", 50 * time.Hour: "2d2h",
	} {
		assert.Equal(t, want, shortDuration(d), d.String())
	}
}

func TestTokenSubject(t *testing.T) {
	// {"alg":"none"}.{"email":"a@example.com","sub":"s"}.
	assert.Equal(t, "a@example.com", tokenSubject("eyJhbGciOiJub25lIn0.eyJlbWFpbCI6ImFAZXhhbXBsZS5jb20iLCJzdWIiOiJzIn0.x"))
	// {"sub":"s"}
	assert.Equal(t, "s", tokenSubject("eyJhbGciOiJub25lIn0.eyJzdWIiOiJzIn0.x"))
	assert.Empty(t, tokenSubject("at-opaque"))
	assert.Empty(t, tokenSubject("a.!!!.c"))
}
