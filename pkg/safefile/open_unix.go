//go:build unix

package safefile

import (
	"os"
	"syscall"
)

// openRead opens path for reading without waiting on a FIFO or a terminal
// (nor making a terminal ours) and, with noFollow, refusing a symlink at
// its last element.
func openRead(path string, noFollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0)
}
