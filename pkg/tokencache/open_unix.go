//go:build unix

package tokencache

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading, refusing a symlink at its last
// element, so that the file checked is the file read, and without waiting
// on a FIFO.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
