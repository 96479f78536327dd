package integration

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// apiRecorder is an API server that records whether a bearer token
// reached it: it lists namespaces (unless plainNames, one of them a name a
// shell would run, which no namespace can have),
// answers a SelfSubjectReview, and, with redirect set, sends everything to
// another server with a 307.
type apiRecorder struct {
	*httptest.Server
	tokens, requests atomic.Int64
	redirect         string
}

func newAPIRecorder(t *testing.T, tls, plainNames bool, redirect string) *apiRecorder {
	r := &apiRecorder{redirect: redirect}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ") {
			r.tokens.Add(1)
		}
		if r.redirect != "" {
			http.Redirect(w, req, r.redirect+req.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case req.URL.Path == "/api/v1/namespaces":
			hostile := `,{"metadata":{"name":"$(touch pwned-ns)"}}`
			if plainNames {
				hostile = ""
			}
			fmt.Fprint(w, `{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"default"}}`+hostile+`]}`)
		case strings.HasSuffix(req.URL.Path, "/selfsubjectreviews"):
			fmt.Fprint(w, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"alice@example.com"}}}`)
		default:
			http.NotFound(w, req)
		}
	})
	if tls {
		r.Server = httptest.NewTLSServer(h)
	} else {
		r.Server = httptest.NewServer(h)
	}
	t.Cleanup(r.Close)
	return r
}

func (r *apiRecorder) caData() []byte {
	if r.Certificate() == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
}

// TestOneGate is the property of issue 46, over every command that can
// touch a token: the user's profile allows one API server (and a second
// one that redirects); a kubeconfig from elsewhere names the user's own
// exec entry on a cluster of its choosing, or a credential plugin of its
// own. For each command (each completion argument kind, each inspection
// command, status --check) and each hostile kubeconfig, no token reaches a
// server outside the allowed set, nor an allowed one over a connection the
// profile does not allow; no foreign program runs; every command ends
// within its deadline. A control row shows the token does reach the
// allowed server, so that the recorders can see one.
func TestOneGate(t *testing.T) {
	e := newEnv(t)
	allowed := newAPIRecorder(t, true, true, "")
	foreign := newAPIRecorder(t, true, false, "")
	plain := newAPIRecorder(t, false, false, "")
	redirector := newAPIRecorder(t, true, false, foreign.URL)
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		proxied.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(proxy.Close)

	cfgDir := filepath.Join(e.home, ".config", "kubectl-impersonate")
	require.NoError(t, os.MkdirAll(cfgDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte("profiles:\n"+
		e.profile("tenant", "    allowedServers: ["+allowed.URL+", "+redirector.URL+"]\n")), 0o600))
	r := e.run(nil, "login", "--profile=tenant")
	require.Equal(t, 0, r.code, r.stderr)

	pwned := filepath.Join(e.home, "pwned")
	foreignPlugin := filepath.Join(e.home, "foreign-plugin")
	require.NoError(t, os.WriteFile(foreignPlugin, []byte("#!/bin/sh\ntouch "+pwned+"\nexec sleep 20\n"), 0o700))
	sleeper := filepath.Join(e.home, "sleeping-plugin")
	require.NoError(t, os.WriteFile(sleeper, []byte("#!/bin/sh\nexec sleep 20\n"), 0o700))
	kuberc := filepath.Join(e.home, ".kube", "kuberc")

	ours := &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: fastBinary, Args: []string{"--profile=tenant"},
		ProvideClusterInfo: true, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	type kubeconfig struct {
		name    string
		cluster *clientcmdapi.Cluster
		exec    *clientcmdapi.ExecConfig
		// kuberc is the user's kuberc ("" none).
		kuberc string
		// control: the allowed server is meant to get the token.
		control bool
	}
	rows := []kubeconfig{
		{name: "control: the allowed server", cluster: &clientcmdapi.Cluster{Server: allowed.URL, CertificateAuthorityData: allowed.caData()}, exec: ours, control: true},
		{name: "a foreign server over https", cluster: &clientcmdapi.Cluster{Server: foreign.URL, CertificateAuthorityData: foreign.caData()}, exec: ours},
		{name: "a foreign server over http", cluster: &clientcmdapi.Cluster{Server: plain.URL}, exec: ours},
		{name: "the allowed server without TLS verification", cluster: &clientcmdapi.Cluster{Server: allowed.URL, InsecureSkipTLSVerify: true}, exec: ours},
		{name: "the allowed server through a proxy-url", cluster: &clientcmdapi.Cluster{Server: allowed.URL, CertificateAuthorityData: allowed.caData(), ProxyURL: proxy.URL}, exec: ours},
		{name: "an allowed server that redirects", cluster: &clientcmdapi.Cluster{Server: redirector.URL, CertificateAuthorityData: redirector.caData()}, exec: ours},
		{name: "an exec entry outside the kuberc's allowlist", cluster: &clientcmdapi.Cluster{Server: foreign.URL, CertificateAuthorityData: foreign.caData()},
			exec:   &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: foreignPlugin, InteractiveMode: clientcmdapi.NeverExecInteractiveMode},
			kuberc: "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: " + fastBinary + "\n"},
		{name: "an exec entry that sleeps", cluster: &clientcmdapi.Cluster{Server: foreign.URL, CertificateAuthorityData: foreign.caData()},
			exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: sleeper, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}},
	}
	const completionBound, commandTimeout = 3 * time.Second, 1 * time.Second
	type command struct {
		args []string
		// bound is how long the command may take at most (its deadline,
		// the watchdog's grace and the start of a process).
		bound time.Duration
	}
	deadline := "--command-timeout=" + commandTimeout.String()
	commandBound := commandTimeout + 2*time.Second + 2*time.Second
	commands := []command{
		{[]string{"__complete", "access", "-n", ""}, completionBound + time.Second},
		{[]string{"__complete", "who-can", "list", ""}, completionBound + time.Second},
		{[]string{"__complete", "why", "get", ""}, completionBound + time.Second},
		{[]string{"__complete", "list", ""}, completionBound + time.Second},
		{[]string{"__complete", "whoami", "--namespace", ""}, completionBound + time.Second},
		{[]string{"whoami", deadline}, commandBound},
		{[]string{"groups", deadline}, commandBound},
		{[]string{"claims", deadline}, commandBound},
		{[]string{"access", "-n", "default", deadline}, commandBound},
		{[]string{"list", "configmaps", "-n", "default", deadline}, commandBound},
		{[]string{"why", "get", "pods", "-n", "default", deadline}, commandBound},
		{[]string{"who-can", "get", "pods", "-n", "default", deadline}, commandBound},
		{[]string{"status", "--check", "--timeout=" + commandTimeout.String()}, commandBound},
	}
	runs, controlTokens := 0, int64(0)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			kc := filepath.Join(e.home, "kubeconfig-"+strings.NewReplacer(" ", "-", ":", "", "'", "").Replace(row.name))
			cfg := clientcmdapi.NewConfig()
			cfg.Clusters["theirs"] = row.cluster
			cfg.AuthInfos["alice"] = &clientcmdapi.AuthInfo{Exec: row.exec}
			cfg.Contexts["victim"] = &clientcmdapi.Context{Cluster: "theirs", AuthInfo: "alice", Namespace: "default"}
			cfg.CurrentContext = "victim"
			writeKubeconfigJSON(t, cfg, kc)
			if row.kuberc != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(kuberc), 0o700))
				require.NoError(t, os.WriteFile(kuberc, []byte(row.kuberc), 0o600))
				t.Cleanup(func() { _ = os.Remove(kuberc) })
			}
			for _, c := range commands {
				before := map[*apiRecorder]int64{allowed: allowed.tokens.Load(), foreign: foreign.tokens.Load(), plain: plain.tokens.Load(), redirector: redirector.tokens.Load()}
				proxiedBefore := proxied.Load()
				start := time.Now()
				// --kubeconfig after the command's name: a completion
				// completes its last word.
				at := 1
				if c.args[0] == "__complete" {
					at = 2
				}
				args := append(append(append([]string{}, c.args[:at]...), "--kubeconfig="+kc), c.args[at:]...)
				r := e.run(nil, args...)
				elapsed := time.Since(start)
				runs++
				what := strings.Join(c.args, " ")
				for rec, name := range map[*apiRecorder]string{foreign: "the foreign server", plain: "the http server"} {
					assert.Equal(t, before[rec], rec.tokens.Load(), "%s: a token reached %s", what, name)
				}
				if !row.control {
					assert.Equal(t, before[allowed], allowed.tokens.Load(), "%s: the token went to the allowed server over a connection the profile refuses", what)
				}
				controlTokens += allowed.tokens.Load() - before[allowed]
				assert.Equal(t, proxiedBefore, proxied.Load(), "%s: the proxy-url was used", what)
				assert.NoFileExists(t, pwned, "%s: a program the kuberc refuses ran", what)
				assert.Less(t, elapsed, c.bound, "%s: past its deadline", what)
				assert.NotContains(t, r.stdout, "pwned-ns", "%s: a namespace name a shell would run is offered", what)
				if row.control && c.args[0] == "__complete" && c.args[2] == "-n" {
					assert.Contains(t, strings.Split(r.stdout, "\n"), "default", "%s: the allowed server's namespaces are offered", what)
				}
				_ = os.Remove(pwned)
			}
		})
	}
	assert.Positive(t, controlTokens, "the control row's allowed server got the token: the recorders can see one")
	t.Logf("%d commands × %d kubeconfigs = %d runs; the allowed server got the token %d times in the control row", len(commands), len(rows), runs, controlTokens)
}
