//go:build !unix

package tokencache

import "os"

// openNoFollow opens path for reading (the ownership checks are left to the
// platform's ACLs here).
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
