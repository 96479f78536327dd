package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdapiv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/hostileapi"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/idp"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testfs"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// evil is hostileapi.Evil: terminal escapes, C1, DEL, bidi, a tab and a
// newline followed by a line of the attacker's.
const evil = hostileapi.Evil

// assertPrintable asserts docs/security.md's predicate on a command's
// stdout and stderr (logging.SafeOutput: no C0 but the newline ending a
// line, no DEL, C1, bidirectional override or invalid UTF-8), and that no
// line of the attacker's starts a line.
func assertPrintable(t *testing.T, what string, r result) {
	t.Helper()
	for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if off, c := logging.SafeOutput(out); off >= 0 {
			t.Errorf("%s: %s holds %U at %d: %q", what, name, c, off, out[max(0, off-40):min(len(out), off+40)])
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), hostileapi.FakeLine) {
				t.Errorf("%s: %s: the attacker's newline started a line: %q", what, name, out)
			}
		}
	}
}

// hostileJWT is an unverifiable token whose claims hold evil.
func hostileJWT(t *testing.T) string {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tok, err := testissuer.Sign(map[string]any{"iss": "https://issuer.example.com", "sub": "sub-" + evil, "aud": "aud-" + evil,
		"email": "alice-" + evil + "@example.com", "groups": []string{"dev-" + evil}, "exp": 4102444800, "iat": 1700000000}, testissuer.Valid, "k-"+evil, key, key)
	require.NoError(t, err)
	return tok
}

// hostileKubeconfig names s, with context, cluster and user names that
// hold evil and a static token whose claims do.
func (e *env) hostileKubeconfig(s *hostileapi.Server, token string) string {
	e.t.Helper()
	path := filepath.Join(e.home, "hostile-kubeconfig")
	cfg := clientcmdapi.NewConfig()
	name := "ctx-" + evil
	cfg.Clusters["cluster-"+evil] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}
	cfg.AuthInfos["user-"+evil] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "cluster-" + evil, AuthInfo: "user-" + evil, Namespace: "default"}
	cfg.CurrentContext = name
	writeKubeconfigJSON(e.t, cfg, path)
	return path
}

// writeKubeconfigJSON writes cfg as JSON, which kubeconfig readers take
// (YAML's superset), so that names may hold control characters as \u
// escapes: the YAML writer refuses them, an attacker's editor does not.
func writeKubeconfigJSON(t *testing.T, cfg *clientcmdapi.Config, path string) {
	t.Helper()
	v1 := &clientcmdapiv1.Config{}
	require.NoError(t, clientcmdapiv1.Convert_api_Config_To_v1_Config(cfg, v1, nil))
	v1.APIVersion, v1.Kind = "v1", "Config"
	b, err := json.Marshal(v1)
	require.NoError(t, err)
	var escaped bytes.Buffer // C1, DEL and bidi as \u escapes: the YAML reader refuses them raw
	_, err = logging.NewSafeWriter(&escaped).Write(b)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, escaped.Bytes(), 0o600))
}

// TestHostileAPIServerOutput drives every inspection command against an
// API server written by an attacker (internal/hostileapi: evil in every
// name, group, subject, reason and error it answers), from a kubeconfig
// whose names and token claims hold it too, and asserts the predicate on
// every byte each command prints, in every output format.
func TestHostileAPIServerOutput(t *testing.T) {
	e := newEnv(t)
	s := hostileapi.New()
	defer s.Close()
	token := hostileJWT(t)
	kc := e.hostileKubeconfig(s, token)
	tokenFile := filepath.Join(e.home, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	cache := []string{"KUBECACHEDIR=" + filepath.Join(e.home, "kubecache")}
	for _, tt := range []struct {
		args []string
		// quiet: nothing of the attacker's is meant to be printed (the
		// names in the output are discovery's, checked and plain).
		quiet bool
	}{
		{args: []string{"whoami"}}, {args: []string{"whoami", "-o", "json"}}, {args: []string{"whoami", "-o", "yaml"}},
		{args: []string{"whoami", "-o", "jsonpath={.status.userInfo.username}{\"\\n\"}"}},
		{args: []string{"claims", "--token-file=" + tokenFile}}, {args: []string{"claims", "--token-file=" + tokenFile, "-o", "json"}},
		{args: []string{"access", "-n", "default"}, quiet: true}, {args: []string{"access", "-n", "default", "-o", "wide"}, quiet: true},
		{args: []string{"access", "-A"}}, {args: []string{"access", "-A", "-o", "json"}}, {args: []string{"access", "-n", "default", "--as", "bob-" + evil}, quiet: true},
		{args: []string{"list", "configmaps", "-n", "default"}}, {args: []string{"list", "configmaps", "-A"}},
		{args: []string{"list", "configmaps", "-n", "default", "-o", "name"}}, {args: []string{"list", "configmaps", "-A", "-v", "2"}},
		{args: []string{"why", "get", "configmaps", "-n", "default"}}, {args: []string{"why", "get", "configmaps", "-n", "default", "-o", "yaml"}},
		{args: []string{"who-can", "get", "configmaps", "-n", "default"}}, {args: []string{"who-can", "get", "configmaps", "-A", "--by-subject"}},
	} {
		r := e.run(cache, append(tt.args, "--kubeconfig="+kc)...)
		assertPrintable(t, strings.Join(tt.args, " "), r)
		if !tt.quiet {
			assert.Contains(t, r.stdout+r.stderr, "pwned", "%v printed none of the attacker's text: %s %s", tt.args, r.stdout, r.stderr)
		}
	}

	t.Run("who-can --verify with every subject denied", func(t *testing.T) {
		// The denied lines print the server's reasons and subjects
		// (issue 46: a server that allows every review never reached them).
		s.SetDenyReviews(true)
		defer s.SetDenyReviews(false)
		for _, args := range [][]string{{"who-can", "get", "configmaps", "-n", "default", "--verify"}, {"who-can", "get", "configmaps", "-A", "--verify"}} {
			r := e.run(cache, append(args, "--kubeconfig="+kc)...)
			assertPrintable(t, strings.Join(args, " "), r)
			assert.Contains(t, r.stdout, "DENIES these subjects", "%v: %s", args, r.stderr)
			assert.Contains(t, r.stdout, "denied by", "%v: the reasons printed", args)
		}
	})

	t.Run("reviews that fail with a body that is not JSON", func(t *testing.T) {
		s.SetPlainErrors(true)
		defer s.SetPlainErrors(false)
		for _, args := range [][]string{{"whoami"}, {"access", "-n", "default"}, {"why", "get", "configmaps", "-n", "default"}} {
			r := e.run(cache, append(args, "--kubeconfig="+kc)...)
			assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
			assertPrintable(t, strings.Join(args, " "), r)
			assert.Len(t, strings.Split(strings.TrimSpace(r.stderr), "\n"), 1, "one line: %s", r.stderr)
		}
	})
}

// TestHostileLoginAndSessions: the provider's claims and the kubeconfig's
// context names hold evil; login, status (with --check against the
// attacker's API server) and logout print them escaped.
func TestHostileLoginAndSessions(t *testing.T) {
	e := newEnv(t)
	e.idp.Email = "alice-" + evil + "@example.com"
	s := hostileapi.New()
	defer s.Close()
	path := filepath.Join(e.home, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: s.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u-"+evil] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: fastBinary,
		Args: e.authArgs(), InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}}
	cfg.AuthInfos["other-"+evil] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: fastBinary,
		Args: e.authArgs("--oidc-extra-scope=profile"), InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}}
	cfg.Contexts["ctx-"+evil] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u-" + evil}
	cfg.Contexts["two-"+evil] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "other-" + evil}
	// An entry logout --all cannot validate: it names the context.
	cfg.AuthInfos["bad-"+evil] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: fastBinary,
		Args: []string{"--oidc-client-id=x", "--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir}, InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}}
	cfg.Contexts["bad-"+evil] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "bad-" + evil}
	cfg.CurrentContext = "ctx-" + evil
	writeKubeconfigJSON(t, cfg, path)

	for _, args := range [][]string{
		{"login", "-v", "2"}, {"login"}, {"login", "--context=two-" + evil},
		{"whoami"}, {"groups"}, {"status"}, {"status", "--check"}, {"status", "-o", "yaml"},
		{"logout", "--context=two-" + evil}, {"logout", "--all"}, {"logout", "--all"},
	} {
		r := e.run(nil, append(args, "--kubeconfig="+path)...)
		assertPrintable(t, strings.Join(args, " "), r)
		assert.Contains(t, r.stdout+r.stderr, "pwned", "%v printed none of the attacker's text: %s %s", args, r.stdout, r.stderr)
	}
}

// TestHostileCloudSigmaAndKubelogin: the CloudSigma API's profile answer
// and a kubelogin exec entry's args hold evil.
func TestHostileCloudSigmaAndKubelogin(t *testing.T) {
	e := newEnv(t)
	sim := idp.New(t)
	body, err := json.Marshal(map[string]string{"email": "alice@example.com", "uuid": "uuid-" + evil, "state": "REGULAR"})
	require.NoError(t, err)
	sim.FailNext("profile:zrh", idp.Fault{Status: 200, ContentType: "application/json", Body: string(body)})
	r := e.run(robotEnv, append([]string{"cloudsigma", "whoami"}, cloudsigmaArgs(sim, e, "--impersonate-user-email=alice@example.com")...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assertPrintable(t, "cloudsigma whoami", r)
	assert.Contains(t, r.stdout, "pwned")

	path := filepath.Join(e.home, "kubelogin-kubeconfig")
	require.NoError(t, os.WriteFile(path, testkit.KubeloginKubeconfig(t,
		testkit.Kubelogin{Extra: []string{"--oidc-extra-scope=" + evil, "--username=" + evil, "--no-such-flag-" + evil}}, func(c *clientcmdapi.Config) {
			c.AuthInfos["oidc"].Exec.Env = []clientcmdapi.ExecEnvVar{{Name: "VAR_" + evil, Value: "x"}}
		}), 0o600))
	r = e.run(nil, "setup", "--from-kubelogin", "--kubeconfig="+path)
	assertPrintable(t, "setup --from-kubelogin", r)
	assert.Contains(t, r.stdout+r.stderr, "pwned")
}

// envMeasureRSS makes the test binary the parent of a measured run: a
// child's peak RSS (its rusage) starts from its parent's at the exec, and
// this process's would count everything the test had allocated.
const envMeasureRSS = "KI_TEST_MEASURE_RSS"

// measureRSS runs argv and writes its peak RSS in KiB to fd 3.
func measureRSS(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envMeasureRSS+"=") })
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	if rss, ok := testfs.PeakRSS(cmd.ProcessState); ok {
		fmt.Fprint(os.NewFile(3, "rss"), rss)
	}
	return code
}

// runMeasured runs the full binary with args and returns its result and
// peak resident set size in MiB, measured from a parent of its own (the
// test binary again, started fresh: measureRSS).
func (e *env) runMeasured(extraEnv []string, args ...string) (result, float64) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	self, err := os.Executable()
	require.NoError(e.t, err)
	rssR, rssW, err := os.Pipe()
	require.NoError(e.t, err)
	defer rssR.Close()
	cmd := exec.CommandContext(ctx, self, append([]string{binary}, args...)...)
	cmd.Env = append(append([]string{envMeasureRSS + "=1"}, e.vars...), extraEnv...)
	cmd.ExtraFiles = []*os.File{rssW}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	rssW.Close()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running %v: %v", args, err)
	}
	kib, err := io.ReadAll(rssR)
	require.NoError(e.t, err)
	n, err := strconv.Atoi(string(kib))
	require.NoError(e.t, err, "the measuring parent's report")
	return result{stdout: out.String(), stderr: errb.String(), code: code}, float64(n) / 1024
}

// TestHostileAnswerSizes: an API server answering a list that never ends
// (pages without end, or one body without end) makes list stop at its
// bounds (kubeapi.MaxList for one answer, kubeapi.MaxAnswers for all)
// with one line naming the bound, and its peak memory stays under the
// ceiling docs/security.md states.
func TestHostileAnswerSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB of answers")
	}
	const ceilingMiB = 512 // docs/security.md, "The API server"
	e := newEnv(t)
	s := hostileapi.New()
	defer s.Close()
	s.SetText("x")
	kc := e.hostileKubeconfig(s, hostileJWT(t))
	cache := []string{"KUBECACHEDIR=" + filepath.Join(e.home, "kubecache")}
	for _, tt := range []struct {
		name    string
		set     func()
		args    []string
		wantErr string
	}{
		{"a body without end", func() { s.SetFlood("/configmaps") }, []string{"list", "configmaps", "-A"}, "is larger than 64 MiB, the limit for one answer"},
		{"pages without end, 500 objects each", func() { s.SetEndless(true); s.SetPageItems(500, 0) }, []string{"list", "configmaps", "-n", "default"},
			"more than 500000 objects, the limit for one list"},
		{"pages without end, of 500 objects of 100 kB", func() { s.SetEndless(true); s.SetPageItems(500, 100_000) }, []string{"list", "configmaps", "-n", "default"},
			"add up to more than 256 MiB, the limit for one command"},
		{"objects with labels of 100 kB", func() { s.SetLabelPadding(100_000) }, []string{"list", "configmaps", "-n", "default"},
			"not a label value"},
		{"pages of more objects than asked for", func() { s.SetEndless(true); s.SetPageItems(50000, 0) }, []string{"list", "configmaps", "-n", "default"},
			"answered 50000 objects for a page of at most 500"},
		// Small answers that would be large once decoded (docs/security.md).
		{"30 MiB of empty ClusterRoleBindings", func() { s.SetRaw("/clusterrolebindings", `{"items":[`+repeated(`{}`, 10<<20)+`]}`) },
			[]string{"who-can", "get", "configmaps", "-n", "default"}, "clusterrolebindings would take more than 128 MiB once decoded, the limit for one answer"},
		{"8 MiB of empty rules", func() { s.SetRaw("/clusterroles", `{"items":[{"rules":[`+repeated(`{}`, 8<<20/3)+`]}]}`) },
			[]string{"who-can", "get", "configmaps", "-n", "default"}, "would take more than 128 MiB once decoded"},
		{"a page of 8 MiB of empty items", func() { s.SetRaw("/configmaps", `{"items":[`+repeated(`{}`, 8<<20/3)+`]}`) },
			[]string{"list", "configmaps", "-n", "default"}, "would take more than 128 MiB once decoded"},
		{"a rules review of 4 MiB of empty rules", func() {
			s.SetRaw("/selfsubjectrulesreviews", `{"status":{"resourceRules":[`+repeated(`{}`, 4<<20/3-100)+`]}}`)
		}, []string{"access", "-A"}, "would take more than 128 MiB once decoded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s.SetFlood("")
			s.SetEndless(false)
			s.SetPageItems(0, 0)
			for _, p := range []string{"/clusterrolebindings", "/clusterroles", "/configmaps", "/selfsubjectrulesreviews"} {
				s.SetRaw(p, "")
			}
			tt.set()
			r, peak := e.runMeasured(cache, append(tt.args, "--kubeconfig="+kc)...)
			t.Logf("%s: peak RSS %.0f MiB, %d pages served", tt.name, peak, s.Pages())
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.wantErr)
			assert.Len(t, strings.Split(strings.TrimSpace(r.stderr), "\n"), 1, "one line: %s", r.stderr)
			assert.Less(t, peak, float64(ceilingMiB), "peak RSS in MiB")
		})
	}
}

// TestHostileDiscovery: the inspection commands against an API server
// whose discovery names climb out of its cache directory (into another
// cluster's, whose cache is the canary): each refuses in one line that
// names the server, and no file outside that server's directory changes.
func TestHostileDiscovery(t *testing.T) {
	e := newEnv(t)
	s := hostileapi.New()
	defer s.Close()
	kc := e.hostileKubeconfig(s, hostileJWT(t))
	cacheDir := filepath.Join(e.home, "kubecache")
	canary := filepath.Join(cacheDir, "discovery", "legit.example.com_6443", "apps", "v1", "serverresources.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(canary), 0o750))
	require.NoError(t, os.WriteFile(canary, []byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[]}`), 0o660))
	gv := metav1.GroupVersionKind{Version: "v1"}
	for _, groups := range [][]apidiscoveryv2.APIGroupDiscovery{
		{hostileapi.Group("../legit.example.com_6443/apps", "v1", hostileapi.Resource("deployments", "Deployment", true, gv))},
		{hostileapi.Group("x.example", "../../legit.example.com_6443/apps/v1", hostileapi.Resource("deployments", "Deployment", true, gv))},
	} {
		s.SetGroups(groups)
		for _, tt := range []struct {
			args []string
			// goesOn: why and who-can name the resource as typed when
			// discovery fails, and say so in one line.
			goesOn bool
		}{
			{args: []string{"access", "-n", "default"}}, {args: []string{"access", "-A"}}, {args: []string{"list", "configmaps", "-n", "default"}},
			{args: []string{"why", "get", "configmaps", "-n", "default"}, goesOn: true}, {args: []string{"who-can", "get", "configmaps", "-n", "default"}, goesOn: true},
		} {
			args := tt.args
			r := e.run([]string{"KUBECACHEDIR=" + cacheDir}, append(args, "--kubeconfig="+kc)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if tt.goesOn {
				assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
				assert.Equal(t, 1, strings.Count(r.stderr, "refusing the discovery answer of the API server "+s.URL), "%v: one line: %s", args, r.stderr)
			} else {
				assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
				assert.Contains(t, r.stderr, "refusing the discovery answer of the API server "+s.URL, args)
				assert.Len(t, lines, 1, "one line: %s", r.stderr)
			}
			assertPrintable(t, strings.Join(args, " "), r)
			b, err := os.ReadFile(canary)
			require.NoError(t, err)
			assert.Contains(t, string(b), `"resources":[]`, "another cluster's cache changed by %v", args)
		}
	}
}

// repeated is n copies of item, comma-separated.
func repeated(item string, n int) string {
	return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
}
