package integration

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
)

// TestRobotsWithoutSecrets: a client-credentials robot authenticates with
// an assertion, no secret registered or held: signed with its key
// (private_key_jwt), or federated (a workload's token, read from a file at
// each request). get-token answers through both binaries; the cache, the
// kubeconfig setup writes, argv and the -v 9 log hold neither the key nor
// an assertion; a federated token rotated in its file is read again.
func TestRobotsWithoutSecrets(t *testing.T) {
	for _, robot := range []string{"private-key-jwt", "federated"} {
		t.Run(robot, func(t *testing.T) {
			e := newEnv(t)
			e.idp.OmitIDToken(true)
			var flags, secrets []string
			switch robot {
			case "private-key-jwt":
				key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				require.NoError(t, err)
				der, err := x509.MarshalPKCS8PrivateKey(key)
				require.NoError(t, err)
				path := filepath.Join(e.home, "robot.key")
				require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
				require.NoError(t, e.idp.SetClientKey(key.Public()))
				flags = []string{"--oidc-client-auth-method=private-key-jwt", "--oidc-client-key-file=" + path}
				secrets = []string{base64.StdEncoding.EncodeToString(der)[:40]}
			case "federated":
				workload, err := rsa.GenerateKey(rand.Reader, 2048)
				require.NoError(t, err)
				e.idp.TrustFederation(oidctest.Federation{Issuer: "https://workload.example.com", Subject: "system:serviceaccount:ci:robot", Keys: []crypto.PublicKey{workload.Public()}})
				path := filepath.Join(e.home, "token")
				write := func(jti string) string {
					tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{Issuer: "https://workload.example.com", Subject: "system:serviceaccount:ci:robot",
						Audience: jwt.ClaimStrings{e.idp.Issuer()}, ID: jti, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))})
					s, err := tok.SignedString(workload)
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(path, []byte(s+"\n"), 0o600))
					return s
				}
				secrets = []string{write("one")}
				flags = []string{"--oidc-client-assertion-file=" + path}
				defer func() {
					// Rotated: the next request reads the new one.
					secrets = append(secrets, write("two"))
					args := append(append([]string{"get-token", "--grant-type=client-credentials", "--force-refresh"}, e.authArgs()...), flags...)
					r := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
					require.Equal(t, 0, r.code, r.stderr)
					assert.Empty(t, e.idp.AssertionRefusals(), "the rotated token is accepted")
				}()
			}
			args := append(append([]string{"get-token", "-v", "9", "--grant-type=client-credentials"}, e.authArgs()...), flags...)
			for bin, argv := range map[string][]string{fastBinary: args[1:], binary: args} {
				r := e.runBinary(bin, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, argv...)
				require.Equal(t, 0, r.code, r.stderr)
				c := parseCred(t, r.stdout)
				assert.True(t, strings.HasPrefix(c.Status.Token, "at-"), "the robot's access token")
				// Every assertion signed so far (issue 46: the list once held
				// the key alone, and a log of each signed one passed).
				received := e.idp.AssertionsReceived()
				require.NotEmpty(t, received, "the robot authenticated with an assertion")
				for _, s := range append(append([]string{}, secrets...), received...) {
					assert.NotContains(t, r.stderr, s, "-v 9 leaks the key or the assertion")
				}
			}
			assert.Empty(t, e.idp.AssertionRefusals())
			cached, err := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
			require.NoError(t, err)
			require.Len(t, cached, 1)
			b, err := os.ReadFile(cached[0])
			require.NoError(t, err)
			kc := filepath.Join(e.home, "kubeconfig")
			s := e.run(nil, append(append([]string{"setup", "--write", "--kubeconfig=" + kc, "--grant-type=client-credentials"}, e.authArgs()...), flags...)...)
			require.Equal(t, 0, s.code, s.stderr)
			written, err := os.ReadFile(kc)
			require.NoError(t, err)
			assert.Contains(t, string(written), flags[len(flags)-1], "the entry names the file")
			for _, secret := range secrets {
				assert.NotContains(t, string(b), secret, "the cache holds no key or assertion")
				assert.NotContains(t, string(written), secret, "the kubeconfig holds no key or assertion")
				assert.NotContains(t, strings.Join(args, " "), secret, "argv holds none")
			}
		})
	}
}
