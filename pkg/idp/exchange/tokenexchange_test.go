package exchange

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/login"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/idp/oauth"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/credspec"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// newTokenExchange logs in to the simulator's realm with client credentials
// (the robot's own token) and exchanges that token.
func newTokenExchange(t *testing.T, sim *idp.Sim, mutate func(*TokenExchange)) (*tokensource.Source, *TokenExchange) {
	dir := t.TempDir()
	store := tokencache.NewDisk(dir)
	lc := login.New(login.Config{OIDC: credspec.OIDC{IssuerURL: sim.Issuer(), ClientID: "robot", ClientSecret: "robot-secret",
		GrantType: credspec.GrantClientCredentials}, HTTPClient: http.DefaultClient})
	base := &tokensource.Source{Key: tokencache.Key{Issuer: sim.Issuer(), ClientID: "robot", GrantType: "client-credentials"},
		Store: store, LockDir: dir, UseAccessToken: true,
		NewAuthenticator: func() (tokensource.Authenticator, error) { return lc, nil }}
	tx := &TokenExchange{Base: base, TokenURL: lc.TokenURL, ClientID: "robot", ClientSecret: "robot-secret",
		HTTPClient: http.DefaultClient, Retry: oauth.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }}}
	if mutate != nil {
		mutate(tx)
	}
	key := base.Key
	key.Extra = tx.KeyExtra()
	src := &tokensource.Source{Key: key, Store: store, LockDir: dir, UseAccessToken: true,
		NewAuthenticator: func() (tokensource.Authenticator, error) { return tx, nil }}
	return src, tx
}

func TestTokenExchange(t *testing.T) {
	tests := []struct {
		name          string
		v1            bool
		clientMutate  func(*idp.Client)
		mutate        func(*TokenExchange)
		wantSub       string
		wantAud       []any
		wantErrSubstr []string
	}{
		{name: "V2 audience", mutate: func(x *TokenExchange) { x.Audiences = []string{"robot"}; x.Scopes = []string{"profile"} },
			wantSub: "service-account-robot", wantAud: []any{"robot"}},
		{name: "V1 impersonation", v1: true, mutate: func(x *TokenExchange) { x.RequestedSubject = "alice" },
			wantSub: "alice@example.com", wantAud: []any{"robot"}},
		{name: "V2 rejects requested_subject", mutate: func(x *TokenExchange) { x.RequestedSubject = "alice" },
			wantErrSubstr: []string{"answered 400 invalid_request: Parameter 'requested_subject' is not supported", "runs standard token exchange (V2)"}},
		{name: "client not allowed", clientMutate: func(c *idp.Client) { c.Exchange = false },
			wantErrSubstr: []string{"answered 403 access_denied: Client not allowed to exchange", "Standard Token Exchange"}},
		{name: "V1 without impersonation permission", v1: true, clientMutate: func(c *idp.Client) { c.Impersonation = false },
			mutate:        func(x *TokenExchange) { x.RequestedSubject = "alice" },
			wantErrSubstr: []string{"Client not allowed to exchange", "'impersonation'"}},
		{name: "unknown audience", mutate: func(x *TokenExchange) { x.Audiences = []string{"nope"} },
			wantErrSubstr: []string{"invalid_client: Audience not found", "every --exchange-audience must be a client"}},
		{name: "N_A token type for an ID token", v1: true, mutate: func(x *TokenExchange) { x.RequestedTokenType = "id_token" },
			wantSub: "service-account-robot", wantAud: []any{"robot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := idp.New(t)
			sim.Configure(func(s *idp.Sim) {
				s.V1 = tt.v1
				if tt.clientMutate != nil {
					tt.clientMutate(s.Clients["robot"])
				}
			})
			src, _ := newTokenExchange(t, sim, tt.mutate)
			r, err := src.Get(context.Background(), tokensource.Options{})
			if len(tt.wantErrSubstr) > 0 {
				require.Error(t, err)
				for _, s := range tt.wantErrSubstr {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			c := claims(t, r.Token)
			assert.Equal(t, tt.wantSub, c["sub"])
			assert.Equal(t, tt.wantAud, c["aud"])
			assert.Equal(t, 1, sim.Calls("token-exchange"))
			// Cached: no second exchange.
			_, err = src.Get(context.Background(), tokensource.Options{})
			require.NoError(t, err)
			assert.Equal(t, 1, sim.Calls("token-exchange"))
		})
	}
}

func TestTokenExchangeKeyIncludesEverySetting(t *testing.T) {
	base := credspec.TokenExchange{Audiences: []string{"a", "b"}, Scopes: []string{"s"}, RequestedSubject: "alice"}
	k := func(x credspec.TokenExchange) string {
		return tokencache.Key{Issuer: "i", ClientID: "c", Extra: x.KeyExtra()}.ID()
	}
	same := base
	same.Audiences = []string{"b", "a"}
	assert.Equal(t, k(base), k(same), "audience order does not matter")
	for _, mutate := range []func(*credspec.TokenExchange){
		func(x *credspec.TokenExchange) { x.Audiences = []string{"a"} },
		func(x *credspec.TokenExchange) { x.Scopes = nil },
		func(x *credspec.TokenExchange) { x.RequestedSubject = "bob" },
		func(x *credspec.TokenExchange) { x.RequestedTokenType = "id_token" },
		func(x *credspec.TokenExchange) { x.SubjectTokenType = "id_token" },
	} {
		other := base
		mutate(&other)
		assert.NotEqual(t, k(base), k(other))
	}
}

func TestTokenType(t *testing.T) {
	assert.Equal(t, "urn:ietf:params:oauth:token-type:access_token", credspec.TokenType("access_token"))
	assert.Equal(t, "urn:x:custom", credspec.TokenType("urn:x:custom"))
	assert.Equal(t, "", credspec.TokenType(""))
}
