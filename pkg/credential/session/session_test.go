package session

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
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
			revoke := func(_ context.Context, _ *settings.AuthOptions, token, hint string) error {
				hints = append(hints, hint)
				return tt.errs[hint]
			}
			assert.Equal(t, tt.want, revokeEntry(context.Background(), settings.NewAuthOptions(), &tt.entry, revoke))
			assert.Equal(t, tt.wantHints, hints)
		})
	}
}

func TestSubject(t *testing.T) {
	// {"alg":"none"}.{"email":"a@example.com","sub":"s"}.
	assert.Equal(t, "a@example.com", Subject("eyJhbGciOiJub25lIn0.eyJlbWFpbCI6ImFAZXhhbXBsZS5jb20iLCJzdWIiOiJzIn0.x"))
	// {"sub":"s"}
	assert.Equal(t, "s", Subject("eyJhbGciOiJub25lIn0.eyJzdWIiOiJzIn0.x"))
	assert.Empty(t, Subject("at-opaque"))
	assert.Empty(t, Subject("a.!!!.c"))
}
