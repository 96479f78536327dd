//go:build e2e

// The people of the end-to-end suite: a user at a terminal with a kubeconfig
// written by setup, and the helpers that run kubectl and the plugin as them.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// person is a user at a terminal with a kubeconfig written by setup.
type person struct {
	t          *testing.T
	name       string
	api        *apiserver
	home       string
	kubeconfig string
	browserLog string
	env        []string
	// setup is the "setup --write" command line that made the user entry.
	setup []string
}

func baseEnv(home string) []string {
	return []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"DBUS_SESSION_BUS_ADDRESS=" + os.Getenv("DBUS_SESSION_BUS_ADDRESS"),
		"XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR"),
		"E2E_CHROMIUM=" + os.Getenv("E2E_CHROMIUM"),
	}
}

// newPerson writes a kubeconfig with the cluster of api and a user entry made
// by "kubectl-impersonate setup --write" with setupArgs, and forgets every
// cached token (the keyring is shared by the tests).
func newPerson(t *testing.T, name string, api *apiserver, setupArgs ...string) *person {
	t.Helper()
	home := t.TempDir()
	u := users[name]
	p := &person{t: t, name: name, api: api, home: home,
		kubeconfig: filepath.Join(home, ".kube", "config"),
		browserLog: filepath.Join(st.logs, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+"-browser.log")}
	_ = os.Remove(p.browserLog)
	p.env = append(baseEnv(home), "E2E_USER="+u.email, "E2E_PASSWORD="+u.password, "E2E_BROWSER_LOG="+p.browserLog)
	require.NoError(t, os.MkdirAll(filepath.Dir(p.kubeconfig), 0o700))
	require.NoError(t, os.WriteFile(p.kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, certificate-authority: %q}
contexts:
- name: e2e
  context: {cluster: e2e, user: nobody}
current-context: e2e
`, api.url, st.caFile)), 0o600))
	args := append([]string{"setup", "--write", "--kubeconfig=" + p.kubeconfig, "--user=" + name, "--context=e2e",
		"--oidc-certificate-authority=" + st.caFile, "--browser-command=" + st.browser, "--authentication-timeout=60s"}, setupArgs...)
	if !containsPrefix(setupArgs, "--oidc-issuer-url=") {
		args = append(args, "--oidc-issuer-url="+st.issuer,
			"--oidc-extra-scope=email", "--oidc-extra-scope=groups", "--oidc-extra-scope=offline_access")
	}
	if !containsPrefix(setupArgs, "--oidc-client-id=") {
		args = append(args, "--oidc-client-id="+publicClient)
	}
	p.setup = args
	r := p.plugin(nil, args...)
	require.Equal(t, 0, r.code, "setup: %s", r.stderr)
	require.Equal(t, 0, p.plugin(nil, "logout", "--all").code)
	return p
}

// execInfoNever is what kubectl passes a plugin it runs non-interactively.
const execInfoNever = `KUBERNETES_EXEC_INFO={"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}`

// credentialToken is the token of the ExecCredential a plugin printed.
func credentialToken(t *testing.T, stdout string) string {
	t.Helper()
	var cred struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &cred), "an ExecCredential: %q", stdout)
	return cred.Status.Token
}

func containsPrefix(args []string, prefix string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// run starts argv with env; with tty, its stdin is a terminal, as when a
// person types the command. It never stops the test itself (it may run on
// another goroutine): a command that cannot start, or runs past 120 s,
// gives code -1 and the reason in stderr, for the caller to assert.
func run(t *testing.T, env []string, tty bool, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if tty {
		ptmx, tt, err := pty.Open()
		if err != nil {
			return result{code: -1, stderr: fmt.Sprintf("opening a pty for %v: %v", argv, err)}
		}
		defer ptmx.Close()
		defer tt.Close()
		cmd.Stdin = tt
		go func() { _, _ = io_copy_discard(ptmx) }()
	}
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code, r.stderr = -1, fmt.Sprintf("running %v: %v\n%s", argv, err, r.stderr)
	}
	if ctx.Err() != nil {
		r.code, r.stderr = -1, fmt.Sprintf("%v ran past 120 s\n%s", argv, r.stderr)
	}
	return r
}

func io_copy_discard(f *os.File) (int64, error) {
	buf := make([]byte, 4096)
	var n int64
	for {
		m, err := f.Read(buf)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
}

func (p *person) kubectl(args ...string) result {
	p.t.Helper()
	return run(p.t, p.env, true, append([]string{st.kubectl, "--kubeconfig=" + p.kubeconfig}, args...)...)
}

// whoami is the API server's answer to kubectl auth whoami for p, which
// must succeed.
func (p *person) whoami() whoami {
	p.t.Helper()
	r := p.kubectl("auth", "whoami", "-o", "json")
	require.Equal(p.t, 0, r.code, "kubectl auth whoami: %s", r.stderr)
	var w whoami
	require.NoError(p.t, json.Unmarshal([]byte(r.stdout), &w))
	return w
}

func (p *person) plugin(extraEnv []string, args ...string) result {
	p.t.Helper()
	return run(p.t, append(append([]string{}, p.env...), extraEnv...), false, append([]string{st.ki}, args...)...)
}

func (p *person) browserStarts() int {
	b, err := os.ReadFile(p.browserLog)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), " start ")
}

type whoami struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		UserInfo struct {
			Username string   `json:"username"`
			Groups   []string `json:"groups"`
		} `json:"userInfo"`
	} `json:"status"`
}

// secretServiceEntries counts our cache entries in the Secret Service, as
// secret-tool lists them: one item per entry, plus one per chunk for an
// entry too large for one item (named "<entry>/<generation>/<n>").
func (p *person) secretServiceEntries() (entries, chunks int) {
	r := run(p.t, p.env, false, "secret-tool", "search", "--all", "service", "kubectl-impersonate")
	for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
		name, ok := strings.CutPrefix(line, "attribute.username = ")
		if !ok {
			continue
		}
		if strings.Contains(name, "/") {
			chunks++
		} else {
			entries++
		}
	}
	return entries, chunks
}

func (p *person) diskEntries() []string {
	files, _ := filepath.Glob(filepath.Join(p.home, ".kube", "cache", "kubectl-impersonate", "*.json"))
	return files
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// kubectlApply applies manifest with the admin kubeconfig (server-side).
func kubectlApply(t *testing.T, admin, manifest string) {
	t.Helper()
	require.NoError(t, adminKubectl(t, admin, manifest, 120*time.Second, "apply", "--server-side", "-f", "-"))
}

// adminKubectl runs kubectl with the admin kubeconfig and stdin, for at
// most timeout; its error carries kubectl's output.
func adminKubectl(t *testing.T, admin, stdin string, timeout time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, st.kubectl, append([]string{"--kubeconfig=" + admin}, args...)...)
	cmd.Env, cmd.Stdin = baseEnv(t.TempDir()), strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// findProcesses returns the pids of name whose environment holds envEntry.
func findProcesses(t *testing.T, name, envEntry string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "comm"))
		if !strings.HasPrefix(strings.TrimSpace(string(comm)), name[:min(len(name), 15)]) {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if bytes.Contains(environ, append([]byte(envEntry), 0)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
