//go:build e2e

package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestLockedExecEntryUnderRealKubectl: the trust model (docs/security.md)
// with the pinned kubectl as the parent process. Alice allowlists the
// plugin in her kuberc (setup --write-kuberc writes her settings into a
// profile); a kubeconfig written by someone else then names her profile
// with an exec env that sends her provider's traffic through its proxy,
// and another runs login from the entry. kubectl refuses both, in the
// plugin's one line, and the attacker's endpoint hears nothing; her own
// entry keeps working (the plugin tells the entry's env from kubectl's by
// kubectl's own environment).
func TestLockedExecEntryUnderRealKubectl(t *testing.T) {
	alice := newPerson(t, "alice", st.api["structured"])
	require.NoError(t, os.WriteFile(filepath.Join(alice.home, ".kube", "kuberc"), []byte(`apiVersion: kubectl.config.k8s.io/v1beta1
kind: Preference
credentialPluginPolicy: Allowlist
credentialPluginAllowlist:
- name: /bin/true
`), 0o600))
	r := alice.plugin(nil, append(alice.setup, "--write-kuberc")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `Wrote the profile "alice"`)
	r = alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "her own entry works through kubectl: %s", r.stderr)

	// Krew users allowlist kubectl-impersonate (Krew links it to the fast
	// binary): the full binary is listed too, so that kubectl runs the
	// login row and the plugin's own refusal is what is tested.
	kuberc := filepath.Join(alice.home, ".kube", "kuberc")
	b, err := os.ReadFile(kuberc)
	require.NoError(t, err)
	full := filepath.Join(filepath.Dir(st.ki), "kubectl-impersonate")
	require.NoError(t, os.WriteFile(kuberc, append(b, []byte("- name: "+full+"\n")...), 0o600))

	var hits atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer attacker.Close()
	cfg, err := clientcmd.LoadFromFile(alice.kubeconfig)
	require.NoError(t, err)
	own := cfg.AuthInfos["alice"].Exec
	for _, tt := range []struct {
		name, want string
		exec       *clientcmdapi.ExecConfig
	}{
		{"her profile through the entry's proxy and CA", "sets $HTTPS_PROXY, $SSL_CERT_FILE, which only you may choose", &clientcmdapi.ExecConfig{Command: own.Command, Args: []string{"--profile=alice", "--force-refresh"},
			Env: []clientcmdapi.ExecEnvVar{{Name: "HTTPS_PROXY", Value: attacker.URL}, {Name: "SSL_CERT_FILE", Value: st.caFile}}}},
		{"login from the entry", "only get-token may run that way", &clientcmdapi.ExecConfig{Command: full,
			Args: []string{"login", "--oidc-issuer-url=" + attacker.URL, "--oidc-client-id=x", "--grant-type=client-credentials"}}},
	} {
		name, exec := tt.name, tt.exec
		t.Run(name, func(t *testing.T) {
			hostile := cfg.DeepCopy()
			e := exec.DeepCopy()
			e.APIVersion, e.InteractiveMode, e.ProvideClusterInfo = own.APIVersion, clientcmdapi.NeverExecInteractiveMode, true
			hostile.AuthInfos["mallory"] = &clientcmdapi.AuthInfo{Exec: e}
			for _, c := range hostile.Contexts {
				c.AuthInfo = "mallory"
			}
			path := filepath.Join(t.TempDir(), "downloaded.kubeconfig")
			require.NoError(t, clientcmd.WriteToFile(*hostile, path))
			before := hits.Load()
			r := run(t, alice.env, false, st.kubectl, "--kubeconfig="+path, "get", "pods", "-n", "team-a")
			assert.NotEqual(t, 0, r.code)
			assert.Contains(t, r.stderr, "kubectl-impersonate: ")
			assert.Contains(t, r.stderr, tt.want)
			assert.Equal(t, before, hits.Load(), "requests that reached the attacker")
		})
	}
}
