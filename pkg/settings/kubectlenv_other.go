//go:build !linux

package settings

import "os"

// readKubectlEnv: kubectl's own environment is not read on this platform,
// so the exec entry's environment variables are not told apart from
// kubectl's (docs/security.md says so).
func readKubectlEnv() (map[string]string, bool) { return nil, false }

// openNonBlocking opens path for reading.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
