//go:build !unix

package safefile

import "io/fs"

// OwnedBySelf reports whether fi belongs to the user running this process:
// on this platform, file ownership is left to its ACLs.
func OwnedBySelf(fs.FileInfo) bool { return true }

// OwnedByRoot reports whether fi belongs to root: never on this platform.
func OwnedByRoot(fs.FileInfo) bool { return false }
