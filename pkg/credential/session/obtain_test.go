package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokensource"
)

// TestNewSourceSetsUpNothing: the real recipe (NewSource) sets nothing of
// the provider up before a miss: a cached token is handed out although the
// client's private_key_jwt key cannot be read, and the key is read, and
// refused, on the miss alone (issue 46: a NewSource that built the login
// client up front passed every test, whose fakes replace NewSource).
func TestNewSourceSetsUpNothing(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "client.key")
	require.NoError(t, os.WriteFile(key, []byte("not a key"), 0o600))
	args := []string{"--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=robot", "--grant-type=client-credentials",
		"--oidc-client-auth-method=private-key-jwt", "--oidc-client-key-file=" + key,
		"--token-cache-storage=disk", "--token-cache-dir=" + filepath.Join(dir, "cache")}
	a, _, err := settings.ParseArgs(args, func(string) string { return "" }, func(string) {})
	require.NoError(t, err)
	env := Env{In: bytes.NewReader(nil), ErrOut: &bytes.Buffer{}}

	_, err = Obtain(context.Background(), NewSource, a, env, tokensource.Options{})
	require.Error(t, err, "a miss reads the key")
	assert.Contains(t, err.Error(), key)

	store, err := a.NewStore(Quiet)
	require.NoError(t, err)
	now := time.Now()
	e := &tokencache.Entry{AccessToken: "cached-access-token", AccessTokenExpiry: now.Add(time.Hour), IDToken: "x.y.z", IDTokenExpiry: now.Add(time.Hour), ObtainedAt: now}
	b, err := e.Encode()
	require.NoError(t, err)
	require.NoError(t, store.Put(context.Background(), a.Key().ID(), b))
	r, err := Obtain(context.Background(), NewSource, a, env, tokensource.Options{})
	require.NoError(t, err, "a hit sets up no provider: the key is not read")
	assert.NotEmpty(t, r.Token)
}
