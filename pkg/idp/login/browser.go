package login

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
)

// openBrowser starts the user's browser on url without waiting for it. Its
// output goes to stderr: stdout belongs to kubectl when this runs as a
// credential plugin.
func openBrowser(command, url string, stderr io.Writer) error {
	var argv []string
	switch {
	case command != "":
		argv = append(strings.Fields(command), url)
	case runtime.GOOS == "darwin":
		argv = []string{"open", url}
	case runtime.GOOS == "windows":
		argv = []string{"rundll32", "url.dll,FileProtocolHandler", url}
	default:
		argv = []string{"xdg-open", url}
	}
	// Not CommandContext: the browser must outlive the login.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening the browser with %s: %w", argv[0], err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// headless tells whether no browser can be shown to the person logging in,
// and why: over SSH (SSH_CONNECTION or SSH_TTY: a browser would open on the
// remote machine's screen, if any), or on a Unix without a display (neither
// DISPLAY nor WAYLAND_DISPLAY). A browser command (or a test's opener)
// given explicitly says otherwise.
func headless(getenv func(string) string, goos string, browserGiven bool) (bool, string) {
	switch {
	case browserGiven:
		return false, ""
	case getenv("SSH_CONNECTION") != "" || getenv("SSH_TTY") != "":
		return true, "over SSH"
	case goos != "darwin" && goos != "windows" && getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "":
		return true, "no display (DISPLAY and WAYLAND_DISPLAY unset)"
	}
	return false, ""
}
