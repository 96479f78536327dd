//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
)

// TestFleetOneLoginThreeAudiences: three kube-apiservers, each trusting
// the Keycloak simulator's tokens for its own audience only (a structured
// AuthenticationConfiguration each); setup --cluster-audience writes one
// user for the three; kubectl on each context logs in once (client
// credentials) and gets a token exchanged for that cluster's audience (RFC
// 8693). kube-apiserver's audience check is the oracle: each token is
// accepted by its cluster and refused (401) by the other two.
func TestFleetOneLoginThreeAudiences(t *testing.T) {
	names := []string{"fleet-a", "fleet-b", "fleet-c"}
	st.keycloak.Configure(func(s *idp.Sim) {
		for _, n := range names {
			s.Clients[n] = &idp.Client{Secret: n + "-secret"}
		}
	})
	apis := map[string]*apiserver{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Go(func() {
			ac := map[string]any{
				"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
				"jwt": []map[string]any{{
					"issuer":        map[string]any{"url": st.keycloak.Issuer(), "audiences": []string{n}, "certificateAuthority": string(st.caPEM)},
					"claimMappings": map[string]any{"username": map[string]any{"claim": "email", "prefix": n + ":"}},
				}},
			}
			b, _ := json.Marshal(ac)
			path := filepath.Join(t.TempDir(), "authn.json")
			if errs[i] = os.WriteFile(path, b, 0o600); errs[i] != nil {
				return
			}
			a, cmd, err := st.startAPIServer(n, []string{"--authentication-config=" + path})
			if errs[i] = err; err != nil {
				return
			}
			t.Cleanup(func() { st.stopCmd(cmd) })
			errs[i] = waitHTTP(a.url+"/readyz", http.Header{"Authorization": {"Bearer " + adminToken}}, 90*time.Second, st.tlsClient())
			mu.Lock()
			apis[n] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, names[i])
	}

	robot := newPerson(t, "alice", st.api["structured"])
	cfg, err := clientcmd.LoadFromFile(robot.kubeconfig)
	require.NoError(t, err)
	for _, n := range names {
		cfg.Clusters[n] = &clientcmdapi.Cluster{Server: apis[n].url, CertificateAuthority: st.caFile}
	}
	require.NoError(t, clientcmd.WriteToFile(*cfg, robot.kubeconfig))
	secret := filepath.Join(t.TempDir(), "robot.secret")
	require.NoError(t, os.WriteFile(secret, []byte("robot-secret\n"), 0o600))
	args := []string{"setup", "--write", "--user=fleet", "--oidc-issuer-url=" + st.keycloak.Issuer(), "--oidc-client-id=robot",
		"--grant-type=client-credentials", "--oidc-client-secret-file=" + secret, "--oidc-certificate-authority=" + st.caFile,
		"--exec-interactive-mode=Never"}
	for _, n := range names {
		args = append(args, "--cluster-audience="+n+"="+n)
	}
	r := robot.plugin(nil, args...)
	require.Equal(t, 0, r.code, "setup: %s", r.stderr)

	logins, exchanges := st.keycloak.Calls("client_credentials"), st.keycloak.Calls("token-exchange")
	tokens := map[string]string{}
	for _, n := range names {
		k := robot.kubectl("--context="+n, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		require.Equal(t, 0, k.code, "%s: %s", n, k.stderr)
		assert.Equal(t, n+":service-account-robot", k.stdout, n)
		// The token kubectl got for n, as the plugin hands it out.
		info := fmt.Sprintf(`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false,"cluster":{"server":%q,"config":{"audience":%q}}}}`, apis[n].url, n)
		cfg, err := clientcmd.LoadFromFile(robot.kubeconfig)
		require.NoError(t, err)
		ex := cfg.AuthInfos["fleet"].Exec
		g := run(t, append(append([]string{}, robot.env...), "KUBERNETES_EXEC_INFO="+info), false, append([]string{ex.Command}, ex.Args...)...)
		require.Equal(t, 0, g.code, g.stderr)
		tokens[n] = credentialToken(t, g.stdout)
	}
	assert.Equal(t, logins+1, st.keycloak.Calls("client_credentials"), "one login for three clusters")
	assert.Equal(t, exchanges+3, st.keycloak.Calls("token-exchange"), "one exchange per cluster audience, then the cache")

	for _, tokenOf := range names {
		for _, cluster := range names {
			code := selfSubjectReviewStatus(t, apis[cluster].url, tokens[tokenOf])
			if tokenOf == cluster {
				assert.Equal(t, http.StatusCreated, code, "%s's token at %s", tokenOf, cluster)
			} else {
				assert.Equal(t, http.StatusUnauthorized, code, "%s's token at %s: kube-apiserver's audience check refuses it", tokenOf, cluster)
			}
		}
	}

	rows := robot.sessions()
	for _, n := range names {
		assert.True(t, rows[n].Valid, "%s: %+v", n, rows[n])
		assert.Equal(t, "service-account-robot", rows[n].Identity, n)
	}
}

// selfSubjectReviewStatus posts a SelfSubjectReview with token to server
// and returns the HTTP status.
func selfSubjectReviewStatus(t *testing.T, server, token string) int {
	t.Helper()
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	req, err := http.NewRequest(http.MethodPost, server+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := st.tlsClient().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}
