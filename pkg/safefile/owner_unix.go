//go:build unix

package safefile

import (
	"io/fs"
	"os"
	"syscall"
)

// OwnedBySelf reports whether fi (from os.Lstat or os.Stat) belongs to the
// user running this process.
func OwnedBySelf(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Getuid()
}

// OwnedByRoot reports whether fi belongs to root: the kubelet writes a
// pod's projected service account token as root.
func OwnedByRoot(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}
