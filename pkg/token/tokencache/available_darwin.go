//go:build darwin

package tokencache

import (
	"fmt"
	"os"
)

// securityCommand is the program go-keyring runs for every keychain call
// (the secret on its stdin, as "security -i" reads it).
const securityCommand = "/usr/bin/security"

// platformKeyringAvailable checks that the keychain's command is there,
// without running it (a locked keychain is refused by security at once,
// "User interaction is not allowed", as over SSH: no prompt is waited on).
func platformKeyringAvailable() error {
	if fi, err := os.Stat(securityCommand); err != nil || fi.IsDir() {
		return fmt.Errorf("no %s for the macOS keychain", securityCommand)
	}
	return nil
}
