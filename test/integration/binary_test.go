package integration

// These tests run the built binary as kubectl would, against the in-process
// OIDC provider of internal/oidctest, with "curl" standing in for the
// browser (it follows the redirects of a login that the provider approves at
// once). The real-browser, real-kubectl, real-keyring runs live in test/e2e.

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/oidctest"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

var binary, fastBinary, apiserverBinary string

func TestMain(m *testing.M) {
	if addr := os.Getenv(envAttackerListen); addr != "" {
		os.Exit(attackerListen(addr)) // this binary, run as another uid by localusers_test.go
	}
	if role := os.Getenv(envRecordRole); role != "" {
		os.Exit(recordRole(role)) // this binary, record's command or another uid (record_test.go)
	}
	if os.Getenv(envMeasureRSS) != "" {
		os.Exit(measureRSS(os.Args[1:])) // this binary, the small parent of a measured run (hostile_test.go)
	}
	dir, err := os.MkdirTemp("", "ki-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "kubectl-impersonate")
	fastBinary = filepath.Join(dir, "kubectl-impersonate-get_token")
	apiserverBinary = filepath.Join(dir, "kubectl-impersonate-apiserver")
	for out, pkg := range map[string]string{binary: "../../cmd/kubectl-impersonate", fastBinary: "../../cmd/kubectl-impersonate-get_token",
		apiserverBinary: "../../cmd/kubectl-impersonate-apiserver"} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the binaries:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

type env struct {
	t        *testing.T
	idp      *oidctest.Server
	home     string
	cacheDir string
	vars     []string
}

func newEnv(t *testing.T) *env {
	home := t.TempDir()
	e := &env{t: t, idp: oidctest.New(t), home: home, cacheDir: filepath.Join(home, "cache")}
	e.vars = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		// No D-Bus: the keyring is e2e's business; auto falls back to disk.
		"DBUS_SESSION_BUS_ADDRESS=", "XDG_RUNTIME_DIR=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
	}
	return e
}

func (e *env) authArgs(extra ...string) []string {
	return append([]string{
		"--oidc-issuer-url=" + e.idp.Issuer(), "--oidc-client-id=" + e.idp.ClientID,
		"--oidc-extra-scope=email", "--oidc-extra-scope=groups",
		"--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir,
		"--listen-address=127.0.0.1:0", "--browser-command=curl -sfL -o /dev/null",
	}, extra...)
}

// profile is a profiles-file entry name with authArgs' settings (and the
// extra lines given, indented by four spaces).
func (e *env) profile(name, extra string) string {
	return fmt.Sprintf(`  %s:
    oidc-issuer-url: %s
    oidc-client-id: %s
    oidc-extra-scope: [email, groups]
    token-cache-storage: disk
    token-cache-dir: %s
    listen-address: 127.0.0.1:0
    browser-command: curl -sfL -o /dev/null
`, name, e.idp.Issuer(), e.idp.ClientID, e.cacheDir) + extra
}

type result struct {
	stdout, stderr string
	code           int
}

func (e *env) run(extraEnv []string, args ...string) result {
	e.t.Helper()
	return e.runBinary(binary, extraEnv, args...)
}

func (e *env) runBinary(bin string, extraEnv []string, args ...string) result {
	e.t.Helper()
	return e.runAsKubectl(bin, extraEnv, nil, args...)
}

// runAsKubectl runs bin as kubectl runs an exec plugin: from a parent
// process (sh, standing in for kubectl) whose environment is e.vars plus
// kubectlEnv, with the exec entry's entryEnv on top for bin alone. The
// plugin tells the entry's variables from kubectl's by its parent's
// environment.
func (e *env) runAsKubectl(bin string, kubectlEnv, entryEnv []string, args ...string) result {
	e.t.Helper()
	return e.runUnder(append(append([]string{}, e.vars...), kubectlEnv...), bin, entryEnv, args...)
}

// runAsEmptyKubectl is runAsKubectl for a kubectl run under env -i: its
// own environment is empty, and the plugin gets client-go's variables
// (execEnv: KUBERNETES_EXEC_INFO) and the entry's entryEnv alone.
func (e *env) runAsEmptyKubectl(bin string, execEnv, entryEnv []string, args ...string) result {
	e.t.Helper()
	return e.runUnder([]string{}, bin, append(append([]string{}, execEnv...), entryEnv...), args...)
}

// runUnder runs bin with entryEnv from a parent (sh) whose environment is
// parentEnv.
func (e *env) runUnder(parentEnv []string, bin string, entryEnv []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := append(append(append([]string{"-c", `env "$@"; exit $?`, "sh"}, entryEnv...), bin), args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", argv...)
	cmd.Env = parentEnv
	// A credential plugin client-go started may outlive the binary (the
	// command's watchdog ends the binary, not the plugin) and hold its
	// output: the run is over when the binary is.
	cmd.WaitDelay = time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running %v: %v", args, err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

const (
	execInfoV1Interactive = `{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":true}}`
	execInfoV1Never       = `{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}`
	execInfoV1beta1       = `{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{"interactive":false}}`
)

type execCredential struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     struct {
		Token               string    `json:"token"`
		ExpirationTimestamp time.Time `json:"expirationTimestamp"`
	} `json:"status"`
}

func parseCred(t *testing.T, stdout string) execCredential {
	t.Helper()
	var c execCredential
	require.NoError(t, json.Unmarshal([]byte(stdout), &c), "stdout must be exactly one ExecCredential: %q", stdout)
	return c
}

func TestGetTokenLogsInThenUsesCache(t *testing.T) {
	e := newEnv(t)
	r := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Interactive}, append([]string{"get-token"}, e.authArgs()...)...)
	require.Equal(t, 0, r.code, r.stderr)
	c := parseCred(t, r.stdout)
	assert.Equal(t, "client.authentication.k8s.io/v1", c.APIVersion)
	assert.Equal(t, "ExecCredential", c.Kind)
	assert.Equal(t, 3, len(strings.Split(c.Status.Token, ".")), "an ID token (JWT)")
	assert.WithinDuration(t, time.Now().Add(time.Hour-30*time.Second), c.Status.ExpirationTimestamp, 5*time.Second)
	assert.Contains(t, r.stderr, "in your browser to log in")
	assert.Equal(t, 1, e.idp.AuthRequests())

	// Second run: from the cache, no request to the provider at all.
	calls := e.idp.TokenCalls("authorization_code") + e.idp.TokenCalls("refresh_token")
	r2 := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1beta1}, append([]string{"get-token"}, e.authArgs()...)...)
	require.Equal(t, 0, r2.code, r2.stderr)
	c2 := parseCred(t, r2.stdout)
	assert.Equal(t, "client.authentication.k8s.io/v1beta1", c2.APIVersion, "reply in the request's version")
	assert.Equal(t, c.Status.Token, c2.Status.Token)
	assert.Empty(t, r2.stderr)
	assert.Equal(t, 1, e.idp.AuthRequests())
	assert.Equal(t, calls, e.idp.TokenCalls("authorization_code")+e.idp.TokenCalls("refresh_token"))

	entries, err := os.ReadDir(e.cacheDir)
	require.NoError(t, err)
	for _, de := range entries {
		fi, err := de.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), de.Name())
	}
}

func TestGetTokenNonInteractiveEmptyCache(t *testing.T) {
	e := newEnv(t)
	r := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, append([]string{"get-token"}, e.authArgs()...)...)
	assert.Equal(t, 1, r.code)
	assert.Empty(t, r.stdout)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Len(t, lines, 1, r.stderr)
	assert.Contains(t, lines[0], "run 'kubectl impersonate login ")
	assert.Contains(t, lines[0], "--oidc-issuer-url="+e.idp.Issuer())
	assert.Zero(t, e.idp.AuthRequests(), "no browser login was started")
}

// expireCache rewrites the cached entry as expired, keeping its refresh token.
func (e *env) expireCache() {
	e.t.Helper()
	entries, err := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	require.NoError(e.t, err)
	require.Len(e.t, entries, 1)
	b, err := os.ReadFile(entries[0])
	require.NoError(e.t, err)
	entry, err := tokencache.DecodeEntry(b)
	require.NoError(e.t, err)
	entry.IDTokenExpiry = time.Now().Add(-time.Minute)
	entry.AccessTokenExpiry = entry.IDTokenExpiry
	b, err = entry.Encode()
	require.NoError(e.t, err)
	require.NoError(e.t, os.WriteFile(entries[0], b, 0o600))
}

func TestFiftyProcessesRefreshOnce(t *testing.T) {
	e := newEnv(t)
	r := e.run(nil, append([]string{"login"}, e.authArgs()...)...)
	require.Equal(t, 0, r.code, r.stderr)
	e.expireCache()

	const n = 50
	results, durations := e.runConcurrently(n, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, append([]string{"get-token"}, e.authArgs()...)...)
	t.Logf("%d processes on %d cores, expired token: process time p50 %s, max %s", n, runtime.NumCPU(), durations[n/2].Round(time.Millisecond), durations[n-1].Round(time.Millisecond))
	tokens := map[string]bool{}
	for i, r := range results {
		require.Equal(t, 0, r.code, "process %d: %s", i, r.stderr)
		tokens[parseCred(t, r.stdout).Status.Token] = true
	}
	assert.Equal(t, 1, e.idp.TokenCalls("refresh_token"), "exactly one refresh for %d processes", n)
	assert.Len(t, tokens, 1, "all processes got the refreshed token")
	assert.Equal(t, 1, e.idp.AuthRequests(), "no new browser login")
	assert.Equal(t, "email groups openid", e.idp.LastRefreshScope())
}

// runConcurrently starts n processes of the binary at once and returns
// their results and their durations, sorted.
func (e *env) runConcurrently(n int, extraEnv []string, args ...string) ([]result, []time.Duration) {
	e.t.Helper()
	var wg sync.WaitGroup
	results := make([]result, n)
	durations := make([]time.Duration, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			results[i] = e.run(extraEnv, args...)
			durations[i] = time.Since(start)
		}()
	}
	wg.Wait()
	slices.Sort(durations)
	return results, durations
}

func TestClientCredentialsAndSecretHygiene(t *testing.T) {
	e := newEnv(t)
	e.idp.OmitIDToken(true)
	secretEnv := "KUBECTL_IMPERSONATE_CLIENT_SECRET=" + e.idp.ClientSecret
	args := append([]string{"get-token", "-v", "9", "--grant-type=client-credentials"}, e.authArgs()...)
	r := e.run([]string{secretEnv, "KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
	require.Equal(t, 0, r.code, r.stderr)
	c := parseCred(t, r.stdout)
	assert.True(t, strings.HasPrefix(c.Status.Token, "at-"), "client credentials give the access token")

	cached, err := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	require.NoError(t, err)
	require.Len(t, cached, 1)
	for _, secret := range []string{e.idp.ClientSecret, c.Status.Token} {
		assert.NotContains(t, r.stderr, secret, "stderr at -v 9 leaks a secret")
	}
	assert.Contains(t, r.stderr, "client-credentials token", "the verbose log says what happens")

	// setup never writes the secret, and says where it must come from.
	s := e.run([]string{secretEnv}, append([]string{"setup", "--grant-type=client-credentials"}, e.authArgs()...)...)
	require.Equal(t, 0, s.code, s.stderr)
	assert.NotContains(t, s.stdout, e.idp.ClientSecret)
	assert.Contains(t, s.stderr, "not written into the kubeconfig")

	warn := e.run(nil, append([]string{"setup", "--oidc-client-secret=" + e.idp.ClientSecret}, e.authArgs()...)...)
	require.Equal(t, 0, warn.code, warn.stderr)
	assert.Contains(t, warn.stderr, "visible to other users in the process list")
	assert.NotContains(t, warn.stdout, e.idp.ClientSecret)
}

func TestSetupWriteAndClientGoExec(t *testing.T) {
	e := newEnv(t)
	kubeconfig := filepath.Join(e.home, "kubeconfig")
	var gotAuth []string
	var mu sync.Mutex
	apiserver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer apiserver.Close()
	initial := clientcmdapi.NewConfig()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiserver.Certificate().Raw})
	initial.Clusters["test"] = &clientcmdapi.Cluster{Server: apiserver.URL, CertificateAuthorityData: caPEM}
	initial.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "someone-else", Namespace: "ns1"}
	initial.CurrentContext = "test"
	require.NoError(t, clientcmd.WriteToFile(*initial, kubeconfig))

	r := e.run(nil, append([]string{"setup", "--write", "--kubeconfig=" + kubeconfig, "--user=alice", "--context=test"}, e.authArgs()...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `Wrote the user "alice"`)

	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "ns1", cfg.Contexts["test"].Namespace, "other settings survive")
	assert.Equal(t, "alice", cfg.Contexts["test"].AuthInfo)
	ex := cfg.AuthInfos["alice"].Exec
	require.NotNil(t, ex)
	assert.Equal(t, fastBinary, ex.Command, "the fast get-token binary by absolute path, not kubectl")
	assert.Equal(t, "client.authentication.k8s.io/v1", ex.APIVersion)
	assert.Equal(t, clientcmdapi.IfAvailableExecInteractiveMode, ex.InteractiveMode)
	assert.True(t, ex.ProvideClusterInfo)
	assert.Equal(t, sortedArgs(e.authArgs()), ex.Args)
	fi, err := os.Stat(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// Fill the cache, then let client-go's exec authenticator run the
	// plugin from that kubeconfig, as kubectl does.
	login := e.run(nil, append([]string{"login"}, e.authArgs()...)...)
	require.Equal(t, 0, login.code, login.stderr)
	for _, kv := range e.vars {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
	require.NoError(t, err)
	restCfg.ContentType = "application/json"
	client, err := rest.UnversionedRESTClientFor(withCodec(restCfg))
	require.NoError(t, err)
	res := client.Get().AbsPath("/api").Do(context.Background())
	require.NoError(t, res.Error())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, gotAuth, 1)
	assert.True(t, strings.HasPrefix(gotAuth[0], "Bearer ey"), "client-go sent our ID token, got %.20q", gotAuth[0])

	// "Log in again" is one command: login reads the current user's exec
	// entry when no issuer flag or profile is given.
	before := e.idp.AuthRequests()
	r = e.run(nil, "login", "--force", "--kubeconfig="+kubeconfig)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, before+1, e.idp.AuthRequests(), "a new browser login")
	r = e.run(nil, "login", "--kubeconfig="+kubeconfig, "--context=absent")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `the kubeconfig has no context "absent"`)
	initial.AuthInfos["static"] = &clientcmdapi.AuthInfo{Token: "x"}
	initial.Contexts["static"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "static"}
	other := filepath.Join(e.home, "other-kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*initial, other))
	r = e.run(nil, "login", "--kubeconfig="+other, "--context=static")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "give --oidc-issuer-url and --oidc-client-id, or --profile: the current kubeconfig user does not run kubectl-impersonate")
}

func sortedArgs(args []string) []string {
	out := append([]string{}, args...)
	// Args come out in flag-name order (pflag sorts); mirror that.
	order := []string{"browser-command", "listen-address", "oidc-client-id", "oidc-extra-scope", "oidc-issuer-url", "token-cache-dir", "token-cache-storage"}
	var sorted []string
	for _, name := range order {
		for _, a := range out {
			if strings.HasPrefix(a, "--"+name+"=") {
				sorted = append(sorted, a)
			}
		}
	}
	return sorted
}

func TestLogout(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 0, e.run(nil, append([]string{"login"}, e.authArgs()...)...).code)
	files, _ := filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	require.Len(t, files, 1)
	r := e.run(nil, append([]string{"logout"}, e.authArgs()...)...)
	require.Equal(t, 0, r.code, r.stderr)
	files, _ = filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	assert.Empty(t, files)

	require.Equal(t, 0, e.run(nil, append([]string{"login"}, e.authArgs()...)...).code)
	r = e.run(nil, "logout", "--all", "--token-cache-dir="+e.cacheDir)
	require.Equal(t, 0, r.code, r.stderr)
	files, _ = filepath.Glob(filepath.Join(e.cacheDir, "*.json"))
	assert.Empty(t, files)
}

func TestProfiles(t *testing.T) {
	e := newEnv(t)
	cfgDir := filepath.Join(e.home, ".config", "kubectl-impersonate")
	require.NoError(t, os.MkdirAll(cfgDir, 0o700))
	profile := "profiles:\n" + e.profile("tenant-a", "") + fmt.Sprintf(`  broken:
    oidc-issuer-url: %s
    no-such-flag: 1
`, e.idp.Issuer())
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(profile), 0o600))

	r := e.run(nil, "login", "--profile=tenant-a")
	require.Equal(t, 0, r.code, r.stderr)
	// The profile and the equivalent flags select the same cache entry.
	r = e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, append([]string{"get-token"}, e.authArgs()...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, e.idp.AuthRequests())

	s := e.run(nil, "setup", "--profile=tenant-a")
	require.Equal(t, 0, s.code, s.stderr)
	assert.Contains(t, s.stdout, "--exec-arg=--profile=tenant-a")
	assert.NotContains(t, s.stdout, e.idp.Issuer(), "the profile's values stay in the profile")

	tests := []struct {
		args          []string
		wantErrSubstr string
	}{
		{[]string{"get-token", "--profile=broken"}, `unknown key "no-such-flag"`},
		{[]string{"get-token", "--profile=nope"}, `profile "nope" is not in`},
		{[]string{"get-token", "--oidc-client-id=x"}, "--oidc-issuer-url is required"},
		{[]string{"get-token", "--profile=tenant-a", "--grant-type=magic"}, `--grant-type "magic" is not one of`},
		{[]string{"get-token", "--profile=tenant-a", "--listen-address=0.0.0.0:8000"}, "must be a loopback address"},
		{[]string{"get-token", "--oidc-issuer-url=http://idp.example.com", "--oidc-client-id=x"}, "must use https"},
		{[]string{"get-token", "--profile=tenant-a", "--token-cache-storage=cloud"}, `--token-cache-storage "cloud" is not one of`},
		{[]string{"get-token", "--profile=tenant-a", "--grant-type=client-credentials"}, "needs a client secret"},
		{[]string{"get-token", "--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=x", "--oidc-client-assertion-file=/run/token"}, "not --grant-type=auto: a person's login authenticates no client"},
		// RFC 8693's exchange is the login client's: the browser login's
		// code exchange would go unauthenticated (x/oauth2 sends no assertion).
		{[]string{"get-token", "--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=x", "--exchange=token-exchange", "--oidc-client-assertion-file=/run/token"}, "and CloudSigma's exchange, not --grant-type=auto"},
		{[]string{"get-token", "--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=x", "--grant-type=device-code", "--exchange=token-exchange", "--oidc-client-assertion-file=/run/token"}, "not --grant-type=device-code"},
		{[]string{"get-token", "--no-such-flag"}, "unknown flag: --no-such-flag"},
	}
	for _, tt := range tests {
		t.Run(tt.wantErrSubstr, func(t *testing.T) {
			r := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, tt.args...)
			assert.Equal(t, 1, r.code)
			assert.Empty(t, r.stdout)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			assert.Len(t, lines, 1, r.stderr)
			assert.Contains(t, r.stderr, tt.wantErrSubstr)
		})
	}
}

// TestProfileSecretNeedsPrivateFile: a profile may hold a client secret
// only in a file readable by its owner alone; otherwise both binaries
// refuse it in one line that says how to fix it (docs/profiles.md).
func TestProfileSecretNeedsPrivateFile(t *testing.T) {
	e := newEnv(t)
	cfgDir := filepath.Join(e.home, ".config", "kubectl-impersonate")
	require.NoError(t, os.MkdirAll(cfgDir, 0o700))
	path := filepath.Join(cfgDir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`profiles:
  robot:
    oidc-issuer-url: %s
    oidc-client-id: %s
    oidc-client-secret: %s
    grant-type: client-credentials
    token-cache-storage: disk
    token-cache-dir: %s
`, e.idp.Issuer(), e.idp.ClientID, e.idp.ClientSecret, e.cacheDir)), 0o600))
	for _, mode := range []os.FileMode{0o644, 0o640} {
		require.NoError(t, os.Chmod(path, mode))
		for _, bin := range []string{binary, fastBinary} {
			args := []string{"--profile=robot"}
			if bin == binary {
				args = append([]string{"get-token"}, args...)
			}
			r := e.runBinary(bin, []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, args...)
			assert.Equal(t, 1, r.code, "%s, mode %o", filepath.Base(bin), mode)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, `profile "robot" holds a client secret but profiles file `+path+" is readable by others: chmod 600 "+path)
			assert.NotContains(t, r.stderr, e.idp.ClientSecret)
		}
	}
	require.NoError(t, os.Chmod(path, 0o600))
	r := e.run([]string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}, "get-token", "--profile=robot")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotEmpty(t, parseCred(t, r.stdout).Status.Token, "mode 0600: accepted")
}

func TestVersionAndCompletion(t *testing.T) {
	e := newEnv(t)
	r := e.run(nil, "version", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var v map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	assert.NotEmpty(t, v["version"])
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := e.run(nil, "completion", shell)
		require.Equal(t, 0, r.code, r.stderr)
		assert.True(t, strings.Contains(r.stdout, "kubectl-impersonate __complete") || strings.Contains(r.stdout, "__complete"), "%s script calls back into the binary", shell)
	}
	// The scripts call back into the binary, which must complete commands and flags.
	r = e.run(nil, "__complete", "")
	require.Equal(t, 0, r.code, r.stderr)
	for _, c := range []string{"get-token", "login", "logout", "setup", "version"} {
		assert.Contains(t, r.stdout, c)
	}
	r = e.run(nil, "__complete", "get-token", "--grant")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "--grant-type")
}
