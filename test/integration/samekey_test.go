package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
)

// TestFastBinaryFindsTheFullBinarysEntry: for every grant and exchange,
// the full binary's get-token obtains and caches a token, and the fast
// binary, alone in a directory (so that it cannot hand the call on),
// answers that very token from the cache: both binaries compute the key,
// the token choice and the renewal margin with settings' one recipe.
func TestFastBinaryFindsTheFullBinarysEntry(t *testing.T) {
	b, err := os.ReadFile(fastBinary)
	require.NoError(t, err)
	alone := filepath.Join(t.TempDir(), "kubectl-impersonate-get_token")
	require.NoError(t, os.WriteFile(alone, b, 0o755))
	execInfo := func(interactive, cluster bool) string {
		info := fmt.Sprintf(`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":%t`, interactive)
		if cluster {
			info += `,"cluster":{"server":"https://k8s.example.com"}`
		}
		return "KUBERNETES_EXEC_INFO=" + info + "}}"
	}

	for _, tt := range []struct {
		name string
		// setup returns get-token's flags and the environment of the call.
		setup func(t *testing.T, e *env) ([]string, []string)
		// interactive: the full binary may log a person in (the fast binary
		// never is); cluster: kubectl provides the cluster (provideClusterInfo).
		interactive, cluster bool
	}{
		{name: "authcode (plain login)", interactive: true, setup: func(t *testing.T, e *env) ([]string, []string) {
			return e.authArgs(), nil
		}},
		{name: "authcode, access token, allowed servers", interactive: true, cluster: true,
			setup: func(t *testing.T, e *env) ([]string, []string) {
				return e.authArgs("--oidc-use-access-token", "--allowed-server=https://k8s.example.com"), nil
			}},
		{name: "client credentials", setup: func(t *testing.T, e *env) ([]string, []string) {
			e.idp.OmitIDToken(true)
			return e.authArgs("--grant-type=client-credentials"), []string{"KUBECTL_IMPERSONATE_CLIENT_SECRET=" + e.idp.ClientSecret}
		}},
		{name: "RFC 8693 token exchange", setup: func(t *testing.T, e *env) ([]string, []string) {
			sim := idp.New(t)
			sim.Configure(func(s *idp.Sim) { s.V1 = true })
			return []string{"--oidc-issuer-url=" + sim.Issuer(), "--oidc-client-id=robot", "--grant-type=client-credentials",
				"--exchange=token-exchange", "--impersonate-user=alice", "--exchange-audience=robot",
				"--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir}, []string{"KUBECTL_IMPERSONATE_CLIENT_SECRET=robot-secret"}
		}},
		{name: "CloudSigma impersonation", setup: func(t *testing.T, e *env) ([]string, []string) {
			return cloudsigmaArgs(idp.New(t), e, "--impersonate-user-email=alice@example.com"), robotEnv
		}},
		{name: "CloudSigma impersonation, allowed servers", cluster: true, setup: func(t *testing.T, e *env) ([]string, []string) {
			return cloudsigmaArgs(idp.New(t), e, "--impersonate-user-email=alice@example.com", "--allowed-server=https://k8s.example.com"), robotEnv
		}},
		{name: "Identity Platform", interactive: true, setup: func(t *testing.T, e *env) ([]string, []string) {
			sim := idp.NewGoogle(t, e.idp.Issuer(), e.idp.ClientID)
			return []string{"--grant-type=identity-platform", "--oidc-issuer-url=" + sim.Issuer(), "--oidc-client-id=" + e.idp.ClientID,
				"--identity-platform-api-key=" + sim.APIKey, "--identity-platform-endpoint=" + sim.URL, "--securetoken-endpoint=" + sim.URL,
				"--google-issuer-url=" + e.idp.Issuer(), "--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir,
				"--listen-address=127.0.0.1:0", "--browser-command=curl -sfL -o /dev/null"}, []string{"KUBECTL_IMPERSONATE_CLIENT_SECRET=" + e.idp.ClientSecret}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			args, vars := tt.setup(t, e)
			full := e.run(append([]string{execInfo(tt.interactive, tt.cluster)}, vars...), append([]string{"get-token"}, args...)...)
			require.Equal(t, 0, full.code, full.stderr)
			token := parseCred(t, full.stdout).Status.Token
			require.NotEmpty(t, token)

			fast := e.runBinary(alone, append([]string{execInfo(false, tt.cluster)}, vars...), args...)
			require.Equal(t, 0, fast.code, "the fast binary, alone, must answer from the cache: %s", fast.stderr)
			assert.Equal(t, token, parseCred(t, fast.stdout).Status.Token)
			assert.Empty(t, fast.stderr)
		})
	}
}
