//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Windows job: the plugin's windows/amd64 binaries and a kubectl.exe
// (the pinned release, built for Windows) under Wine (Debian's 8.0, a fresh
// prefix made by hack/wine.sh), against this stack's Dex and
// kube-apiserver. Wine passes file access through to the host and keeps
// a DACL as Unix mode bits, so another user's file is planted from here
// (chown) and a DACL that lets others in with chmod; what Wine cannot
// show (reparse points, another SID's ACE) is reviewed, not run
// (docs/security.md).

// envWindows is set by run.sh for the first Kubernetes version: the job
// runs once, it does not depend on the API server's version.
const envWindows = "KI_E2E_WINDOWS"

// win is Wine with the plugin's Windows binaries.
type win struct {
	t       *testing.T
	prefix  string // WINEPREFIX
	bin     string // the .exe files
	kubectl string // kubectl.exe
	dir     string // the test's files (under Z:)
	env     []string
}

// winPath is path as a Windows program names it: Wine maps Z: to /.
func winPath(path string) string { return "Z:" + strings.ReplaceAll(path, "/", `\`) }

func newWin(t *testing.T) *win {
	t.Helper()
	if os.Getenv(envWindows) != "1" {
		t.Skipf("the Windows job runs with the first Kubernetes version only ($%s)", envWindows)
	}
	w := &win{t: t, prefix: filepath.Join(st.work, "wine"), bin: filepath.Join(st.work, "win"),
		kubectl: filepath.Join(st.tools, "kubectl.exe"), dir: t.TempDir()}
	require.FileExists(t, w.kubectl, "run.sh builds kubectl.exe with KI_E2E_WINDOWS=1")
	mk := exec.Command("../../hack/wine.sh", "prefix", w.prefix)
	mk.Stdout, mk.Stderr = os.Stderr, os.Stderr
	require.NoError(t, mk.Run(), "making the Wine prefix")
	t.Cleanup(func() {
		k := exec.Command("wineserver", "-k")
		k.Env = append(os.Environ(), "WINEPREFIX="+w.prefix)
		_ = k.Run()
	})
	// Built as lint's cross builds compile for Windows (make cross), whose
	// packages it reuses: with -trimpath, a cold run compiled them all again
	// (75 s).
	build := exec.Command("go", "build", "-o", w.bin+"/", "../../cmd/...")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "building the Windows binaries")
	// test/wine/spawn as a person's shell (every program here is started
	// from one: a program Wine starts directly has no parent) and as the
	// JavaScript client's runtime.
	for _, name := range []string{"shell.exe", "node.exe"} {
		spawn := exec.Command("go", "build", "-o", filepath.Join(w.dir, name), "../wine/spawn")
		spawn.Env, spawn.Stderr = build.Env, os.Stderr
		require.NoError(t, spawn.Run(), "building the stand-in %s", name)
	}
	// The default Windows opener (rundll32 url.dll → winebrowser) runs
	// xdg-open: this one is the test's browser, driving Chromium through
	// Dex's login.
	opener := filepath.Join(w.dir, "opener")
	require.NoError(t, os.MkdirAll(opener, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(opener, "xdg-open"), []byte("#!/bin/sh\necho \"$(date +%s) start $1\" >> \"$E2E_BROWSER_LOG\"\nexec "+st.browser+" \"$1\"\n"), 0o755))
	w.env = []string{"WINEPREFIX=" + w.prefix, "WINEDEBUG=-all", "HOME=" + w.dir,
		"PATH=" + opener + ":" + os.Getenv("PATH"), "E2E_CHROMIUM=" + os.Getenv("E2E_CHROMIUM"),
		"E2E_USER=" + users["alice"].email, "E2E_PASSWORD=" + users["alice"].password,
		"E2E_BROWSER_LOG=" + filepath.Join(st.logs, "windows-browser.log"),
		"KUBECTL_IMPERSONATE_PASSWORD=" + users["bob"].password}
	return w
}

// run runs a Windows program under Wine, from a shell.
func (w *win) run(env []string, exe string, args ...string) result {
	w.t.Helper()
	return w.runDirect(env, filepath.Join(w.dir, "shell.exe"), append([]string{winPath(exe)}, args...)...)
}

// runDirect runs a Windows program as Wine's own child: it has no parent
// process of its own (Wine 8.0 fails a CreateProcess now and then when
// ten programs each start one at once).
func (w *win) runDirect(env []string, exe string, args ...string) result {
	w.t.Helper()
	return run(w.t, append(append([]string{}, w.env...), env...), false, append([]string{"wine", exe}, args...)...)
}

// getTokenArgs are bob's password grant at the stack's Dex, the token
// cached in storage in the test's own directory.
func (w *win) getTokenArgs(storage string, extra ...string) []string {
	return append([]string{"--oidc-issuer-url=" + st.issuer, "--oidc-client-id=" + confidentialClient,
		"--oidc-client-secret-file=" + winPath(st.secretFile), "--certificate-authority=" + winPath(st.caFile),
		"--grant-type=password", "--username=" + users["bob"].email, "--oidc-extra-scope=email",
		"--token-cache-storage=" + storage, "--token-cache-dir=" + winPath(filepath.Join(w.dir, "cache"))}, extra...)
}

// kubeconfig writes a kubeconfig whose user runs the fast get-token .exe.
func (w *win) kubeconfig(name string, args []string) string {
	w.t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	path := filepath.Join(w.dir, name+".kubeconfig")
	require.NoError(w.t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %q, certificate-authority: %q}}]
contexts: [{name: e2e, context: {cluster: e2e, user: win}}]
current-context: e2e
users:
- name: win
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %q
      args: [%s]
      interactiveMode: IfAvailable
`, st.api["structured"].url, winPath(st.caFile), winPath(filepath.Join(w.bin, "kubectl-impersonate-get_token.exe")), strings.Join(quoted, ", "))), 0o600))
	return winPath(path)
}

func (w *win) whoami(kubeconfig string) result {
	w.t.Helper()
	return w.run(nil, w.kubectl, "--kubeconfig="+kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
}

func TestWindows(t *testing.T) {
	w := newWin(t)
	full, fast := filepath.Join(w.bin, "kubectl-impersonate.exe"), filepath.Join(w.bin, "kubectl-impersonate-get_token.exe")
	password := func() int { return st.proxy.Count("token:password") }

	t.Run("version", func(t *testing.T) {
		r := w.run(nil, full, "version", "-o", "json")
		require.Equal(t, 0, r.code, r.stderr)
		var v struct{ Platform string }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
		assert.Equal(t, "windows/amd64", v.Platform)
	})

	// kubectl.exe → the plugin → Dex → kube-apiserver: a miss, then a hit,
	// with the disk cache and with the Credential Manager.
	for _, storage := range []string{"disk", "keyring"} {
		t.Run("kubectl.exe, "+storage, func(t *testing.T) {
			args := w.getTokenArgs(storage)
			r := w.run(nil, full, append([]string{"logout"}, args...)...)
			require.Equal(t, 0, r.code, "logout: %s", r.stderr)
			kc := w.kubeconfig(storage, args)
			before := password()
			r = w.whoami(kc)
			require.Equal(t, 0, r.code, "kubectl.exe auth whoami: %s", r.stderr)
			assert.Equal(t, "oidc:"+users["bob"].email, r.stdout)
			assert.Equal(t, before+1, password(), "one password grant on the miss")
			r = w.whoami(kc)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, before+1, password(), "the second call answered from the %s cache", storage)
			entries, _ := filepath.Glob(filepath.Join(w.dir, "cache", "*.json"))
			if storage == "disk" {
				assert.NotEmpty(t, entries, "the entry is a file")
			} else {
				assert.Empty(t, entries, "the token is in the Credential Manager, not on disk")
			}
			// The plugin's own view: status reads the entry back.
			r = w.run(nil, fast, args...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, before+1, password())
		})
	}

	t.Run("refresh", func(t *testing.T) {
		args := w.getTokenArgs("disk", "--oidc-extra-scope=offline_access")
		r := w.run(nil, full, append([]string{"logout"}, args...)...)
		require.Equal(t, 0, r.code, "logout: %s", r.stderr)
		r = w.run(nil, fast, args...)
		require.Equal(t, 0, r.code, r.stderr)
		before := st.proxy.Count("token:refresh_token")
		r = w.run(nil, fast, append(args, "--force-refresh")...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, before+1, st.proxy.Count("token:refresh_token"), "--force-refresh refreshes")
	})

	t.Run("ten processes, one token request", func(t *testing.T) {
		args := w.getTokenArgs("disk")
		r := w.run(nil, full, append([]string{"logout"}, args...)...)
		require.Equal(t, 0, r.code, "logout: %s", r.stderr)
		before := password()
		var wg sync.WaitGroup
		results := make([]result, 10)
		for i := range results {
			wg.Add(1)
			go func() { defer wg.Done(); results[i] = w.runDirect([]string{execInfoNever}, fast, args...) }()
		}
		wg.Wait()
		tokens := map[string]bool{}
		for _, r = range results {
			require.Equal(t, 0, r.code, r.stderr)
			tokens[credentialToken(t, r.stdout)] = true
		}
		assert.Equal(t, before+1, password(), "one token request for ten processes")
		assert.Len(t, tokens, 1, "all ten print the one token")
	})

	t.Run("profiles", func(t *testing.T) {
		file := filepath.Join(w.dir, "profiles.yaml")
		settings, _ := json.Marshal(map[string]any{"profiles": map[string]any{"bob": map[string]any{
			"oidc-issuer-url": st.issuer, "oidc-client-id": confidentialClient, "grant-type": "password",
			"oidc-client-secret-file": winPath(st.secretFile), "certificate-authority": winPath(st.caFile),
			"username": users["bob"].email, "token-cache-storage": "disk",
			"token-cache-dir": winPath(filepath.Join(w.dir, "cache")),
		}}})
		require.NoError(t, os.WriteFile(file, settings, 0o600))
		env := []string{"KUBECTL_IMPERSONATE_CONFIG=" + winPath(file)}
		r := w.run(env, fast, "--profile=bob")
		require.Equal(t, 0, r.code, "a private profiles file: %s", r.stderr)
		require.NotEmpty(t, credentialToken(t, r.stdout))

		require.NoError(t, os.Chmod(file, 0o606)) // Wine: an Everyone ACE with write
		r = w.run(env, fast, "--profile=bob")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "is writable by others: icacls")
		assert.Empty(t, r.stdout, "no token")

		require.NoError(t, os.Chmod(file, 0o600))
		require.NoError(t, os.Chown(file, 65534, 65534)) // Wine: owner Anonymous
		r = w.run(env, fast, "--profile=bob")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "belongs to another user")
		assert.Empty(t, r.stdout, "no token")
	})

	t.Run("logout", func(t *testing.T) {
		args := w.getTokenArgs("keyring")
		require.Equal(t, 0, w.run(nil, fast, args...).code)
		before := password()
		require.Equal(t, 0, w.run(nil, fast, args...).code)
		assert.Equal(t, before, password(), "cached")
		r := w.run(nil, full, append([]string{"logout"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, 0, w.run(nil, fast, args...).code)
		assert.Equal(t, before+1, password(), "logged out: a new grant")
	})

	// The JavaScript client sets no KUBERNETES_EXEC_INFO: the plugin knows
	// it by its runtime, the parent process (node.exe), and lets it run
	// get-token only, also when the fast binary hands the call over.
	t.Run("JavaScript client guard", func(t *testing.T) {
		node := filepath.Join(w.dir, "node.exe")
		r := w.run(nil, node, winPath(full), "logout", "--all")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "only get-token may run that way")
		r = w.run(nil, full, "logout", "--all")
		assert.Equal(t, 0, r.code, "not under node.exe: %s", r.stderr)
		args := w.getTokenArgs("disk")
		r = w.run(nil, node, append([]string{winPath(fast)}, args...)...)
		require.Equal(t, 0, r.code, "get-token under node.exe: %s", r.stderr)
		assert.NotEmpty(t, credentialToken(t, r.stdout))
	})

	// A locked entry (it names a profile) may not set what the profile
	// does not allow: kubectl's environment, read from kubectl.exe's PEB,
	// tells the entry's variables apart from the user's.
	t.Run("locked exec entry", func(t *testing.T) {
		file := filepath.Join(w.dir, "locked.yaml")
		settings, _ := json.Marshal(map[string]any{"profiles": map[string]any{"bob": map[string]any{
			"oidc-issuer-url": st.issuer, "oidc-client-id": confidentialClient, "grant-type": "password",
			"oidc-extra-scope":        []string{"email"},
			"oidc-client-secret-file": winPath(st.secretFile), "certificate-authority": winPath(st.caFile),
			"username": users["bob"].email, "token-cache-storage": "disk",
			"token-cache-dir": winPath(filepath.Join(w.dir, "cache")),
		}}})
		require.NoError(t, os.WriteFile(file, settings, 0o600))
		env := []string{"KUBECTL_IMPERSONATE_CONFIG=" + winPath(file)}
		kc := w.kubeconfig("locked", []string{"--profile=bob"})
		r := w.run(env, w.kubectl, "--kubeconfig="+kc, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		require.Equal(t, 0, r.code, "the entry sets nothing: %s", r.stderr)
		assert.Equal(t, "oidc:"+users["bob"].email, r.stdout)

		b, err := os.ReadFile(strings.TrimPrefix(strings.ReplaceAll(kc, `\`, "/"), "Z:"))
		require.NoError(t, err)
		withEnv := strings.Replace(string(b), "      interactiveMode:", "      env: [{name: HTTPS_PROXY, value: \"http://127.0.0.1:9\"}]\n      interactiveMode:", 1)
		require.NoError(t, os.WriteFile(filepath.Join(w.dir, "locked-env.kubeconfig"), []byte(withEnv), 0o600))
		r = w.run(env, w.kubectl, "--kubeconfig="+winPath(filepath.Join(w.dir, "locked-env.kubeconfig")), "auth", "whoami")
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, "$HTTPS_PROXY")
	})

	t.Run("browser login through the default opener", func(t *testing.T) {
		args := []string{"--oidc-issuer-url=" + st.issuer, "--oidc-client-id=" + publicClient,
			"--certificate-authority=" + winPath(st.caFile), "--oidc-extra-scope=email",
			"--token-cache-storage=disk", "--token-cache-dir=" + winPath(filepath.Join(w.dir, "browser-cache")),
			"--authentication-timeout=60s"}
		before := st.proxy.Count("token:authorization_code")
		r := w.run(nil, full, append([]string{"login"}, args...)...)
		require.Equal(t, 0, r.code, "login: %s", r.stderr)
		assert.Equal(t, before+1, st.proxy.Count("token:authorization_code"))
		kc := w.kubeconfig("browser", args)
		r = w.whoami(kc)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "oidc:"+users["alice"].email, r.stdout)
	})
}
