package settings

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
)

// keyFixtureArgs are get-token argument lists of every kind of login and
// exchange; testdata/cache-keys.json holds the cache ids key version v2
// computed for them (v1 entries were dropped when the allowed servers and
// the login bindings joined the key: docs/security.md). UPDATE_KEYS=1
// rewrites it, for the next deliberate key version only.
var keyFixtureArgs = [][]string{
	{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s"},
	{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s", "--oidc-extra-scope=groups,email", "--oidc-use-access-token"},
	{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=robot", "--grant-type=client-credentials", "--oidc-extra-scope=groups"},
	{"--oidc-issuer-url=https://id.example.com", "--oidc-client-id=k8s", "--grant-type=device-code"},
	{"--oidc-issuer-url=https://id.example.com/realms/r", "--oidc-client-id=gw", "--exchange=token-exchange", "--exchange-audience=api",
		"--exchange-scope=s1", "--impersonate-user=alice", "--exchange-requested-token-type=access_token"},
	{"--oidc-client-id=robot", "--exchange=cloudsigma", "--cloudsigma-region=zrh", "--impersonate-user-email=alice@example.com"},
	{"--oidc-issuer-url=https://securetoken.google.com/proj", "--oidc-client-id=proj", "--grant-type=identity-platform", "--identity-platform-api-key=k"},
}

// TestCacheKeysStable: the same settings find the entries written before
// the change: each id equals the one recorded before it.
func TestCacheKeysStable(t *testing.T) {
	b, err := os.ReadFile("testdata/cache-keys.json")
	require.NoError(t, err)
	var want []struct {
		Args   []string `json:"args"`
		ID     string   `json:"id"`
		BaseID string   `json:"baseId"`
	}
	require.NoError(t, json.Unmarshal(b, &want))
	if os.Getenv("UPDATE_KEYS") == "1" {
		want = want[:0]
		for _, args := range keyFixtureArgs {
			o := NewAuthOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(args))
			require.NoError(t, o.Complete(testfs.HomeOnlyEnv, func(string) {}))
			want = append(want, struct {
				Args   []string `json:"args"`
				ID     string   `json:"id"`
				BaseID string   `json:"baseId"`
			}{args, o.Key().ID(), o.BaseKey().ID()})
		}
		out, err := json.MarshalIndent(want, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile("testdata/cache-keys.json", append(out, '\n'), 0o644))
	}
	require.Len(t, want, len(keyFixtureArgs))
	for i, w := range want {
		assert.Equal(t, keyFixtureArgs[i], w.Args)
		o := NewAuthOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		require.NoError(t, fs.Parse(w.Args))
		require.NoError(t, o.Complete(testfs.HomeOnlyEnv, func(string) {}))
		assert.Equal(t, w.ID, o.Key().ID(), "%v", w.Args)
		assert.Equal(t, w.BaseID, o.BaseKey().ID(), "%v", w.Args)
	}
}
