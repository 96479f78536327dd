//go:build e2e

// The OS keyring absent, locked and hung.

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenario 7: no D-Bus session. auto falls back to disk with a notice;
// keyring fails with a clear error within 3 seconds.
func TestKeyringAbsent(t *testing.T) {
	onFirstVersionOnly(t)
	alice := newPerson(t, "alice", st.api["structured"])
	noBus := t.TempDir()
	var env []string
	for _, kv := range alice.env {
		if !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			env = append(env, kv)
		}
	}
	alice.env = append(env, "XDG_RUNTIME_DIR="+noBus)

	r := alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the OS keyring cannot be used")
	assert.Contains(t, r.stderr, "token cached on disk")
	assert.Len(t, alice.diskEntries(), 1)

	// auto, cached: kubectl gets the disk entry without waiting on a keyring.
	r = alice.kubectl("get", "pods", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Less(t, r.elapsed, 1500*time.Millisecond, "auto without a D-Bus session: at once, not after the 2 s keyring timeout")

	r = alice.plugin([]string{execInfoNever}, "get-token", "--oidc-issuer-url="+st.issuer, "--oidc-client-id="+publicClient,
		"--token-cache-storage=keyring", "--certificate-authority="+st.caFile) // kubelogin's name of --oidc-certificate-authority
	assert.Equal(t, 1, r.code)
	assert.Less(t, r.elapsed, 3*time.Second)
	assert.Contains(t, r.stderr, "OS keyring unavailable")
	assert.Contains(t, r.stderr, "--token-cache-storage=auto")
	assert.Empty(t, r.stdout)
}

// Keyring faults with a real gnome-keyring, in a D-Bus session of the
// test's own (locking the shared one would stop the other tests): a robot's
// token cached in the keyring; then the collection locked (the unlock
// prompt cannot open here and fails), then the daemon hung (SIGSTOP: no
// answer at all). Each kubectl call gets its answer within 3 s: a clear
// error with --token-cache-storage=keyring, a fallback to disk with auto.
func TestKeyringLockedAndHung(t *testing.T) {
	onFirstVersionOnly(t)
	home, runDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(runDir, 0o700))
	ctx, cancel := context.WithCancel(context.Background())
	session := exec.CommandContext(ctx, "dbus-run-session", "--", "bash", "-c",
		`eval "$(printf locked-test | gnome-keyring-daemon --unlock --components=secrets)" && echo "$DBUS_SESSION_BUS_ADDRESS" && exec sleep 300`)
	session.Env = []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + runDir, "PATH=" + os.Getenv("PATH")}
	session.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := session.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, session.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-session.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-session.Process.Pid, syscall.SIGKILL)
		cancel()
		_ = session.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the private D-Bus session starts")
	bus := strings.TrimSpace(line)

	secret := filepath.Join(t.TempDir(), "robot.secret")
	require.NoError(t, os.WriteFile(secret, []byte("robot-secret\n"), 0o600))
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + runDir, "PATH=" + os.Getenv("PATH"), "DBUS_SESSION_BUS_ADDRESS=" + bus,
		execInfoNever}
	args := []string{"--oidc-issuer-url=" + st.keycloak.Issuer(), "--oidc-client-id=robot", "--grant-type=client-credentials",
		"--oidc-client-secret-file=" + secret, "--oidc-certificate-authority=" + st.caFile, "--token-cache-dir=" + filepath.Join(home, "cache")}
	fast := filepath.Join(filepath.Dir(st.ki), "kubectl-impersonate-get_token")
	getToken := func(storage string) result {
		t.Helper()
		return run(t, env, false, append([]string{fast, "--token-cache-storage=" + storage}, args...)...)
	}

	// login is a person's command: no KUBERNETES_EXEC_INFO (the last of env),
	// under which only get-token runs.
	r := run(t, env[:len(env)-1], false, append([]string{st.ki, "login", "--token-cache-storage=keyring"}, args...)...)
	require.Equal(t, 0, r.code, "login into the private keyring: %s", r.stderr)
	r = getToken("keyring")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"token":`, "served from the unlocked keyring")
	calls := st.keycloak.Calls("client_credentials")

	lock := exec.Command("dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
		"org.freedesktop.Secret.Service.Lock", "array:objpath:/org/freedesktop/secrets/collection/login")
	lock.Env = env
	b, err := lock.CombinedOutput()
	require.NoError(t, err, "locking the collection: %s", b)

	var figures []string
	check := func(fault string) result {
		r := getToken("keyring")
		assert.NotEqual(t, 0, r.code, "%s, keyring: fails", fault)
		assert.Less(t, r.elapsed, 3*time.Second, "%s, keyring: answers within 3 s", fault)
		assert.Contains(t, r.stderr, "OS keyring unavailable", fault)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "%s: one line: %q", fault, r.stderr)
		assert.Empty(t, r.stdout)
		r2 := getToken("auto")
		assert.Equal(t, 0, r2.code, "%s, auto: falls back to disk: %s", fault, r2.stderr)
		assert.Less(t, r2.elapsed, 3*time.Second, "%s, auto: answers within 3 s", fault)
		assert.Contains(t, r2.stderr, "token cached on disk", fault)
		assert.Contains(t, r2.stdout, `"token":`)
		figures = append(figures, fmt.Sprintf("%s: keyring error in %s, auto fallback in %s", fault, r.elapsed.Round(time.Millisecond), r2.elapsed.Round(time.Millisecond)))
		return r
	}
	check("locked collection")
	assert.Equal(t, calls+1, st.keycloak.Calls("client_credentials"), "auto logged in once more and cached on disk")

	// The daemon stops answering at all.
	daemons := findProcesses(t, "gnome-keyring-daemon", "XDG_RUNTIME_DIR="+runDir)
	require.NotEmpty(t, daemons, "the private gnome-keyring-daemon")
	for _, pid := range daemons {
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	}
	require.NoError(t, os.RemoveAll(filepath.Join(home, "cache")), "no disk entry: auto must log in again")
	hung := check("hung daemon")
	// The wait is the keyring timeout, 2 s (docs/troubleshooting.md), once.
	assert.GreaterOrEqual(t, hung.elapsed, 2*time.Second, "a hung daemon is waited for")
	assert.Contains(t, hung.stderr, "did not answer within 2s")
	for _, pid := range daemons {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	t.Log(strings.Join(figures, "; "))
}
