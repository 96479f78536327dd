package authn

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

func pemOf(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// TestAttacksOnTheAuthenticator: what a caller of the proxy or the author
// of a token given to claims controls cannot make this program send
// requests for them: each row's attack, and what reached the attacker's or
// the issuer's server.
func TestAttacksOnTheAuthenticator(t *testing.T) {
	is := startIssuer(t)
	cfg, algs := LegacyConfig(LegacyFlags{IssuerURL: is.URL, ClientIDs: []string{"kube"}, UsernamePrefix: "-"})
	cfg.JWT[0].Issuer.CertificateAuthority = string(is.CAPEM())

	t.Run("50 tokens with unknown key IDs: at most one JWKS refetch", func(t *testing.T) {
		a := newAuthn(t, Options{Config: cfg, SigningAlgs: algs})
		before := is.JWKSFetches.Load()
		for range 50 {
			tok, err := is.Mint(is.Claims("u-1", "kube", time.Hour, nil), testissuer.UnknownKid)
			require.NoError(t, err)
			_, err = a.Authenticate(context.Background(), tok)
			require.Error(t, err)
		}
		assert.LessOrEqual(t, is.JWKSFetches.Load()-before, int64(1), "JWKS fetches for 50 forged kids (one per %s at most)", KeyRefetchInterval)
		good, err := is.Mint(is.Claims("u-1", "kube", time.Hour, nil), testissuer.Valid)
		require.NoError(t, err)
		u, err := a.Authenticate(context.Background(), good)
		require.NoError(t, err, "valid tokens still pass")
		assert.Equal(t, "u-1", u.GetName())
	})

	t.Run("distributed claims of an unverified token are not fetched", func(t *testing.T) {
		var hits atomic.Int64
		attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			_, _ = w.Write([]byte(`{"groups": ["system:masters"]}`))
		}))
		defer attacker.Close()
		gcfg, galgs := LegacyConfig(LegacyFlags{IssuerURL: is.URL, ClientIDs: []string{"kube"}, UsernamePrefix: "-", GroupsClaim: "groups"})
		a := newAuthn(t, Options{Config: gcfg, SigningAlgs: galgs, Keys: KeysUnverified})
		tok, err := is.Mint(is.Claims("u-1", "kube", time.Hour, map[string]any{
			"_claim_names":   map[string]any{"groups": "src1"},
			"_claim_sources": map[string]any{"src1": map[string]any{"endpoint": attacker.URL + "/claims", "access_token": "attacker-chosen"}},
		}), testissuer.BadSignature)
		require.NoError(t, err)
		_, err = a.Authenticate(context.Background(), tok)
		require.Error(t, err, "the distributed groups cannot be resolved without the network")
		assert.Zero(t, hits.Load(), "requests that reached the URL the token named")
	})

	t.Run("an issuer's oversized discovery document is not read whole", func(t *testing.T) {
		var sent atomic.Int64
		big := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"issuer": "` + strings.Repeat("x", 64<<10)))
			for range 1024 { // 64 MiB, unless the reader stops
				n, err := w.Write([]byte(strings.Repeat("x", 64<<10)))
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		defer big.Close()
		bcfg, balgs := LegacyConfig(LegacyFlags{IssuerURL: big.URL, ClientIDs: []string{"kube"}, UsernamePrefix: "-"})
		bcfg.JWT[0].Issuer.CertificateAuthority = string(pemOf(big))
		a, err := New(context.Background(), Options{Config: bcfg, SigningAlgs: balgs})
		require.NoError(t, err)
		defer a.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		require.Error(t, a.WaitReady(ctx))
		assert.Less(t, sent.Load(), int64(16<<20), "bytes the issuer could push before the reader stopped")
	})
}
