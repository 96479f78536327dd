package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// The identity-platform grant through the built binaries: Google sign-in at
// the in-process provider (curl as the browser), signInWithIdp and refresh
// at the Identity Platform simulator, and claims' prediction with the
// documented mapping (username email, groups gcp.iam.roles).
func TestIdentityPlatformGrant(t *testing.T) {
	e := newEnv(t)
	sim := idp.NewGoogle(t, e.idp.Issuer(), e.idp.ClientID)
	sim.Configure(func(s *idp.GoogleSim) { s.Roles["alice@example.com"] = []string{"cluster-viewer"} })
	args := []string{"--grant-type=identity-platform", "--oidc-issuer-url=" + sim.Issuer(), "--oidc-client-id=" + e.idp.ClientID,
		"--identity-platform-api-key=" + sim.APIKey, "--identity-platform-endpoint=" + sim.URL, "--securetoken-endpoint=" + sim.URL,
		"--google-issuer-url=" + e.idp.Issuer(), "--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir,
		"--listen-address=127.0.0.1:0", "--browser-command=curl -sfL -o /dev/null"}
	secret := "KUBECTL_IMPERSONATE_CLIENT_SECRET=" + e.idp.ClientSecret

	r := e.runBinary(fastBinary, []string{secret, "KUBERNETES_EXEC_INFO=" + execInfoV1Interactive}, args...)
	require.Equal(t, 0, r.code, r.stderr)
	tok := parseCred(t, r.stdout).Status.Token
	assert.Equal(t, sim.Issuer(), jwtClaim(t, tok, "iss"))
	assert.Equal(t, 1, sim.Calls("signInWithIdp"))

	// Cached, then refreshed silently once it expires.
	r = e.runBinary(fastBinary, []string{secret, "KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, tok, parseCred(t, r.stdout).Status.Token)
	files, _ := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	entry, err := tokencache.DecodeEntry(b)
	require.NoError(t, err)
	entry.IDTokenExpiry = entry.ObtainedAt
	b, _ = entry.Encode()
	require.NoError(t, os.WriteFile(files[0], b, 0o600))
	r = e.runBinary(fastBinary, []string{secret, "KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, sim.Calls("token"), "refreshed at securetoken")
	assert.Equal(t, 1, e.idp.AuthRequests(), "no second Google sign-in")

	tokenFile := filepath.Join(e.home, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(parseCred(t, r.stdout).Status.Token), 0o600))
	// The simulator's issuer is http: kube-apiserver can never trust it,
	// and claims says so instead of trusting the token's own iss.
	c := e.run(nil, "claims", "--token-file="+tokenFile, "--oidc-username-claim=email", "--oidc-groups-claim=gcp.iam.roles", "-o", "jsonpath={.signatureVerified} {.predicted.refused}")
	require.Equal(t, 0, c.code, c.stderr)
	assert.Contains(t, c.stdout, "false ")
	assert.Contains(t, c.stdout, "URL scheme must be https")

	bad := e.run([]string{secret, "KUBERNETES_EXEC_INFO=" + execInfoV1Never}, append([]string{"get-token"}, append(args[:3:3], "--token-cache-storage=none")...)...)
	assert.Equal(t, 1, bad.code)
	assert.Contains(t, bad.stderr, "needs --identity-platform-api-key")
}
