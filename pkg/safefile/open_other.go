//go:build !unix

package safefile

import "os"

// openRead opens path for reading (ownership is left to the platform's
// ACLs here).
func openRead(path string, _ bool) (*os.File, error) { return os.Open(path) }
