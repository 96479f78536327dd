package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is ReadRegular's error for a file over its limit.
var ErrTooLarge = errors.New("too large")

// ReadOptions are ReadRegular's checks beyond "a regular file, bounded".
type ReadOptions struct {
	// NoFollow refuses a symlink (on Windows, any reparse point: a
	// junction too) at the path's last element.
	NoFollow bool
	// Rule is what the file must be (its owner, who else may read or
	// write it), judged on the opened descriptor: the file checked is
	// the file read.
	Rule Rule
	// Check inspects the opened descriptor's own metadata further (its
	// age).
	Check func(os.FileInfo) error
}

// ReadRegular is the one read of a file someone else may have named or
// planted (profiles, kuberc, token cache entries, secret files).
//
//   - It opens without waiting on a FIFO or a terminal, and refuses what is
//     not a regular file.
//   - It judges the descriptor by opts.Rule and opts.Check, and reads at
//     most limit bytes.
//   - what names the file in errors ("profiles file"); a missing file's
//     error matches fs.ErrNotExist.
//   - The Access returned says who else may read the file (a secret file
//     others may read is warned of).
func ReadRegular(what, path string, limit int64, opts ReadOptions) ([]byte, Access, error) {
	f, err := openRead(path, opts.NoFollow)
	if err != nil {
		return nil, Access{}, fmt.Errorf("reading %s: %w", what, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, Access{}, fmt.Errorf("reading %s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, Access{}, fmt.Errorf("%s %s is not a regular file", what, path)
	}
	a, err := accessOf(f, fi)
	if err != nil && opts.Rule != NoRule {
		return nil, Access{}, fmt.Errorf("reading %s: %w", what, err)
	}
	if err := opts.Rule.Check(what, path, a, false); err != nil {
		return nil, a, err
	}
	if opts.Check != nil {
		if err := opts.Check(fi); err != nil {
			return nil, a, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, a, fmt.Errorf("reading %s: %w", what, err)
	}
	if int64(len(b)) > limit {
		return nil, a, fmt.Errorf("%s %s is larger than %d KiB: %w", what, path, limit>>10, ErrTooLarge)
	}
	return b, a, nil
}
