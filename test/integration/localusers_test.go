package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testkit"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/credential/settings"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/token/tokencache"
)

// The attacks of another local user need two uids: the suite runs as root
// (CI does), and the attacker runs as nobody (65534) through setpriv.
const attackerUID = "65534"

// envAttackerListen makes the test binary the attacker's listener: it
// listens on the address, says "ready", and prints "received" with the
// first line of whatever connects, for at most 30 s.
const envAttackerListen = "KI_TEST_ATTACKER_LISTEN"

func attackerListen(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("ready")
	time.AfterFunc(30*time.Second, func() { os.Exit(0) })
	for {
		c, err := l.Accept()
		if err != nil {
			return 0
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Printf("received %s\n", strings.TrimSpace(line))
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = c.Close()
	}
}

// asAnotherUser runs argv as uid 65534, or skips when this is not root.
func asAnotherUser(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if os.Getuid() != 0 || err != nil {
		t.Skip("needs root and setpriv (util-linux) to run the attacker as another uid; CI runs as root")
	}
	return exec.Command(setpriv, append([]string{"--reuid=" + attackerUID, "--regid=" + attackerUID, "--clear-groups", "--"}, argv...)...)
}

// publicCopy copies the test binary where uid 65534 may run it.
func publicCopy(t *testing.T) string {
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "ki-attacker-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	p := filepath.Join(dir, "attacker")
	require.NoError(t, os.WriteFile(p, b, 0o755))
	return p
}

// TestLoopbackRedirectAgainstAnotherUser: the browser login redirects to
// http://localhost:PORT and browsers try ::1 first. Another local user
// listening on [::1]:PORT would receive the code and the state: the login
// now stops before the browser opens, and the attacker receives nothing.
// With nobody there, a browser that reaches localhost over ::1 completes
// the login (the plugin holds [::1]:PORT and forwards it).
func TestLoopbackRedirectAgainstAnotherUser(t *testing.T) {
	e := newEnv(t)
	port := testkit.MustFreePort(t)
	args := func(browser string) []string {
		return []string{"login", "--oidc-issuer-url=" + e.idp.Issuer(), "--oidc-client-id=" + e.idp.ClientID,
			"--token-cache-storage=disk", "--token-cache-dir=" + e.cacheDir, "--listen-address=127.0.0.1:" + strconv.Itoa(port),
			"--browser-command=" + browser, "--authentication-timeout=15s"}
	}

	t.Run("another user listens on [::1]:PORT", func(t *testing.T) {
		att := asAnotherUser(t, publicCopy(t))
		att.Env = []string{envAttackerListen + "=[::1]:" + strconv.Itoa(port)}
		out, err := att.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, att.Start())
		t.Cleanup(func() { _ = att.Process.Kill(); _ = att.Wait() })
		lines := bufio.NewScanner(out)
		require.True(t, lines.Scan())
		if strings.Contains(lines.Text(), "cannot assign") {
			t.Skip("no IPv6 loopback here: browsers cannot reach ::1 either")
		}
		require.Equal(t, "ready", lines.Text())

		// The browser: curl resolving localhost to ::1, as browsers try
		// it first.
		r := e.run(nil, args(fmt.Sprintf("curl -sfL -o /dev/null --resolve localhost:%d:[::1]", port))...)
		assert.Equal(t, 1, r.code, r.stderr)
		assert.Contains(t, r.stderr, fmt.Sprintf("another program listens on [::1]:%d", port))
		assert.NotContains(t, r.stderr, "in your browser", "the URL was never shown")
		assert.Zero(t, e.idp.AuthRequests(), "no browser opened")
		_ = att.Process.Kill()
		rest, _ := io.ReadAll(out)
		assert.NotContains(t, string(rest), "received", "what reached the attacker")
	})

	t.Run("a browser that reaches localhost over ::1 completes the login", func(t *testing.T) {
		if _, err := net.Listen("tcp6", "[::1]:0"); err != nil {
			t.Skip("no IPv6 loopback here")
		}
		r := e.run(nil, args(fmt.Sprintf("curl -sfL -o /dev/null --resolve localhost:%d:[::1]", port))...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "in your browser")
		assert.Equal(t, 1, e.idp.AuthRequests())
	})
}

// TestDiskRefusesAnotherUsersEntry: another local user plants a cache
// entry in a directory of theirs that a kubeconfig names as
// --token-cache-dir (or in a shared one): get-token must not hand the
// planted token to kubectl, even as root, who may read the file.
func TestDiskRefusesAnotherUsersEntry(t *testing.T) {
	e := newEnv(t)
	parent, err := os.MkdirTemp("", "ki-shared-") // t.TempDir is 0700: uid 65534 could not enter it
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	shared := filepath.Join(parent, "shared")
	require.NoError(t, os.Mkdir(shared, 0o777))
	require.NoError(t, os.Chmod(shared, 0o777))
	dir := filepath.Join(shared, "cache")
	args := []string{"--oidc-issuer-url=" + e.idp.Issuer(), "--oidc-client-id=" + e.idp.ClientID,
		"--token-cache-storage=disk", "--token-cache-dir=" + dir}
	o, _, err := settings.ParseArgs(args, func(string) string { return "" }, func(string) {})
	require.NoError(t, err)
	b, err := (&tokencache.Entry{IDToken: "planted-by-another-user", IDTokenExpiry: time.Now().Add(time.Hour)}).Encode()
	require.NoError(t, err)
	staged := filepath.Join(shared, "staged")
	require.NoError(t, os.WriteFile(staged, b, 0o644))
	entry := filepath.Join(dir, o.Key().ID()+".json")
	plant := asAnotherUser(t, "sh", "-c", `umask 022 && mkdir "$1" && cp "$2" "$3" && chmod 600 "$3"`, "sh", dir, staged, entry)
	out, err := plant.CombinedOutput()
	require.NoError(t, err, string(out))

	for _, bin := range []string{"fast", "full"} {
		t.Run(bin, func(t *testing.T) {
			env := []string{"KUBERNETES_EXEC_INFO=" + execInfoV1Never}
			var r result
			if bin == "fast" {
				r = e.runBinary(fastBinary, env, args...)
			} else {
				r = e.run(env, append([]string{"get-token"}, args...)...)
			}
			assert.Equal(t, 1, r.code, r.stderr)
			assert.NotContains(t, r.stdout, "planted-by-another-user")
			assert.Contains(t, r.stderr, "belongs to another user")
		})
	}
}
