//go:build e2e

// Clients that are not client-go: a tenant's program on the Kubernetes
// Python client (Debian's python3-kubernetes 22.6) and on the JavaScript
// client (@kubernetes/client-node 1.4.0), each running the exec entry setup
// wrote, against the real kube-apiserver and oidc-provider.

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clientCall is one line a tenant's program printed.
type clientCall struct {
	Call  int    `json:"call"`
	OK    bool   `json:"ok"`
	Pods  int    `json:"pods"`
	Error string `json:"error"`
}

// clientArgv is the command line of the tenant's program in lang.
func clientArgv(t *testing.T, lang, kubeconfig string, calls int) []string {
	t.Helper()
	switch lang {
	case "python":
		script, err := filepath.Abs("clients/list_pods.py")
		require.NoError(t, err)
		return []string{"/usr/bin/python3", script, kubeconfig, "team-a", strconv.Itoa(calls)}
	case "javascript":
		return []string{"node", filepath.Join(st.nodeDir, "list_pods.mjs"), kubeconfig, "team-a", strconv.Itoa(calls)}
	}
	t.Fatalf("no client %q", lang)
	return nil
}

// runClient runs the tenant's program in lang as p, without a terminal,
// with kubeconfig (default: p's), and returns its calls.
func (p *person) runClient(lang, kubeconfig string, calls int) ([]clientCall, result) {
	p.t.Helper()
	if kubeconfig == "" {
		kubeconfig = p.kubeconfig
	}
	r := run(p.t, p.env, false, clientArgv(p.t, lang, kubeconfig, calls)...)
	var out []clientCall
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var c clientCall
		if json.Unmarshal([]byte(line), &c) == nil {
			out = append(out, c)
		}
	}
	require.Len(p.t, out, calls, "the program's calls: %s %s", r.stdout, r.stderr)
	return out, r
}

// expireCache makes p's cached token expired (its refresh token kept).
func (p *person) expireCache() {
	p.t.Helper()
	files := p.diskEntries()
	require.Len(p.t, files, 1)
	e := p.cachedEntry()
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	e["id_token_expiry"], e["access_token_expiry"] = past, past
	b, err := json.Marshal(e)
	require.NoError(p.t, err)
	require.NoError(p.t, os.WriteFile(files[0], b, 0o600))
}

// pluginLines are the lines of ours a client showed: Python logs the
// plugin's stderr on a line of its own, JavaScript's error is the stderr.
func pluginLines(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "kubectl-impersonate: "); i >= 0 {
			out = append(out, line[i:])
		}
	}
	return out
}

// TestClientsThatAreNotClientGo: a program on the Python client and one on
// the JavaScript client, each with the entry setup wrote: an empty cache
// without a terminal (no browser; the one line each client shows names
// the context to log in with), then, logged in, a cached token (no
// request to the provider), an expired token refreshed, and an expired
// token with the provider down (the line says what to run).
func TestClientsThatAreNotClientGo(t *testing.T) {
	onFirstVersionOnly(t)
	for _, lang := range []string{"python", "javascript"} {
		t.Run(lang, func(t *testing.T) {
			alice := opPerson(t, "--oidc-auth-request-extra-params=prompt=consent")
			auth0 := st.op.Count("auth")
			calls, r := alice.runClient(lang, "", 1)
			assert.False(t, calls[0].OK)
			shown := pluginLines(r.stderr + calls[0].Error)
			require.NotEmpty(t, shown, "the client shows the plugin's line: %s %s", r.stderr, calls[0].Error)
			assert.Contains(t, shown[0], "run 'kubectl impersonate login --context=e2e' in a terminal first")
			for _, l := range shown {
				assert.Equal(t, shown[0], l, "one line, said the same each time")
			}
			assert.Zero(t, alice.browserStarts(), "no browser")
			assert.Equal(t, auth0, st.op.Count("auth"))

			r = alice.plugin(nil, "login", "--context=e2e", "--kubeconfig="+alice.kubeconfig)
			require.Equal(t, 0, r.code, "the line's command: %s", r.stderr)

			tokens := st.op.Count("token:refresh_token") + st.op.Count("token:authorization_code")
			calls, r = alice.runClient(lang, "", 2)
			for _, c := range calls {
				assert.True(t, c.OK, "cached: %+v %s", c, r.stderr)
			}
			assert.Equal(t, tokens, st.op.Count("token:refresh_token")+st.op.Count("token:authorization_code"), "the cache answers")

			alice.expireCache()
			refreshes := st.op.Count("token:refresh_token")
			calls, r = alice.runClient(lang, "", 1)
			assert.True(t, calls[0].OK, "refreshed: %+v %s", calls[0], r.stderr)
			assert.Equal(t, refreshes+1, st.op.Count("token:refresh_token"))

			alice.expireCache()
			st.op.SetDown(true)
			calls, r = alice.runClient(lang, "", 1)
			st.op.SetDown(false)
			assert.False(t, calls[0].OK)
			shown = pluginLines(r.stderr + calls[0].Error)
			require.NotEmpty(t, shown, "%s %s", r.stderr, calls[0].Error)
			t.Logf("%s shows: %s", lang, shown[0])
			assert.Contains(t, shown[0], "refreshing the token")
			assert.Contains(t, shown[0], "kubectl impersonate login --context=e2e", "it says what to run")
			assert.Contains(t, shown[0], "the cached refresh token is kept")
			assert.Equal(t, 1, alice.browserStarts(), "no browser but the login's")

			// The provider back, nothing was lost: the next call refreshes.
			calls, r = alice.runClient(lang, "", 1)
			assert.True(t, calls[0].OK, "after the outage: %+v %s", calls[0], r.stderr)
		})
	}
}

// TestPythonClientOnATerminal: a program on the Python client run in a
// terminal (a pseudo-terminal here) logs in with the device flow: the
// client captures the plugin's stderr, so the plugin shows the code on the
// terminal itself; the person opens the URL it shows (Chromium), and the
// program goes on.
func TestPythonClientOnATerminal(t *testing.T) {
	onFirstVersionOnly(t)
	alice := opPerson(t, "--grant-type=device-code", "--skip-open-browser")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := clientArgv(t, "python", alice.kubeconfig, 1)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = alice.env
	tty, err := pty.Start(cmd) // its own session, the pty its controlling terminal
	require.NoError(t, err)
	defer tty.Close()
	var mu sync.Mutex
	var screen strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(tty)
		for sc.Scan() {
			mu.Lock()
			screen.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	seen := func() string { mu.Lock(); defer mu.Unlock(); return screen.String() }
	url := regexp.MustCompile(`Or open (https://\S+)`)
	var open string
	for range 300 {
		if m := url.FindStringSubmatch(seen()); m != nil {
			open = m[1]
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NotEmpty(t, open, "the device code reached the terminal: %q", seen())
	assert.Regexp(t, `Open https://\S+ and enter the code \S+`, seen())
	r := run(t, alice.env, false, st.browser, open)
	require.Equal(t, 0, r.code, "the person at the browser: %s", r.stderr)
	require.NoError(t, cmd.Wait(), seen())
	<-done
	assert.Contains(t, seen(), `"ok": true`, "the program went on")
}

// TestJavaScriptClientGuard: the JavaScript client sets no
// KUBERNETES_EXEC_INFO, so the plugin knows it by its runtime (Node.js,
// the parent process): an exec entry it runs may still only get a token
// (login and setup --write from an entry are refused), and a
// KUBERNETES_EXEC_INFO the entry sets itself, naming an allowed server
// while the kubeconfig sends the token elsewhere, is ignored: the token
// never reaches the other server.
func TestJavaScriptClientGuard(t *testing.T) {
	onFirstVersionOnly(t)
	api := st.api["structured"]
	alice := opPerson(t, "--oidc-auth-request-extra-params=prompt=consent", "--allowed-server="+api.url)
	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, "her entry works through kubectl: %s", r.stderr)

	var tokens, hits atomic.Int64
	attacker := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			tokens.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	// The attacker's server is one the kubeconfig trusts (the stack's CA
	// signs its certificate), so a token sent there would arrive: the
	// control row below sees one.
	serving, err := tls.LoadX509KeyPair(st.certFile, st.keyFile)
	require.NoError(t, err)
	attacker.TLS = &tls.Config{Certificates: []tls.Certificate{serving}}
	attacker.StartTLS()
	defer attacker.Close()
	cfg, err := clientcmd.LoadFromFile(alice.kubeconfig)
	require.NoError(t, err)
	own := cfg.AuthInfos["alice"].Exec
	require.Equal(t, []string{"--profile=alice"}, own.Args, "setup put her settings into a profile")
	full := filepath.Join(filepath.Dir(st.ki), "kubectl-impersonate")
	forged := fmt.Sprintf(`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":%q}}}`, api.url)
	victim := filepath.Join(t.TempDir(), "victim.kubeconfig")
	// Control: a user of static token, the same kubeconfig and client: the
	// attacker's server sees the token.
	control := cfg.DeepCopy()
	control.AuthInfos["mallory"] = &clientcmdapi.AuthInfo{Token: "control-token"}
	control.Clusters["e2e"].Server = attacker.URL
	for _, c := range control.Contexts {
		c.AuthInfo = "mallory"
	}
	controlPath := filepath.Join(t.TempDir(), "control.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*control, controlPath))
	alice.runClient("javascript", controlPath, 1)
	require.Equal(t, int64(1), tokens.Load(), "the attacker's server sees a token sent to it (of %d requests)", hits.Load())
	tokens.Store(0)
	hits.Store(0)

	for _, tt := range []struct {
		name, want, server string
		exec               *clientcmdapi.ExecConfig
	}{
		{"login from the entry", "only get-token may run that way", api.url,
			&clientcmdapi.ExecConfig{Command: full, Args: []string{"login", "--oidc-issuer-url=" + attacker.URL, "--oidc-client-id=x", "--grant-type=client-credentials"}}},
		{"setup --write from the entry", "only get-token may run that way", api.url,
			&clientcmdapi.ExecConfig{Command: full, Args: []string{"setup", "--write", "--kubeconfig=" + victim, "--oidc-issuer-url=" + attacker.URL, "--oidc-client-id=x"}}},
		{"a KUBERNETES_EXEC_INFO of the entry's, naming her allowed server", "did not say which server the token is for", attacker.URL,
			&clientcmdapi.ExecConfig{Command: own.Command, Args: own.Args, Env: []clientcmdapi.ExecEnvVar{{Name: "KUBERNETES_EXEC_INFO", Value: forged}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hostile := cfg.DeepCopy()
			e := tt.exec.DeepCopy()
			e.APIVersion = own.APIVersion
			hostile.AuthInfos["mallory"] = &clientcmdapi.AuthInfo{Exec: e}
			hostile.Clusters["e2e"].Server = tt.server
			for _, c := range hostile.Contexts {
				c.AuthInfo = "mallory"
			}
			path := filepath.Join(t.TempDir(), "downloaded.kubeconfig")
			require.NoError(t, clientcmd.WriteToFile(*hostile, path))
			calls, _ := alice.runClient("javascript", path, 1)
			assert.False(t, calls[0].OK)
			assert.Contains(t, calls[0].Error, "kubectl-impersonate: ")
			assert.Contains(t, calls[0].Error, tt.want)
			assert.Zero(t, tokens.Load(), "tokens that reached the attacker (of %d requests)", hits.Load())
			// A login or setup from the entry would reach the attacker's
			// issuer without a token: nothing may reach it at all.
			assert.Zero(t, hits.Load(), "requests that reached the attacker")
		})
	}
	_, err = os.Stat(victim)
	assert.True(t, os.IsNotExist(err), "setup wrote nothing")
}
