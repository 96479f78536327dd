//go:build (dragonfly && cgo) || (freebsd && cgo) || linux || netbsd || openbsd

package tokencache

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/environ"
)

// platformKeyringAvailable checks for a D-Bus session bus without touching
// it. godbus would otherwise try to autolaunch a bus through dbus-launch,
// which is slow and leaves a daemon behind.
func platformKeyringAvailable() error {
	if environ.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return nil
	}
	if dir := environ.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "bus")); err == nil {
			return nil
		}
	}
	return errors.New("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set) for the Secret Service")
}
