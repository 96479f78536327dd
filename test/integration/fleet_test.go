package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
)

// TestFleetSetupAndGetToken: setup --cluster-audience writes one user for
// three clusters and each cluster's exec extension; get-token, run as
// kubectl runs it for each cluster (spec.cluster.config is the
// extension), logs in once and exchanges the login's token per audience
// (the Keycloak simulator, RFC 8693), each cached on its own; the cluster
// without an audience gets the login's token. A cluster extension with an
// unknown key, or an allowedServer that is not the cluster's server, is
// refused.
func TestFleetSetupAndGetToken(t *testing.T) {
	e := newEnv(t)
	sim := idp.New(t)
	sim.Configure(func(s *idp.Sim) {
		for _, a := range []string{"cluster-a", "cluster-b"} {
			s.Clients[a] = &idp.Client{Secret: a + "-secret"}
		}
	})
	kc := filepath.Join(e.home, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"a", "b", "c"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example.com:6443"}
	}
	cfg.Contexts["a-admin"] = &clientcmdapi.Context{Cluster: "a", AuthInfo: "someone"}
	require.NoError(t, clientcmd.WriteToFile(*cfg, kc))

	login := []string{"--oidc-issuer-url=" + sim.Issuer(), "--oidc-client-id=robot", "--grant-type=client-credentials",
		"--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir}
	secret := "KUBECTL_IMPERSONATE_CLIENT_SECRET=robot-secret"
	r := e.run([]string{secret}, append([]string{"setup", "--write", "--kubeconfig=" + kc, "--user=fleet",
		"--cluster-audience=a=cluster-a", "--cluster-audience=b=cluster-b", "--cluster-audience=c="}, login...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `Cluster "a": the login's token exchanged for audience "cluster-a"; contexts a-admin use the user.`)
	assert.Contains(t, r.stdout, `Cluster "c": the login's token itself; contexts c use the user.`)

	written, err := clientcmd.LoadFromFile(kc)
	require.NoError(t, err)
	ex := written.AuthInfos["fleet"].Exec
	require.NotNil(t, ex)
	assert.True(t, ex.ProvideClusterInfo)
	assert.Contains(t, ex.Args, "--exchange=token-exchange")
	assert.Contains(t, ex.Args, "--exchange-audience-from-cluster=true")
	assert.Equal(t, "fleet", written.Contexts["a-admin"].AuthInfo)
	assert.Equal(t, "fleet", written.Contexts["b"].AuthInfo)
	assert.NotContains(t, written.Clusters["c"].Extensions, "client.authentication.k8s.io/exec")

	getToken := func(cluster string) result {
		t.Helper()
		c := written.Clusters[cluster]
		config := "null"
		if ext, ok := c.Extensions["client.authentication.k8s.io/exec"]; ok {
			b, err := json.Marshal(ext)
			require.NoError(t, err)
			config = string(b)
		}
		info := fmt.Sprintf(`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false,"cluster":{"server":%q,"config":%s}}}`, c.Server, config)
		return e.runAsKubectl(ex.Command, []string{"KUBERNETES_EXEC_INFO=" + info}, []string{secret}, ex.Args...)
	}
	auds := map[string]any{}
	for _, cluster := range []string{"a", "b", "c", "a", "b", "c"} {
		r := getToken(cluster)
		require.Equal(t, 0, r.code, "%s: %s", cluster, r.stderr)
		auds[cluster] = jwtClaimAny(t, parseCred(t, r.stdout).Status.Token, "aud")
	}
	assert.Equal(t, []any{"cluster-a"}, auds["a"])
	assert.Equal(t, []any{"cluster-b"}, auds["b"])
	assert.Nil(t, auds["c"], "c: the login's own token (client credentials: no audience at the simulator)")
	assert.Equal(t, 1, sim.Calls("client_credentials"), "one login for the fleet")
	assert.Equal(t, 2, sim.Calls("token-exchange"), "one exchange per audience, then the cache")
	files, _ := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	assert.Len(t, files, 3, "the login and two exchanged tokens, each cached on its own")

	// The extension is read strictly; it may narrow where the token goes.
	for _, tc := range []struct{ config, want string }{
		{`{"audiance":"cluster-a"}`, `unknown field "audiance"`},
		{`{"audience":"cluster-a","allowedServer":"https://other.example.com:6443"}`, "the cluster's client.authentication.k8s.io/exec extension allows https://other.example.com:6443 only"},
		{`{"audience":"cluster a"}`, "is not a printable name"},
	} {
		info := fmt.Sprintf(`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false,"cluster":{"server":"https://a.example.com:6443","config":%s}}}`, tc.config)
		r := e.runAsKubectl(ex.Command, []string{"KUBERNETES_EXEC_INFO=" + info}, []string{secret}, ex.Args...)
		assert.Equal(t, 1, r.code, tc.config)
		assert.Contains(t, r.stderr, tc.want, tc.config)
		assert.Empty(t, r.stdout)
	}
	// Without cluster information it cannot know the audience.
	r = e.runAsKubectl(ex.Command, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, []string{secret}, ex.Args...)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "needs to know the cluster: set provideClusterInfo: true")

	// status shows each context's own token.
	out := e.status(kc)
	require.Len(t, out.Sessions, 3)
	for _, s := range out.Sessions {
		assert.True(t, s.Valid, "%s: %+v", s.Context, s)
	}
}
