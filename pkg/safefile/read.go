package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is ReadRegular's error for a file over its limit.
var ErrTooLarge = errors.New("too large")

// ReadOptions are ReadRegular's checks beyond "a regular file, bounded".
type ReadOptions struct {
	// NoFollow refuses a symlink at the path's last element (Unix).
	NoFollow bool
	// Check inspects the opened descriptor's own metadata (so the file
	// checked is the file read): ownership, mode.
	Check func(os.FileInfo) error
}

// ReadRegular is the one read of a file someone else may have named or
// planted (profiles, kuberc, token cache entries, secret files): it opens
// without waiting on a FIFO or a terminal, refuses what is not a regular
// file, runs opts.Check on the descriptor, and reads at most limit bytes.
// what names the file in errors ("profiles file"); a missing file's error
// matches fs.ErrNotExist.
func ReadRegular(what, path string, limit int64, opts ReadOptions) ([]byte, os.FileInfo, error) {
	f, err := openRead(path, opts.NoFollow)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", what, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("%s %s is not a regular file", what, path)
	}
	if opts.Check != nil {
		if err := opts.Check(fi); err != nil {
			return nil, fi, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fi, fmt.Errorf("reading %s: %w", what, err)
	}
	if int64(len(b)) > limit {
		return nil, fi, fmt.Errorf("%s %s is larger than %d KiB: %w", what, path, limit>>10, ErrTooLarge)
	}
	return b, fi, nil
}

// CheckPrivate refuses a file or directory that another user owns or may
// write (group or world write permission): what it holds would then be
// theirs to choose. what names it in the error.
func CheckPrivate(what, path string, fi fs.FileInfo) error {
	if !OwnedBySelf(fi) {
		return fmt.Errorf("%s %s belongs to another user: refusing to use it (use one of your own)", what, path)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s %s is writable by others: chmod go-w %s", what, path, path)
	}
	return nil
}

// CheckIssued refuses a file that another user than this one or root owns,
// or that others may write: a credential someone issues into it (the
// kubelet's projected token, a CI job's) must not be someone else's to
// swap. what names it in the error.
func CheckIssued(what, path string, fi fs.FileInfo) error {
	if !OwnedBySelf(fi) && !OwnedByRoot(fi) {
		return fmt.Errorf("%s %s belongs to another user: refusing to use it (use one of your own, or root's)", what, path)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s %s is writable by others: chmod go-w %s", what, path, path)
	}
	return nil
}
