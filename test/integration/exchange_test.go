package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
)

func cloudsigmaArgs(sim *idp.Sim, e *env, extra ...string) []string {
	return append([]string{"--exchange=cloudsigma", "--cloudsigma-oauth-url=" + sim.URL, "--cloudsigma-api-url=" + sim.APIURLTemplate(),
		"--cloudsigma-region=zrh", "--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir}, extra...)
}

var robotEnv = []string{"CLOUDSIGMA_CLIENT_ID=robot", "CLOUDSIGMA_CLIENT_SECRET=robot-secret"}

func TestCloudSigmaGetTokenAndWhoAmI(t *testing.T) {
	e := newEnv(t)
	sim := idp.New(t)
	audit := filepath.Join(e.home, "audit.log")
	args := append([]string{"get-token", "-v", "1"}, cloudsigmaArgs(sim, e, "--impersonate-user-email=alice@example.com", "--exchange-audit-log="+audit)...)
	r := e.run(append([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, robotEnv...), args...)
	require.Equal(t, 0, r.code, r.stderr)
	c := parseCred(t, r.stdout)
	assert.Equal(t, 3, sim.Requests(), "a cold exchange is three round trips")
	assert.Equal(t, 3, strings.Count(r.stderr, "audit: "), "one audit line per step at -v 1")
	for _, secret := range []string{c.Status.Token, "robot-secret"} {
		assert.NotContains(t, r.stderr, secret)
	}
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(b), "\n"))
	assert.NotContains(t, string(b), c.Status.Token)

	w := e.run(robotEnv, append([]string{"cloudsigma", "whoami", "-o", "json"}, cloudsigmaArgs(sim, e, "--impersonate-user-email=alice@example.com")...)...)
	require.Equal(t, 0, w.code, w.stderr)
	assert.Contains(t, w.stdout, `"accountEmail": "alice@example.com"`)
	assert.Contains(t, w.stdout, `"tokenSource": "cache"`)
	assert.Equal(t, 4, sim.Requests(), "whoami reused the cached token: only the profile call")
}

func TestCloudSigmaBadInput(t *testing.T) {
	e := newEnv(t)
	sim := idp.New(t)
	tests := []struct {
		name          string
		env           []string
		args          []string
		wantErrSubstr string
	}{
		{name: "missing email", env: robotEnv, args: cloudsigmaArgs(sim, e), wantErrSubstr: "--impersonate-user-email is required"},
		{name: "legacy credentials without opt-in", env: []string{"CLOUDSIGMA_CLIENT_ID=robot", "CLOUDSIGMA_USERNAME=u", "CLOUDSIGMA_PASSWORD=p"},
			args: cloudsigmaArgs(sim, e, "--impersonate-user-email=alice@example.com"), wantErrSubstr: "legacy credentials, which are off"},
		{name: "unknown exchange", env: robotEnv, args: []string{"--exchange=magic", "--oidc-issuer-url=https://x", "--oidc-client-id=c"}, wantErrSubstr: `--exchange "magic" is not one of`},
		{name: "exchange flag without exchange", env: nil, args: []string{"--oidc-issuer-url=https://x", "--oidc-client-id=c", "--impersonate-user=alice"}, wantErrSubstr: "--impersonate-user takes effect with --exchange=token-exchange only"},
		{name: "impersonation refused", env: robotEnv, args: cloudsigmaArgs(sim, e, "--impersonate-user-email=carol@example.com"), wantErrSubstr: "failed at step 3/3 impersonate: CloudSigma's API answered 404 notexist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := sim.Requests()
			r := e.run(append([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, tt.env...), append([]string{"get-token"}, tt.args...)...)
			assert.Equal(t, 1, r.code)
			assert.Empty(t, r.stdout)
			assert.Len(t, strings.Split(strings.TrimSpace(r.stderr), "\n"), 1, r.stderr)
			assert.Contains(t, r.stderr, tt.wantErrSubstr)
			if !strings.Contains(tt.name, "refused") {
				assert.Equal(t, before, sim.Requests(), "no network call on bad input")
			}
		})
	}
}

func TestTokenExchangeGetToken(t *testing.T) {
	e := newEnv(t)
	sim := idp.New(t)
	sim.Configure(func(s *idp.Sim) { s.V1 = true })
	args := []string{"get-token", "--oidc-issuer-url=" + sim.Issuer(), "--oidc-client-id=robot", "--grant-type=client-credentials",
		"--exchange=token-exchange", "--impersonate-user=alice", "--exchange-audience=robot",
		"--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir}
	secret := "KUBECTL_IMPERSONATE_CLIENT_SECRET=robot-secret"
	r := e.run([]string{secret, "KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
	require.Equal(t, 0, r.code, r.stderr)
	c := parseCred(t, r.stdout)
	assert.Equal(t, "alice@example.com", jwtClaim(t, c.Status.Token, "sub"))
	assert.Equal(t, 1, sim.Calls("token-exchange"))
	r = e.run([]string{secret, "KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, sim.Calls("token-exchange"), "the exchanged token is cached")

	// Another requested subject is another cache entry.
	r = e.run([]string{secret, "KUBERNETES_EXEC_INFO=" + execInfoV1Never}, append(args[:len(args):len(args)], "--impersonate-user=bob")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "bob@example.com", jwtClaim(t, parseCred(t, r.stdout).Status.Token, "sub"))
	assert.Equal(t, 2, sim.Calls("token-exchange"))
}

func TestAllowedServers(t *testing.T) {
	e := newEnv(t)
	sim := idp.New(t)
	cfgDir := filepath.Join(e.home, ".config", "kubectl-impersonate")
	require.NoError(t, os.MkdirAll(cfgDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(fmt.Sprintf(`profiles:
  tenant-a:
    exchange: cloudsigma
    cloudsigma-oauth-url: %s
    cloudsigma-api-url: %s
    cloudsigma-region: zrh
    impersonate-user-email: alice@example.com
    token-cache-storage: disk
    token-cache-dir: %s
    allowedServers: [https://api.tenant-a.example.com:6443]
    allowedServerCertificateAuthority: %s
`, sim.URL, sim.APIURLTemplate(), e.cacheDir, filepath.Join(cfgDir, "tenant-a-ca.crt"))), 0o600))
	caPEM := selfSignedPEM(t, "tenant-a CA")
	otherPEM := selfSignedPEM(t, "attacker CA")
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "tenant-a-ca.crt"), caPEM, 0o600))
	b64 := base64.StdEncoding.EncodeToString
	info := func(server string, extra ...string) string {
		cluster := `"server":"` + server + `","certificate-authority-data":"` + b64(caPEM) + `"`
		for _, x := range extra {
			cluster += "," + x
		}
		return `KUBERNETES_EXEC_INFO={"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false,"cluster":{` + cluster + `}}}`
	}
	const listed = "https://api.tenant-a.example.com:6443"
	tests := []struct {
		name          string
		execInfo      string
		args          []string
		wantErrSubstr string
	}{
		{name: "listed server", execInfo: info(listed + "/")},
		{name: "other server", execInfo: info("https://api.tenant-b.example.com:6443"), wantErrSubstr: "refusing to hand a token to https://api.tenant-b.example.com:6443"},
		{name: "no cluster info", execInfo: "KUBERNETES_EXEC_INFO=" + execInfoV1Never, wantErrSubstr: "provideClusterInfo: true"},
		// The exec entry's argv cannot widen the profile.
		{name: "flag widens the profile", execInfo: info("https://evil.example.com"), args: []string{"--allowed-server=https://evil.example.com"},
			wantErrSubstr: `--allowed-server "https://evil.example.com" is not among the allowedServers of profile "tenant-a"`},
		{name: "flag narrows the profile", execInfo: info(listed), args: []string{"--allowed-server=" + listed}},
		{name: "flag replaces the pinned CA", execInfo: info(listed), args: []string{"--allowed-server-certificate-authority=/etc/ssl/certs/ca-certificates.crt"},
			wantErrSubstr: "the command line may not replace it"},
		// The cluster entry of a hostile kubeconfig, with the listed URL.
		{name: "proxy-url", execInfo: info(listed, `"proxy-url":"http://evil.example.com:3128"`), wantErrSubstr: "sends it through the proxy http://evil.example.com:3128 (proxy-url)"},
		{name: "insecure-skip-tls-verify", execInfo: info(listed, `"insecure-skip-tls-verify":true`), wantErrSubstr: "skips TLS verification"},
		{name: "tls-server-name", execInfo: info(listed, `"tls-server-name":"evil.example.com"`), wantErrSubstr: `accepts a certificate for "evil.example.com"`},
		{name: "tls-server-name of the server itself", execInfo: info(listed, `"tls-server-name":"api.tenant-a.example.com"`)},
		{name: "another CA", execInfo: strings.Replace(info(listed), b64(caPEM), b64(otherPEM), 1), wantErrSubstr: "trusts other certificate authorities"},
		{name: "the system roots instead of the pinned CA", execInfo: strings.Replace(info(listed), `,"certificate-authority-data":"`+b64(caPEM)+`"`, "", 1), wantErrSubstr: "trusts other certificate authorities"},
		{name: "the pinned CA plus another", execInfo: strings.Replace(info(listed), b64(caPEM), b64(append(append([]byte{}, caPEM...), otherPEM...)), 1), wantErrSubstr: "trusts other certificate authorities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := sim.Requests()
			r := e.run(append([]string{tt.execInfo}, robotEnv...), append([]string{"get-token", "--profile=tenant-a"}, tt.args...)...)
			if tt.wantErrSubstr == "" {
				require.Equal(t, 0, r.code, r.stderr)
				parseCred(t, r.stdout)
				return
			}
			assert.Equal(t, 1, r.code)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tt.wantErrSubstr)
			assert.Equal(t, before, sim.Requests(), "refused before any network call")
		})
	}
}

func jwtClaim(t *testing.T, token, claim string) string {
	t.Helper()
	v, _ := jwtClaimAny(t, token, claim).(string)
	return v
}

// jwtClaimAny is the claim of a JWT as JSON decodes it.
func jwtClaimAny(t *testing.T, token, claim string) any {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	var m map[string]any
	require.NoError(t, jsonDecodeSegment(parts[1], &m))
	return m[claim]
}

func selfSignedPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
