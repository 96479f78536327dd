package tokencache

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// DefaultLockTimeout bounds the wait for another process's login or refresh.
// A browser login can take a person a few minutes.
const DefaultLockTimeout = 5 * time.Minute

const lockRetryDelay = 20 * time.Millisecond

// Lock is a cross-process lock on one cache entry, a file next to the disk
// entries (id + ".lock"). The OS releases it when its process dies, so a
// crash never leaves it held.
type Lock struct {
	f *flock.Flock
}

// LockPath is where the lock of id lives.
func LockPath(dir, id string) string { return filepath.Join(dir, id+".lock") }

// AcquireLock waits up to timeout for the lock of id.
func AcquireLock(ctx context.Context, dir, id string, timeout time.Duration) (*Lock, error) {
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	path := LockPath(dir, id)
	f := flock.New(path, flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ok, err := f.TryLockContext(ctx, lockRetryDelay)
	if errors.Is(err, context.DeadlineExceeded) || (err == nil && !ok) {
		return nil, fmt.Errorf("another kubectl-impersonate process has held the lock %s for over %s (a login "+
			"waiting in a browser?): finish or stop it, then retry", path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("locking token cache entry %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Release unlocks; the file stays for the next process.
func (l *Lock) Release() error {
	if err := l.f.Unlock(); err != nil {
		return fmt.Errorf("unlocking token cache entry: %w", err)
	}
	return nil
}
